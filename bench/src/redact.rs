//! Output redaction (issue #16, item 6): the cost per KiB of output of the
//! guardrail every result passes, on text without secrets (the common case:
//! one scan, nothing replaced) and with one credential in every KiB.

use std::collections::BTreeMap;

use toolhost::governance::redact::{RedactSection, Redactor};

use crate::report::{Bench, Stats};

/// 64 KiB of log-like lines.
const KIB: usize = 64;

pub fn run(b: &mut Bench) -> anyhow::Result<()> {
    // The host's own environment plus three secret-named variables, as a
    // host with a few tokens set would have.
    let env = std::env::vars().chain([
        (
            "BENCH_GITHUB_TOKEN".to_string(),
            "bench-github-token-value-0001".to_string(),
        ),
        (
            "BENCH_DB_PASSWORD".to_string(),
            "bench-db-password-value-0002".to_string(),
        ),
        (
            "BENCH_API_KEY".to_string(),
            "bench-api-key-value-0003".to_string(),
        ),
    ]);
    let redactor = Redactor::new(&RedactSection::default(), env)
        .map_err(anyhow::Error::msg)?
        .ok_or_else(|| anyhow::anyhow!("redaction is on by default"))?;
    let line = "2026-11-23T12:00:00Z INFO request served path=/api/v1/items status=200 bytes=5120 ms=12\n";
    let mut clean = String::new();
    while clean.len() < KIB * 1024 {
        clean.push_str(line);
    }
    let secret = format!("token=ghp_{} ", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8");
    let mut dirty = String::new();
    while dirty.len() < KIB * 1024 {
        let start = dirty.len();
        while dirty.len() - start < 1024 - secret.len() {
            dirty.push_str(line);
        }
        dirty.push_str(&secret);
    }
    for (name, text, expect) in [("no secrets", &clean, 0u64), ("one secret per KiB", &dirty, 1)] {
        let kib = (text.len() / 1024).max(1) as u32;
        let stats = b.time(3, b.n(200), || {
            let mut counts = BTreeMap::new();
            let out = redactor.redact_str(text, &mut counts);
            assert_eq!(out.is_some(), expect > 0);
        });
        let per_kib = Stats {
            median: stats.median / kib,
            p10: stats.p10 / kib,
            p90: stats.p90 / kib,
            samples: stats.samples,
        };
        b.row(
            "redact",
            format!("redaction per KiB of output, {name} ({kib} KiB text)"),
            per_kib,
            None,
        );
    }
    Ok(())
}
