//! Test-only helpers that more than one crate's tests (and the bench) need,
//! so that each is written once. A dev-dependency of the tests and a
//! dependency of the unpublished bench only: nothing here ships.

#![forbid(unsafe_code)]

pub mod catalog;
pub mod pg;

use proptest::test_runner::{Config, RngSeed};

/// Whether the long test run was asked for (`cargo xtask test --long` sets
/// `TOOLHOST_LONG_TESTS=1`).
pub fn long_tests() -> bool {
    std::env::var_os("TOOLHOST_LONG_TESTS").is_some_and(|v| v == "1")
}

/// The property-test config every crate uses: in CI `ci_cases` cases from
/// the fixed `seed` (a failure reproduces exactly, and nothing is written
/// to a persistence file); in a long run twenty times as many from a random
/// seed.
pub fn proptest_config(ci_cases: u32, seed: u64) -> Config {
    let long = long_tests();
    Config {
        cases: if long { ci_cases * 20 } else { ci_cases },
        rng_seed: if long {
            RngSeed::Random
        } else {
            RngSeed::Fixed(seed)
        },
        failure_persistence: None,
        ..Config::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_runs_are_fixed_and_bounded() {
        if long_tests() {
            let config = proptest_config(10, 7);
            assert_eq!(config.cases, 200);
            assert!(matches!(config.rng_seed, RngSeed::Random));
        } else {
            let config = proptest_config(10, 7);
            assert_eq!(config.cases, 10);
            assert!(matches!(config.rng_seed, RngSeed::Fixed(7)));
            assert!(config.failure_persistence.is_none());
        }
    }
}
