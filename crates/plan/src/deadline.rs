//! A call's time bounds, and the clock its progress reports move.
//!
//! A call has up to two bounds:
//! - its **timeout** (`[policy.tools.NAME] timeout_secs`, else the tool's
//!   spec, else `[host] default_timeout_secs`), or none (`"none"`);
//! - a **hard cap** on its whole run (`max_duration_secs`).
//!
//! Without a hard cap in the plan, the timeout is a fixed deadline counted
//! from the call's start, as it always was. Once the plan names a hard cap
//! for the tool (a number of seconds, or `"none"` for no cap), the timeout
//! becomes an *inactivity* timeout: each progress report the tool sends
//! (in the host, from an isolated worker, or from a mounted MCP server)
//! starts it again, and the hard cap bounds the whole. Opting in per tool
//! keeps every existing plan's deadline where it was: tools that report
//! progress as a heartbeat (bash's every 2 s) would otherwise never time
//! out.
//!
//! A progress report only stores a timestamp ([`CallClock::touch`]); the
//! watchdog reads the clock when the deadline it knew comes due and, if the
//! call was active meanwhile, sleeps again until the moved deadline. A call
//! that reports progress many times a second costs no wake-up.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// What bounds one call in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// The timeout; `None`: the call has none (cancel and session end
    /// still stop it).
    pub timeout: Option<Duration>,
    /// Whether progress starts the timeout again (an inactivity timeout).
    pub extends: bool,
    /// The most the whole call may take, progress or not.
    pub hard_cap: Option<Duration>,
}

impl Bounds {
    /// A fixed deadline `timeout` after the start (the default).
    pub fn fixed(timeout: Duration) -> Bounds {
        Bounds {
            timeout: Some(timeout),
            extends: false,
            hard_cap: None,
        }
    }

    /// The longest the call can run, if anything bounds it whatever the
    /// tool reports.
    pub fn total(&self) -> Option<Duration> {
        match (self.extends, self.timeout, self.hard_cap) {
            (false, Some(t), Some(c)) => Some(t.min(c)),
            (false, Some(t), None) => Some(t),
            (_, _, cap) => cap,
        }
    }

    /// The timeout a tool is told it has at its start (the request's
    /// `deadline_ms`).
    pub fn initial(&self) -> Option<Duration> {
        match (self.timeout, self.hard_cap) {
            (Some(t), Some(c)) => Some(t.min(c)),
            (t, c) => t.or(c),
        }
    }
}

/// Which bound ended a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// The fixed timeout, counted from the start.
    Timeout,
    /// The inactivity timeout: no progress for that long.
    Inactivity,
    /// The hard cap (`max_duration_secs`).
    HardCap,
}

impl Bound {
    /// The name in errors and audit records.
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Timeout => "timeout",
            Bound::Inactivity => "inactivity",
            Bound::HardCap => "max_duration",
        }
    }
}

/// A bound that fired: which, its length, and how long the call had run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fired {
    /// Which bound.
    pub bound: Bound,
    /// Its length.
    pub limit: Duration,
    /// The call's run time when it fired.
    pub after: Duration,
}

impl Fired {
    /// `error.details` of the timeout answer (and the audit record's
    /// `timeout`).
    pub fn details(&self) -> serde_json::Value {
        serde_json::json!({
            "bound": self.bound.as_str(),
            "limit_ms": self.limit.as_millis() as u64,
            "after_ms": self.after.as_millis() as u64,
        })
    }

    /// What the timeout answer says happened.
    pub fn describe(&self) -> String {
        let (limit, after) = (self.limit.as_secs_f64(), self.after.as_secs_f64());
        match self.bound {
            Bound::Timeout => format!("timed out after {limit}s"),
            Bound::Inactivity => format!(
                "reported no progress for {limit}s, its inactivity timeout, after running {after:.1}s"
            ),
            Bound::HardCap => format!("reached its hard cap of {limit}s (max_duration_secs)"),
        }
    }
}

/// One call's clock: when it started, when it last reported progress, and
/// which bound fired, once one did.
#[derive(Debug)]
pub struct CallClock {
    started: Instant,
    bounds: Bounds,
    /// Nanoseconds from `started` to the last progress report.
    active_ns: AtomicU64,
    fired: OnceLock<Fired>,
}

impl CallClock {
    /// A clock starting now.
    pub fn start(bounds: Bounds) -> CallClock {
        CallClock {
            started: Instant::now(),
            bounds,
            active_ns: AtomicU64::new(0),
            fired: OnceLock::new(),
        }
    }

