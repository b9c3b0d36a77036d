//! The rate-limit stage: `[[limits]]` token buckets, checked right after a
//! call is resolved and authorized (its grant, toolset and pin) and before
//! anything else is done for it: a refused call is not validated, asks no
//! approver, runs no hook, claims no idempotency key and writes no intent
//! record. It is answered `rate_limited` (retryable, with `retry_after_ms`)
//! and recorded like every other call.
//!
//! Buckets are kept per host, in memory. A fleet sharing `state_url` does
//! not share them: each host of N admits up to N times a limit. Sharing
//! through PostgreSQL would put a database round trip (hundreds of
//! microseconds at best) on every limited call, far past the 20 µs this
//! stage may cost; `toolhost check` and the docs say the limits are per
//! host.
//!
//! # Why not `governor`
//!
//! A call may match several limits (a per-principal one and a per-tool
//! one); it must take a token from each only when *every* one has a token,
//! or a refused call would still drain the buckets that admitted it.
//! `governor`'s limiters only test-and-take, one bucket at a time, with no
//! way to look first. The bucket here is the textbook one (tokens refill
//! continuously at `per_second` up to `burst`; a call takes one), a few
//! lines of arithmetic, checked against its math in the tests below.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost_core::{Status, ToolResult};

use crate::governance::limits::Limit;
use crate::tool::MountedTool;

/// The error code of a call refused by a rate limit.
pub const RATE_LIMITED: &str = "rate_limited";

/// At most this many buckets are kept; past it, full buckets (which are the
/// same as no bucket) are dropped, so principals that come and go cannot
/// grow the table without bound.
const MAX_BUCKETS: usize = 10_000;

/// One bucket: tokens as of `at`.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// The tokens at `now`: refilled at `rate` per second up to `burst`.
    fn refilled(self, now: Instant, rate: f64, burst: f64) -> f64 {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        (self.tokens + elapsed * rate).min(burst)
    }
}

/// Why a call was refused: the limit with the longest wait.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    /// The limit's index in the plan.
    pub index: usize,
    /// How long until it has a token again.
    pub retry_after: Duration,
}

/// Every limit's buckets, by (limit index, principal).
#[derive(Default)]
pub struct RateLimits {
    buckets: Mutex<HashMap<(usize, String), Bucket>>,
}

impl RateLimits {
    /// Takes a token from every limit in `applying` (indexes into
    /// `limits`) for `principal` at `now`, or none of them: `Err` names the
    /// limit whose wait is longest.
    pub fn take(
        &self,
        limits: &[Limit],
        applying: &[usize],
        principal: &str,
        now: Instant,
    ) -> Result<(), Refused> {
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        let mut refused: Option<Refused> = None;
        let mut levels = Vec::with_capacity(applying.len());
        for &index in applying {
            let limit = &limits[index];
            let burst = f64::from(limit.burst);
            let key = (index, principal.to_string());
            let tokens = buckets
                .get(&key)
                .map_or(burst, |b| b.refilled(now, limit.per_second, burst));
            if tokens < 1.0 {
                let wait = Duration::from_secs_f64((1.0 - tokens) / limit.per_second);
                if refused.as_ref().is_none_or(|r| wait > r.retry_after) {
                    refused = Some(Refused {
                        index,
                        retry_after: wait,
                    });
                }
            }
            levels.push((key, tokens));
        }
        if let Some(refused) = refused {
            return Err(refused);
        }
        if buckets.len() + levels.len() > MAX_BUCKETS {
            buckets.retain(|(index, _), b| {
                let limit = &limits[*index];
                b.refilled(now, limit.per_second, f64::from(limit.burst)) < f64::from(limit.burst)
            });
        }
        for (key, tokens) in levels {
            buckets.insert(
                key,
                Bucket {
                    tokens: tokens - 1.0,
                    at: now,
                },
            );
        }
        Ok(())
    }
}

