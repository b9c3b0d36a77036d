//! Every call's deadline and grace period, kept by one thread: stage 6's
//! engine ([`super::execute`]) puts each call under watch, whether its tool
//! runs on a lent thread or on its caller's own ([`super::inline`]), where
//! no `select!` could race the tool against a timer.
//!
//! At a call's deadline the watchdog sets its cancel token (the deadline is
//! read from the call's [`CallClock`], which progress may have moved: then
//! the watchdog sleeps again until the moved one); once a cancelled
//! call (by deadline, by its client or at shutdown) has had its grace period
//! and still runs, the watchdog *abandons* it: it runs the call's abandon
//! callback, which answers the caller without the tool. Whichever comes
//! first, [`Watch::finish`] or abandonment, wins; the other learns it lost.
//!
//! Arming costs no wake-up in the common case: the thread sleeps until the
//! earliest deadline it knows, or a minute when it knows none, and is only
//! woken when a new deadline is earlier than that.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use toolhost_core::Status;

use super::deadline::CallClock;
use crate::cancel::CancelToken;

/// How long the thread sleeps when it has nothing to watch: it must wake
/// for any deadline sooner than this, so ordinary deadlines (minutes) never
/// need to wake it.
const IDLE_NAP: Duration = Duration::from_secs(60);

/// Answers a call that was abandoned, with why it was cancelled.
pub type Abandon = Box<dyn FnOnce(Status) + Send>;

/// Keeps the deadlines of every call in flight.
#[derive(Clone, Default)]
pub struct Watchdog {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    tick: Condvar,
}

#[derive(Default)]
struct State {
    /// Entries by when the watchdog must next look at them.
    queue: BTreeSet<(Instant, u64)>,
    entries: HashMap<u64, Entry>,
    next_id: u64,
    /// When the thread will wake on its own; `None` before it runs.
    sleeping_until: Option<Instant>,
    running: bool,
}

struct Entry {
    /// When the entry is next due; `None`: nothing bounds the call (until
    /// it is cancelled).
    at: Option<Instant>,
    clock: Arc<CallClock>,
    cancel: CancelToken,
    grace: Duration,
    /// Why the call was cancelled, once it was; set, it is in its grace.
    why: Option<Status>,
    abandon: Abandon,
}

/// What the thread does outside the lock.
enum Action {
    Cancel(CancelToken),
    Abandon(Abandon, Status),
}

impl Watchdog {
    /// Watches a call: cancel it at its clock's deadline, abandon it
    /// `grace` after it was cancelled (by the deadline or by anyone else:
    /// the watch hooks onto `cancel`).
    pub fn watch(
        &self,
        clock: Arc<CallClock>,
        grace: Duration,
        cancel: &CancelToken,
        abandon: Abandon,
    ) -> Watch {
        let deadline = clock.deadline().map(|(at, _)| at);
        let id = {
            let mut state = self.lock();
            state.next_id += 1;
            let id = state.next_id;
            state.entries.insert(
                id,
                Entry {
                    at: deadline,
                    clock,
                    cancel: cancel.clone(),
                    grace,
                    why: None,
                    abandon,
                },
            );
            if let Some(deadline) = deadline {
                state.queue.insert((deadline, id));
                self.start_or_wake(&mut state, deadline);
            }
            id
        };
        let hook = {
            let watchdog = self.clone();
            cancel.on_cancel(move || watchdog.cancelled(id, Status::Cancelled))
        };
        Watch {
            watchdog: self.clone(),
            id,
            _hook: hook,
        }
    }

