//! One restart discipline for every supervised process the host talks to
//! (an isolated module's worker, a mounted MCP server's connection).
//!
//! Both keep "the live process, if any" beside a crash [`Ledger`]; a call
//! that finds none starts one after the ledger's backoff, and five crashes
//! in a minute give up for good. The slot's lock is held only to read or
//! change it, never across the backoff or the start: one caller starts the
//! process while the others wait on a condition variable, each only as
//! long as its own deadline and cancellation allow. (Before, the starter
//! held the lock through a start of up to 30 s, and every other caller —
//! and the pipeline's kill of a stuck call — queued behind it.)

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::ledger::Ledger;

/// How often a waiting caller looks at its own deadline and cancellation.
const POLL: Duration = Duration::from_millis(20);

/// Why no live process could be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unavailable {
    /// It crashed [`crate::MAX_CRASHES`] times within [`crate::WINDOW`]:
    /// given up on until the host restarts.
    Failed,
    /// Starting it failed (counted as a crash), with the reason.
    StartFailed(String),
    /// The caller stopped waiting (its deadline passed, or it was
    /// cancelled) during the backoff or another caller's start.
    GaveUp,
}

struct Slot<T> {
    live: Option<Arc<T>>,
    ledger: Ledger,
    /// A caller is in the backoff or the start.
    starting: bool,
}

/// The live process of one supervised source, restarted on demand.
pub struct Restarts<T> {
    slot: Mutex<Slot<T>>,
    changed: Condvar,
}

impl<T> Default for Restarts<T> {
    fn default() -> Self {
        Restarts {
            slot: Mutex::new(Slot {
                live: None,
                ledger: Ledger::default(),
                starting: false,
            }),
            changed: Condvar::new(),
        }
    }
}

impl<T> Restarts<T> {
    fn lock(&self) -> MutexGuard<'_, Slot<T>> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Makes `live` the live process (the first start, at mount).
    pub fn install(&self, live: Arc<T>) {
        self.lock().live = Some(live);
        self.changed.notify_all();
    }

    /// The live process, if there is one; never waits for a start.
    pub fn current(&self) -> Option<Arc<T>> {
        self.lock().live.clone()
    }

    /// Takes the live process out (shutdown): no call reaches it again.
    pub fn take(&self) -> Option<Arc<T>> {
        self.lock().live.take()
    }

    /// `ended` is gone: forget it if it is still the live one, and count a
    /// crash when `crashed`. Returns the crashes in the window.
    pub fn ended(&self, ended: &Arc<T>, crashed: bool) -> usize {
        let mut slot = self.lock();
        if slot.live.as_ref().is_some_and(|l| Arc::ptr_eq(l, ended)) {
            slot.live = None;
        }
        if crashed {
            slot.ledger.crashed();
        }
        slot.ledger.recent()
    }

    /// The live process; with none, one caller waits out the backoff and
    /// runs `start`, the others wait for it. `stop` says the caller no
    /// longer wants an answer (deadline or cancellation); it is asked
    /// every few milliseconds while waiting, never during `start` itself
    /// (which has its own time limit).
    pub fn live<E: std::fmt::Display>(
        &self,
        start: impl FnOnce() -> Result<Arc<T>, E>,
        stop: impl Fn() -> bool,
    ) -> Result<Arc<T>, Unavailable> {
        let mut slot = self.lock();
        loop {
            if let Some(live) = &slot.live {
                return Ok(live.clone());
            }
            if slot.ledger.failed() {
                return Err(Unavailable::Failed);
            }
            if !slot.starting {
                break;
            }
            if stop() {
                return Err(Unavailable::GaveUp);
            }
            slot = self
                .changed
                .wait_timeout(slot, POLL)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        slot.starting = true;
        let until = Instant::now() + slot.ledger.backoff();
        drop(slot);
        // Clears `starting` and wakes the waiters however this caller
        // leaves (an answer, giving up, or a panic in `start`).
        let starter = Starter(self);
        loop {
            let now = Instant::now();
            if now >= until {
                break;
            }
            if stop() {
                return Err(Unavailable::GaveUp);
            }
            std::thread::sleep((until - now).min(POLL));
        }
        let started = start();
        let mut slot = self.lock();
        let answer = match started {
            Ok(live) => {
                slot.live = Some(live.clone());
                Ok(live)
            }
            Err(error) => {
                slot.ledger.crashed();
                Err(Unavailable::StartFailed(error.to_string()))
            }
        };
        drop(slot);
        drop(starter);
        answer
    }
}

/// The caller that is starting the process; dropping it ends the start.
struct Starter<'a, T>(&'a Restarts<T>);

impl<T> Drop for Starter<'_, T> {
    fn drop(&mut self) {
        self.0.lock().starting = false;
        self.0.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MAX_CRASHES;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn a_waiter_leaves_at_its_own_deadline_while_another_caller_starts() {
        let restarts: Arc<Restarts<u32>> = Arc::default();
        let release = Arc::new(AtomicBool::new(false));
        let entered = Arc::new(AtomicBool::new(false));
        let starter = {
            let (restarts, release, entered) = (restarts.clone(), release.clone(), entered.clone());
            std::thread::spawn(move || {
                restarts.live(
                    || {
                        entered.store(true, Ordering::SeqCst);
                        while !release.load(Ordering::SeqCst) {
                            std::thread::sleep(Duration::from_millis(5));
                        }
                        Ok::<_, &str>(Arc::new(7))
                    },
                    || false,
                )
            })
        };
        while !entered.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        // The slot is not locked during the start: this returns.
        assert!(restarts.current().is_none());
        let deadline = Instant::now() + Duration::from_millis(100);
        let waited = restarts.live(
            || -> Result<_, &str> { unreachable!("only one caller starts") },
            || Instant::now() >= deadline,
        );
        assert_eq!(waited, Err(Unavailable::GaveUp));
        release.store(true, Ordering::SeqCst);
        assert_eq!(starter.join().ok().and_then(Result::ok).as_deref(), Some(&7));
        assert_eq!(
            restarts
                .live(|| -> Result<_, &str> { unreachable!() }, || false)
                .as_deref(),
            Ok(&7)
        );
    }

    #[test]
    fn a_failed_start_counts_a_crash_and_five_give_up() {
        let restarts: Restarts<u32> = Restarts::default();
        for _ in 0..MAX_CRASHES {
            let answer = restarts.live(|| Err("no"), || false);
            assert_eq!(answer, Err(Unavailable::StartFailed("no".into())));
        }
        assert_eq!(
            restarts.live(|| Ok::<_, &str>(Arc::new(1)), || false),
            Err(Unavailable::Failed)
        );
    }
}