/// The stage: `Ok` when no limit applies or every applying one has a
/// token (taken), else the `rate_limited` answer.
pub fn check(
    state: &RateLimits,
    limits: &[Limit],
    principal: &str,
    tool: &MountedTool,
    id: &str,
) -> Result<(), ToolResult> {
    if limits.is_empty() {
        return Ok(());
    }
    let applying: Vec<usize> = (0..limits.len())
        .filter(|&i| limits[i].applies(principal, tool))
        .collect();
    if applying.is_empty() {
        return Ok(());
    }
    let Refused { index, retry_after } = match state.take(limits, &applying, principal, Instant::now()) {
        Ok(()) => return Ok(()),
        Err(refused) => refused,
    };
    let limit = &limits[index];
    // Rounded up: retrying after exactly this long finds a token.
    let retry_after_ms = retry_after.as_micros().div_ceil(1000).max(1) as u64;
    let mut refusal = ToolResult::failure(
        id,
        Status::Error,
        RATE_LIMITED,
        format!(
            "'{}' was not run: rate limit '{}' allows {} call(s) per second (burst {}) for '{}'; \
             retry after {} ms",
            tool.name(),
            limit.id,
            limit.per_second,
            limit.burst,
            principal,
            retry_after_ms
        ),
    )
    .with_details(json!({
        "limit": limit.id,
        "retry_after_ms": retry_after_ms,
        "per_second": limit.per_second,
        "burst": limit.burst,
        "principal": principal,
    }));
    if let Some(error) = refusal.error.as_mut() {
        error.retryable = true;
    }
    Err(refusal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::governance::limits::{parse, LimitEntry};

    fn limits(specs: &[(f64, u32)]) -> Vec<Limit> {
        let entries: Vec<LimitEntry> = specs
            .iter()
            .map(|&(per_second, burst)| LimitEntry {
                name: None,
                principal: None,
                tools: Vec::new(),
                per_second,
                burst,
            })
            .collect();
        parse(&entries).expect("valid limits")
    }

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_bucket_admits_its_burst_then_one_call_per_refill() {
        // 2 per second, burst 3: three calls at t=0, the fourth waits 500 ms.
        let l = limits(&[(2.0, 3)]);
        let state = RateLimits::default();
        let t0 = Instant::now();
        for _ in 0..3 {
            state.take(&l, &[0], "a", t0).expect("within the burst");
        }
        let refused = state.take(&l, &[0], "a", t0).expect_err("past the burst");
        assert_eq!(refused.retry_after, 500 * MS);
        // Just before the refill: still refused, with the rest of the wait.
        let early = state.take(&l, &[0], "a", t0 + 400 * MS).expect_err("not yet");
        assert!((early.retry_after.as_secs_f64() - 0.1).abs() < 1e-9, "{early:?}");
        state
            .take(&l, &[0], "a", t0 + 500 * MS)
            .expect("one token refilled");
        state
            .take(&l, &[0], "a", t0 + 500 * MS)
            .expect_err("and only one");
        // After a long pause the bucket is full again, never fuller.
        let later = t0 + Duration::from_secs(60);
        for _ in 0..3 {
            state.take(&l, &[0], "a", later).expect("full bucket");
        }
        state
            .take(&l, &[0], "a", later)
            .expect_err("burst caps the refill");
    }

    #[test]
    fn the_admitted_rate_matches_per_second_over_time() {
        // Calls every 10 ms for 10 s at 5 per second, burst 2: the bucket
        // admits burst + rate × time, to within one call.
        let l = limits(&[(5.0, 2)]);
        let state = RateLimits::default();
        let t0 = Instant::now();
        let admitted = (0..1000)
            .filter(|i| state.take(&l, &[0], "a", t0 + 10 * MS * *i).is_ok())
            .count();
        let expected = 2.0 + 5.0 * 9.99;
        assert!(
            (admitted as f64 - expected).abs() <= 1.0,
            "{admitted} vs {expected}"
        );
    }

    #[test]
    fn a_call_takes_from_every_applying_bucket_or_from_none() {
        let l = limits(&[(1.0, 5), (1.0, 1)]);
        let state = RateLimits::default();
        let t0 = Instant::now();
        state.take(&l, &[0, 1], "a", t0).expect("both have tokens");
        let refused = state.take(&l, &[0, 1], "a", t0).expect_err("the second is empty");
        assert_eq!(refused.index, 1);
        // The refused call took nothing from the first bucket: four remain.
        for _ in 0..4 {
            state.take(&l, &[0], "a", t0).expect("untouched by the refusal");
        }
        state.take(&l, &[0], "a", t0).expect_err("now empty");
    }

    #[test]
    fn principals_have_their_own_buckets() {
        let l = limits(&[(1.0, 1)]);
        let state = RateLimits::default();
        let t0 = Instant::now();
        state.take(&l, &[0], "alice", t0).expect("alice's first");
        state.take(&l, &[0], "alice", t0).expect_err("alice's second");
        state.take(&l, &[0], "bob", t0).expect("bob's own bucket");
    }

    #[test]
    fn bad_entries_are_refused() {
        let bad = |per_second: f64, burst: u32| {
            parse(&[LimitEntry {
                name: None,
                principal: None,
                tools: vec!["[".into()],
                per_second,
                burst,
            }])
            .expect_err("invalid")
            .to_string()
        };
        assert!(bad(0.0, 1).contains("per_second must be a positive"));
        assert!(bad(f64::NAN, 1).contains("per_second"));
        assert!(bad(1.0, 0).contains("burst must be at least 1"));
        assert!(bad(1.0, 1).contains("tools:"));
    }
}