    /// How many calls are being watched (for tests and diagnostics).
    pub fn watching(&self) -> usize {
        self.lock().entries.len()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.shared.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts the thread on first use; wakes it when `at` is sooner than it
    /// would wake on its own.
    fn start_or_wake(&self, state: &mut State, at: Instant) {
        if !state.running {
            let watchdog = self.clone();
            let spawned = std::thread::Builder::new()
                .name("toolhost-watchdog".into())
                .spawn(move || watchdog.run());
            match spawned {
                Ok(_) => state.running = true,
                // Nothing can time calls out; say so loudly, try again on the
                // next call.
                Err(e) => tracing::error!("cannot start the watchdog thread: {e}"),
            }
            return;
        }
        if state.sleeping_until.is_some_and(|until| at < until) {
            self.shared.tick.notify_one();
        }
    }

    /// Marks entry `id` cancelled (keeping an earlier reason) and schedules
    /// its abandonment after the grace period.
    fn cancelled(&self, id: u64, why: Status) {
        let mut state = self.lock();
        let Some(entry) = state.entries.get_mut(&id) else {
            return; // finished or abandoned already
        };
        if entry.why.is_some() {
            return; // in its grace period already
        }
        entry.why = Some(why);
        let (old, new) = (entry.at, Instant::now() + entry.grace);
        entry.at = Some(new);
        if let Some(old) = old {
            state.queue.remove(&(old, id));
        }
        state.queue.insert((new, id));
        self.start_or_wake(&mut state, new);
    }

    /// The thread: sleeps until the earliest entry is due, handles every due
    /// entry outside the lock, repeats. It never exits (the watchdog lives
    /// as long as its pipeline, which lives as long as the process).
    fn run(self) {
        let mut state = self.lock();
        loop {
            let now = Instant::now();
            let mut actions = Vec::new();
            while let Some(&(at, id)) = state.queue.first() {
                if at > now {
                    break;
                }
                state.queue.remove(&(at, id));
                let Some(entry) = state.entries.get_mut(&id) else {
                    continue;
                };
                match entry.why {
                    // The deadline: unless progress moved it, cancel, then
                    // wait out the grace period.
                    None => match entry.clock.check(now) {
                        Ok(moved) => {
                            entry.at = moved;
                            if let Some(moved) = moved {
                                state.queue.insert((moved, id));
                            }
                        }
                        Err(_fired) => {
                            entry.why = Some(Status::Timeout);
                            let next = now + entry.grace;
                            entry.at = Some(next);
                            let cancel = entry.cancel.clone();
                            state.queue.insert((next, id));
                            actions.push(Action::Cancel(cancel));
                        }
                    },
                    // The grace period is over and the tool still runs.
                    Some(why) => {
                        if let Some(entry) = state.entries.remove(&id) {
                            actions.push(Action::Abandon(entry.abandon, why));
                        }
                    }
                }
            }
            if !actions.is_empty() {
                drop(state);
                for action in actions {
                    match action {
                        Action::Cancel(cancel) => cancel.cancel(),
                        Action::Abandon(abandon, why) => abandon(why),
                    }
                }
                state = self.lock();
                continue;
            }
            let until = state.queue.first().map_or(now + IDLE_NAP, |&(at, _)| at);
            state.sleeping_until = Some(until);
            state = match self
                .shared
                .tick
                .wait_timeout(state, until.saturating_duration_since(now))
            {
                Ok((state, _)) => state,
                Err(poisoned) => poisoned.into_inner().0,
            };
            state.sleeping_until = None;
        }
    }
}

/// How a watched call stands when its tool returns.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// The call is still its caller's to answer; with why it was cancelled
    /// meanwhile, if it was.
    Answerable(Option<Status>),
    /// The watchdog abandoned it and it has been answered already.
    Abandoned,
}

/// One watched call; [`Watch::finish`] ends the watch.
pub struct Watch {
    watchdog: Watchdog,
    id: u64,
    _hook: crate::cancel::OnCancel,
}

impl Watch {
    /// Stops watching a call whose tool returned, and says whether the
    /// caller still answers it.
    pub fn finish(self) -> Ended {
        match self.remove() {
            Some(entry) => Ended::Answerable(entry.why),
            None => Ended::Abandoned,
        }
    }

    fn remove(&self) -> Option<Entry> {
        let mut state = self.watchdog.lock();
        let entry = state.entries.remove(&self.id)?;
        if let Some(at) = entry.at {
            state.queue.remove(&(at, self.id));
        }
        Some(entry)
    }
}