    /// The call's bounds.
    pub fn bounds(&self) -> &Bounds {
        &self.bounds
    }

    /// Notes activity (a progress report); moves an inactivity deadline.
    pub fn touch(&self) {
        if self.bounds.extends {
            let ns = u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.active_ns.fetch_max(ns, Ordering::Relaxed);
        }
    }

    /// The deadline now, and the bound it belongs to; `None` when nothing
    /// bounds the call.
    pub fn deadline(&self) -> Option<(Instant, Bound)> {
        let b = &self.bounds;
        let timeout = b.timeout.map(|t| {
            if b.extends {
                let active = Duration::from_nanos(self.active_ns.load(Ordering::Relaxed));
                (self.started + active + t, Bound::Inactivity)
            } else {
                (self.started + t, Bound::Timeout)
            }
        });
        let cap = b.hard_cap.map(|c| (self.started + c, Bound::HardCap));
        match (timeout, cap) {
            (Some(t), Some(c)) => Some(if c.0 <= t.0 { c } else { t }),
            (t, c) => t.or(c),
        }
    }

    /// For the watchdog, at `now`: `Ok(next)` when the call may run on (until
    /// `next`, if anything bounds it), or `Err` with the bound that fired,
    /// which is remembered for the call's answer.
    pub fn check(&self, now: Instant) -> Result<Option<Instant>, Fired> {
        match self.deadline() {
            Some((at, _)) if at > now => Ok(Some(at)),
            None => Ok(None),
            Some((_, bound)) => {
                let limit = match bound {
                    Bound::HardCap => self.bounds.hard_cap,
                    _ => self.bounds.timeout,
                }
                .unwrap_or_default();
                let fired = Fired {
                    bound,
                    limit,
                    after: now.saturating_duration_since(self.started),
                };
                Err(*self.fired.get_or_init(|| fired))
            }
        }
    }

    /// The bound that fired, if one did.
    pub fn fired(&self) -> Option<Fired> {
        self.fired.get().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_fixed_timeout_ignores_progress() {
        let clock = CallClock::start(Bounds::fixed(100 * MS));
        let first = clock.deadline().expect("bounded");
        clock.touch();
        assert_eq!(clock.deadline(), Some(first));
        assert_eq!(first.1, Bound::Timeout);
    }

    #[test]
    fn progress_moves_an_inactivity_deadline_up_to_the_hard_cap() {
        let bounds = Bounds {
            timeout: Some(100 * MS),
            extends: true,
            hard_cap: Some(150 * MS),
        };
        let clock = CallClock::start(bounds);
        let (first, bound) = clock.deadline().expect("bounded");
        assert_eq!(bound, Bound::Inactivity);
        std::thread::sleep(30 * MS);
        clock.touch();
        let (moved, _) = clock.deadline().expect("bounded");
        assert!(moved > first, "progress moves the deadline");
        std::thread::sleep(30 * MS);
        clock.touch();
        // 60 ms + 100 ms is past the cap at 150 ms.
        assert_eq!(clock.deadline().expect("bounded").1, Bound::HardCap);
        let fired = clock.check(clock.started + 150 * MS).expect_err("the cap fires");
        assert_eq!(fired.bound, Bound::HardCap);
        assert_eq!(fired.limit, 150 * MS);
        assert_eq!(clock.fired(), Some(fired));
    }

    #[test]
    fn no_timeout_and_no_cap_is_unbounded() {
        let clock = CallClock::start(Bounds {
            timeout: None,
            extends: true,
            hard_cap: None,
        });
        assert_eq!(clock.deadline(), None);
        assert_eq!(
            clock.check(Instant::now() + Duration::from_secs(86_400)),
            Ok(None)
        );
        assert_eq!(clock.bounds().total(), None);
    }

    #[test]
    fn totals_and_initial_deadlines() {
        let s = Duration::from_secs;
        assert_eq!(Bounds::fixed(s(5)).total(), Some(s(5)));
        let inactivity = Bounds {
            timeout: Some(s(5)),
            extends: true,
            hard_cap: Some(s(60)),
        };
        assert_eq!(inactivity.total(), Some(s(60)));
        assert_eq!(inactivity.initial(), Some(s(5)));
        let uncapped = Bounds {
            hard_cap: None,
            ..inactivity
        };
        assert_eq!(uncapped.total(), None);
    }
}
