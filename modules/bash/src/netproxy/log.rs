//! Where the proxy's decisions go: a refusal is a warning in the host's
//! log naming the host, port and reason, and a `bash:network_refused`
//! event; allowed connections are logged at debug level. Refusals are
//! rate-limited (a command refused in a loop must not flood the log):
//! at most [`REFUSALS_PER_SECOND`] are logged and emitted in any one
//! second, module-wide; the rest are counted, and one warning sums them up
//! when the second is over (at the next report) or the command ends.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use toolhost_core::{Coordinator, Level};

use super::{Decision, Report, Reporter, Target};

/// The event emitted for every refused request that is logged. Payload:
/// `{"protocol", "host", "port", "refused": code, "detail"}`.
pub const REFUSED_EVENT: &str = "bash:network_refused";

/// Refusals logged (and emitted) in one second at most.
pub const REFUSALS_PER_SECOND: u32 = 10;

/// Counts refusals per one-second window.
#[derive(Debug)]
struct Limiter {
    window: Instant,
    logged: u32,
    left_out: u64,
}

impl Limiter {
    fn new(now: Instant) -> Limiter {
        Limiter {
            window: now,
            logged: 0,
            left_out: 0,
        }
    }

    /// Starts a new window when the current one is over: how many
    /// refusals the ended window left out.
    fn roll(&mut self, now: Instant) -> u64 {
        if now.duration_since(self.window) < Duration::from_secs(1) {
            return 0;
        }
        self.window = now;
        self.logged = 0;
        std::mem::take(&mut self.left_out)
    }

    /// Whether to log one more refusal now.
    fn admit(&mut self) -> bool {
        if self.logged < REFUSALS_PER_SECOND {
            self.logged += 1;
            true
        } else {
            self.left_out += 1;
            false
        }
    }

    /// Everything left out so far (the window stays).
    fn flush(&mut self) -> u64 {
        std::mem::take(&mut self.left_out)
    }
}

/// A reporter that logs and emits through `coordinator`.
pub fn reporter(coordinator: Coordinator) -> Reporter {
    let limiter = Mutex::new(Limiter::new(Instant::now()));
    Arc::new(move |report: &Report<'_>| {
        let mut limiter = limiter.lock().unwrap_or_else(PoisonError::into_inner);
        let left_out = match report {
            Report::CallEnded => limiter.flush(),
            Report::Decision(_) => limiter.roll(Instant::now()),
        };
        if left_out > 0 {
            coordinator.log(
                Level::Warn,
                format!(
                    "bash: network: {left_out} more refused connections not logged (at most {REFUSALS_PER_SECOND} \
                     a second are)"
                ),
            );
        }
        let Report::Decision(d) = report else { return };
        if d.refused.is_some() && !limiter.admit() {
            return;
        }
        drop(limiter);
        decision(&coordinator, d);
    })
}

fn decision(coordinator: &Coordinator, d: &Decision<'_>) {
    match (d.refused, d.target) {
        (None, Target::Named { host, port }) => coordinator.log(
            Level::Debug,
            format!("bash: network: {} {host}:{port} allowed", d.protocol),
        ),
        (None, Target::Unread) => {}
        (Some(refusal), Target::Unread) => coordinator.log(
            Level::Warn,
            format!(
                "bash: network: refused a connection on accept ({}: {})",
                refusal.code(),
                match refusal {
                    super::Refusal::Busy => format!("{} open in the module", super::MAX_LIVE_CONNECTIONS),
                    _ => format!("{} open for this command", super::MAX_CONNECTIONS),
                }
            ),
        ),
        (Some(refusal), Target::Named { host, port }) => {
            coordinator.log(
                Level::Warn,
                format!(
                    "bash: network: refused {} {host}:{port} ({})",
                    d.protocol,
                    refusal.code()
                ),
            );
            coordinator.emit(
                REFUSED_EVENT,
                &serde_json::json!({
                    "protocol": d.protocol,
                    "host": host,
                    "port": port,
                    "refused": refusal.code(),
                    "detail": format!("{refusal:?}"),
                }),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_past_the_rate_are_counted_and_summed_up() {
        let start = Instant::now();
        let mut l = Limiter::new(start);
        let admitted = (0..50).filter(|_| l.admit()).count();
        assert_eq!(admitted, REFUSALS_PER_SECOND as usize);
        assert_eq!(l.roll(start + Duration::from_millis(500)), 0, "same second");
        assert_eq!(l.roll(start + Duration::from_secs(1)), 40);
        assert!(l.admit(), "a new second logs again");
        for _ in 0..REFUSALS_PER_SECOND + 3 {
            l.admit();
        }
        assert_eq!(l.flush(), 4);
        assert_eq!(l.flush(), 0);
    }
}
