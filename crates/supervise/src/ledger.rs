//! Crash accounting for a supervised process: restart backoff, and the
//! point (5 crashes in 60 s) after which the module is given up on.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Crashes within this window count towards giving up.
pub const WINDOW: Duration = Duration::from_secs(60);
/// This many crashes within [`WINDOW`] and the module answers
/// `module_failed` until the host restarts.
pub const MAX_CRASHES: usize = 5;

/// Recent crashes of one module.
#[derive(Debug, Default)]
pub struct Ledger {
    crashes: VecDeque<Instant>,
    failed: bool,
}

impl Ledger {
    /// Counts a crash now.
    pub fn crashed(&mut self) {
        let now = Instant::now();
        self.crashes.push_back(now);
        while self
            .crashes
            .front()
            .is_some_and(|t| now.duration_since(*t) > WINDOW)
        {
            self.crashes.pop_front();
        }
        if self.crashes.len() >= MAX_CRASHES {
            self.failed = true;
        }
    }

    /// Whether the module has been given up on.
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// How long a restart must still wait: 50 ms after one recent crash,
    /// doubling with each further one (so a module that crashes at once on
    /// every start cannot spin).
    pub fn backoff(&self) -> Duration {
        let Some(last) = self.crashes.back() else {
            return Duration::ZERO;
        };
        let recent = self
            .crashes
            .iter()
            .filter(|t| last.duration_since(**t) <= WINDOW)
            .count()
            .max(1);
        let wait = Duration::from_millis(50) * (1u32 << (recent - 1).min(6));
        wait.saturating_sub(last.elapsed())
    }

    /// Crashes counted in the window.
    pub fn recent(&self) -> usize {
        self.crashes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_crashes_fail_the_module_and_backoff_grows() {
        let mut ledger = Ledger::default();
        assert_eq!(ledger.backoff(), Duration::ZERO);
        ledger.crashed();
        let first = ledger.backoff();
        assert!(first > Duration::ZERO && first <= Duration::from_millis(50));
        for _ in 0..3 {
            ledger.crashed();
        }
        assert!(!ledger.failed());
        assert!(ledger.backoff() > Duration::from_millis(200));
        ledger.crashed();
        assert!(ledger.failed());
    }
}