impl Drop for Watch {
    /// A watch dropped without [`Watch::finish`] (the caller unwound) is
    /// forgotten rather than left to fire.
    fn drop(&mut self) {
        drop(self.remove());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn clock(after: Duration) -> Arc<CallClock> {
        Arc::new(CallClock::start(super::super::deadline::Bounds::fixed(after)))
    }

    fn abandon_into(tx: mpsc::Sender<Status>) -> Abandon {
        Box::new(move |why| {
            let _ = tx.send(why);
        })
    }

    #[test]
    fn a_call_that_finishes_in_time_is_neither_cancelled_nor_abandoned() {
        let dog = Watchdog::default();
        let cancel = CancelToken::new();
        let (tx, rx) = mpsc::channel();
        let watch = dog.watch(
            clock(Duration::from_secs(30)),
            Duration::from_secs(1),
            &cancel,
            abandon_into(tx),
        );
        assert_eq!(dog.watching(), 1);
        assert_eq!(watch.finish(), Ended::Answerable(None));
        assert_eq!(dog.watching(), 0);
        assert!(!cancel.is_cancelled());
        assert!(rx.recv_timeout(Duration::from_millis(50)).is_err());
    }

    #[test]
    fn the_deadline_cancels_and_a_cooperative_call_keeps_its_answer() {
        let dog = Watchdog::default();
        let cancel = CancelToken::new();
        let (tx, rx) = mpsc::channel();
        let watch = dog.watch(
            clock(Duration::from_millis(50)),
            Duration::from_secs(5),
            &cancel,
            abandon_into(tx),
        );
        // The "tool" waits for its token, as a cooperative one does.
        assert!(
            cancel.wait_blocking(Duration::from_secs(5)),
            "the deadline cancels"
        );
        assert_eq!(watch.finish(), Ended::Answerable(Some(Status::Timeout)));
        assert!(
            rx.recv_timeout(Duration::from_millis(50)).is_err(),
            "not abandoned"
        );
    }

    #[test]
    fn a_call_that_ignores_its_token_is_abandoned_after_the_grace_period() {
        let dog = Watchdog::default();
        let cancel = CancelToken::new();
        let (tx, rx) = mpsc::channel();
        let started = Instant::now();
        let watch = dog.watch(
            clock(Duration::from_millis(30)),
            Duration::from_millis(100),
            &cancel,
            abandon_into(tx),
        );
        let why = rx.recv_timeout(Duration::from_secs(5)).expect("abandoned");
        assert_eq!(why, Status::Timeout);
        assert!(started.elapsed() >= Duration::from_millis(130));
        assert!(cancel.is_cancelled());
        assert_eq!(watch.finish(), Ended::Abandoned, "the late answer loses");
        assert_eq!(dog.watching(), 0);
    }

    #[test]
    fn a_cancel_from_anyone_starts_the_grace_period() {
        let dog = Watchdog::default();
        let cancel = CancelToken::new();
        let (tx, rx) = mpsc::channel();
        let started = Instant::now();
        let _watch = dog.watch(
            clock(Duration::from_secs(600)),
            Duration::from_millis(50),
            &cancel,
            abandon_into(tx),
        );
        cancel.cancel();
        let why = rx.recv_timeout(Duration::from_secs(5)).expect("abandoned");
        assert_eq!(why, Status::Cancelled);
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn progress_moves_an_inactivity_deadline_without_waking_the_watchdog_early() {
        use super::super::deadline::Bounds;
        let dog = Watchdog::default();
        let cancel = CancelToken::new();
        let clock = Arc::new(CallClock::start(Bounds {
            timeout: Some(Duration::from_millis(100)),
            extends: true,
            hard_cap: None,
        }));
        let _watch = dog.watch(clock.clone(), Duration::from_secs(5), &cancel, Box::new(|_| {}));
        let started = Instant::now();
        // Active for 400 ms: four times the inactivity timeout.
        while started.elapsed() < Duration::from_millis(400) {
            clock.touch();
            assert!(
                !cancel.wait_blocking(Duration::from_millis(20)),
                "cancelled while active"
            );
        }
        // Then silent: cancelled about 100 ms later.
        assert!(cancel.wait_blocking(Duration::from_secs(5)), "silence cancels");
        let fired = clock.fired().expect("a bound fired");
        assert_eq!(fired.bound, super::super::deadline::Bound::Inactivity);
        assert!(fired.after >= Duration::from_millis(480), "{fired:?}");
    }

    #[test]
    fn many_calls_each_meet_their_own_deadline() {
        let dog = Watchdog::default();
        let mut watched = Vec::new();
        for i in 0..200u64 {
            let cancel = CancelToken::new();
            // Odd calls have short deadlines; even ones never reach theirs.
            let deadline = if i % 2 == 1 {
                clock(Duration::from_millis(20 + i % 7))
            } else {
                clock(Duration::from_secs(600))
            };
            let watch = dog.watch(deadline, Duration::from_secs(60), &cancel, Box::new(|_| {}));
            watched.push((i, cancel, watch));
        }
        // The short deadlines fire (each token is the readiness signal);
        // by then the long ones must still be untouched.
        for (i, cancel, _) in &watched {
            if i % 2 == 1 {
                assert!(cancel.wait_blocking(Duration::from_secs(10)), "call {i}");
            }
        }
        for (i, cancel, watch) in watched {
            let expected = (i % 2 == 1).then_some(Status::Timeout);
            assert_eq!(cancel.is_cancelled(), expected.is_some(), "call {i}");
            assert_eq!(watch.finish(), Ended::Answerable(expected), "call {i}");
        }
        assert_eq!(dog.watching(), 0);
    }
}
