//! Model checks of the hand-off slot and the cancel token: every
//! interleaving of the threads below (and every reordering the memory model
//! allows) is run. Only under `--cfg loom` (`cargo xtask loom`).

#![cfg(loom)]

use std::sync::atomic::Ordering::SeqCst;
use std::time::Duration;

use loom::sync::atomic::AtomicUsize;
use loom::sync::Arc;
use loom::thread;
use toolhost_sync::cancel::CancelToken;
use toolhost_sync::hot::HotSlot;

/// A job that counts its runs.
fn job(runs: &Arc<AtomicUsize>) -> impl FnOnce() + Send + 'static {
    let runs = runs.clone();
    move || {
        runs.fetch_add(1, SeqCst);
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// A hot thread that may give up at any moment, and a caller that offers a
/// job and runs it itself when refused: the job runs exactly once, and the
/// slot ends cold.
#[test]
fn an_offered_job_runs_exactly_once_even_when_the_hot_thread_gives_up() {
    loom::model(|| {
        let slot: Arc<HotSlot<Job>> = Arc::default();
        let runs = Arc::new(AtomicUsize::new(0));
        let hot = {
            let slot = slot.clone();
            thread::spawn(move || {
                if slot.become_hot() {
                    // Gives up at its first look at the clock, which the
                    // model may place before or after the offer.
                    if let Some(job) = slot.wait(|| true) {
                        job();
                    }
                }
            })
        };
        if let Err(job) = slot.offer(Box::new(job(&runs))) {
            job(); // the fallback: run on another thread
        }
        hot.join().expect("hot thread");
        assert_eq!(runs.load(SeqCst), 1, "run once, never lost");
        assert!(slot.is_cold(), "the slot ends cold");
    });
}

/// Two callers race for one hot thread: one is handed over, the other gets
/// its job back; both jobs run once.
#[test]
fn two_callers_never_share_the_hot_thread() {
    loom::model(|| {
        let slot: Arc<HotSlot<Job>> = Arc::default();
        let runs = Arc::new(AtomicUsize::new(0));
        assert!(slot.become_hot());
        let other = {
            let (slot, runs) = (slot.clone(), runs.clone());
            thread::spawn(move || {
                if let Err(job) = slot.offer(Box::new(job(&runs))) {
                    job();
                }
            })
        };
        if let Err(job) = slot.offer(Box::new(job(&runs))) {
            job();
        }
        // The hot thread (this one, now): takes the handed job, if any.
        if let Some(job) = slot.wait(|| true) {
            job();
        }
        other.join().expect("caller");
        assert_eq!(runs.load(SeqCst), 2);
        assert!(slot.is_cold());
    });
}

/// Only one of two threads becomes hot.
#[test]
fn at_most_one_thread_is_hot() {
    loom::model(|| {
        let slot: Arc<HotSlot<Job>> = Arc::default();
        let hot = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let (slot, hot) = (slot.clone(), hot.clone());
                thread::spawn(move || {
                    if slot.become_hot() {
                        hot.fetch_add(1, SeqCst);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("thread");
        }
        assert_eq!(hot.load(SeqCst), 1);
    });
}

/// A hook added while another thread cancels runs exactly once: either at
/// once (the token was cancelled) or from `cancel`.
#[test]
fn a_hook_racing_cancel_runs_exactly_once() {
    loom::model(|| {
        let token = CancelToken::new();
        let runs = Arc::new(AtomicUsize::new(0));
        let canceller = {
            let token = token.clone();
            thread::spawn(move || token.cancel())
        };
        let _hook = token.on_cancel(job(&runs));
        canceller.join().expect("canceller");
        assert_eq!(runs.load(SeqCst), 1);
    });
}

/// A hook dropped while another thread cancels runs at most once, and not
/// at all when the drop came first.
#[test]
fn a_hook_dropped_racing_cancel_runs_at_most_once() {
    loom::model(|| {
        let token = CancelToken::new();
        let runs = Arc::new(AtomicUsize::new(0));
        let hook = token.on_cancel(job(&runs));
        let dropped = Arc::new(AtomicUsize::new(0));
        let dropper = {
            let dropped = dropped.clone();
            thread::spawn(move || {
                drop(hook);
                dropped.store(1, SeqCst);
            })
        };
        let dropped_before = dropped.load(SeqCst) == 1;
        token.cancel();
        dropper.join().expect("dropper");
        let ran = runs.load(SeqCst);
        assert!(ran <= 1);
        if dropped_before {
            assert_eq!(ran, 0, "a hook dropped before cancel never runs");
        }
    });
}

/// A blocking waiter is always woken by a cancel from another thread (no
/// lost wake-up), and a hook runs after the flag is visible.
#[test]
fn a_blocking_waiter_always_sees_the_cancel() {
    loom::model(|| {
        let token = CancelToken::new();
        let seen_in_hook = Arc::new(AtomicUsize::new(0));
        let _hook = {
            let (token, seen) = (token.clone(), seen_in_hook.clone());
            token.clone().on_cancel(move || {
                if token.is_cancelled() {
                    seen.store(1, SeqCst);
                }
            })
        };
        let canceller = {
            let token = token.clone();
            thread::spawn(move || token.cancel())
        };
        // Loom's timed wait never times out: only a notification ends it.
        assert!(token.wait_blocking(Duration::from_secs(3600)));
        canceller.join().expect("canceller");
        assert_eq!(seen_in_hook.load(SeqCst), 1);
    });
}

// --- the stdin readers -----------------------------------------------------

mod stdin_model {
    //! A model of the host's stdin source: an epoll set with stdin
    //! registered one-shot (an event wakes one waiter, then none until the
    //! owner re-arms), an eventfd that stops every waiter for good, and a
    //! client writing chunks then closing.

    use std::collections::VecDeque;
    use std::sync::atomic::Ordering::SeqCst;

    use loom::sync::atomic::AtomicBool;
    use loom::sync::{Arc, Condvar, Mutex};
    use toolhost_sync::readers::{Event, Job, Read, Source};

    /// What the client wrote: a plain line, or a call whose job holds its
    /// reader until `until` chunks have been handed on (or the input ended).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Chunk {
        Line(u8),
        Call(u8, usize),
    }

    #[derive(Default)]
    pub struct State {
        written: VecDeque<Chunk>,
        closed: bool,
        armed: bool,
        stopped: bool,
        /// Idle timeouts still to report (each wait with nothing ready
        /// takes one): lets readers decide to retire at any moment.
        timeouts: usize,
        /// What was handed on, in order; `None` is the end.
        pub delivered: Vec<Option<u8>>,
    }

    pub struct Stdin {
        pub state: Mutex<State>,
        changed: Condvar,
        /// Set while a reader is inside `read`: two at once is the bug.
        reading: AtomicBool,
    }

    impl Stdin {
        /// Stdin already holding `written` (and closed after it when
        /// `closed`): fewer interleavings to explore than a writing client.
        pub fn new(timeouts: usize, written: &[Chunk], closed: bool) -> Arc<Stdin> {
            Arc::new(Stdin {
                state: Mutex::new(State {
                    armed: true,
                    timeouts,
                    written: written.iter().copied().collect(),
                    closed,
                    ..State::default()
                }),
                changed: Condvar::new(),
                reading: AtomicBool::new(false),
            })
        }

        pub fn write(&self, chunk: Chunk) {
            self.state.lock().unwrap().written.push_back(chunk);
            self.changed.notify_all();
        }

        pub fn close(&self) {
            self.state.lock().unwrap().closed = true;
            self.changed.notify_all();
        }

        /// Blocks until the end has been handed on.
        pub fn wait_end(&self) -> Vec<Option<u8>> {
            let mut state = self.state.lock().unwrap();
            while state.delivered.last() != Some(&None) {
                state = self.changed.wait(state).unwrap();
            }
            state.delivered.clone()
        }
    }

    /// The readers' source over a shared model.
    pub struct Model(pub Arc<Stdin>);

    impl Source for Model {
        fn wait(&self) -> Event {
            let stdin = &self.0;
            let mut state = stdin.state.lock().unwrap();
            loop {
                if state.stopped {
                    return Event::Stop;
                }
                if state.armed && (!state.written.is_empty() || state.closed) {
                    state.armed = false;
                    return Event::Input;
                }
                if state.timeouts > 0 {
                    state.timeouts -= 1;
                    return Event::Idle;
                }
                state = stdin.changed.wait(state).unwrap();
            }
        }

        fn read(&self) -> Read {
            let stdin = &self.0;
            assert!(!stdin.reading.swap(true, SeqCst), "two readers read at once");
            let read = {
                let mut state = stdin.state.lock().unwrap();
                assert!(!state.armed, "read while the input was armed for another");
                match state.written.pop_front() {
                    Some(Chunk::Line(n)) => {
                        state.delivered.push(Some(n));
                        Read::More(None)
                    }
                    Some(Chunk::Call(n, until)) => {
                        state.delivered.push(Some(n));
                        let stdin = stdin.clone();
                        let job: Job = Box::new(move || {
                            let mut state = stdin.state.lock().unwrap();
                            // Held until another reader has read on: a lost
                            // wake-up leaves this waiting forever (loom
                            // reports the deadlock).
                            while state.delivered.len() < until && state.delivered.last() != Some(&None) {
                                state = stdin.changed.wait(state).unwrap();
                            }
                            drop(state);
                            stdin.changed.notify_all();
                        });
                        Read::More(Some(job))
                    }
                    None if state.closed => Read::End,
                    None => Read::More(None),
                }
            };
            self.0.changed.notify_all();
            self.0.reading.store(false, SeqCst);
            read
        }

        fn rearm(&self) -> std::io::Result<()> {
            self.0.state.lock().unwrap().armed = true;
            self.0.changed.notify_all();
            Ok(())
        }

        fn stop(&self) {
            self.0.state.lock().unwrap().stopped = true;
            self.0.changed.notify_all();
        }

        fn end(&self) {
            let mut state = self.0.state.lock().unwrap();
            assert!(!state.delivered.contains(&None), "the end was handed on twice");
            assert!(state.written.is_empty(), "the end came before the last line");
            state.delivered.push(None);
            drop(state);
            self.0.changed.notify_all();
        }
    }
}

use stdin_model::{Chunk, Model, Stdin};
use toolhost_sync::readers::Readers;

/// The readers' models: two preemptions (a lost wake-up between a reader's
/// turn and its job needs one; a retirement racing it, two), which keeps
/// each model within seconds.
fn readers_model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(f);
}

/// Two readers, a line the client writes while they wait, then the end:
/// the line is handed on once, the end after it, and every reader leaves
/// (one still blocked in a wait is woken by the stop: loom reports a thread
/// left waiting).
#[test]
fn readers_hand_on_a_line_then_the_end_and_all_leave() {
    readers_model(|| {
        let stdin = Stdin::new(0, &[], false);
        Readers::start(Model(stdin.clone()), 2).expect("readers");
        stdin.write(Chunk::Line(1));
        stdin.close();
        assert_eq!(stdin.wait_end(), vec![Some(1), None]);
    });
}

/// Lines already waiting are handed on once each, in order, whichever of
/// two readers takes each turn.
#[test]
fn readers_hand_on_each_line_once_in_order() {
    readers_model(|| {
        let stdin = Stdin::new(0, &[Chunk::Line(1), Chunk::Line(2)], true);
        Readers::start(Model(stdin.clone()), 2).expect("readers");
        assert_eq!(stdin.wait_end(), vec![Some(1), Some(2), None]);
    });
}

/// One reader kept, and a call whose job waits for the next line: the
/// reader running it must see another reader started, or the line behind
/// the call is never read (a lost wake-up: loom reports the deadlock).
#[test]
fn a_line_behind_a_running_call_is_read_by_another_reader() {
    readers_model(|| {
        let stdin = Stdin::new(0, &[Chunk::Call(1, 2), Chunk::Line(2)], true);
        Readers::start(Model(stdin.clone()), 1).expect("readers");
        assert_eq!(stdin.wait_end(), vec![Some(1), Some(2), None]);
    });
}

/// Idle readers may retire at any moment (a wait with nothing ready may
/// time out), yet input is never left without a reader: the client's line
/// after a call is still read.
#[test]
fn retiring_readers_never_leave_the_input_unread() {
    readers_model(|| {
        let stdin = Stdin::new(2, &[Chunk::Call(1, 2)], false);
        Readers::start(Model(stdin.clone()), 1).expect("readers");
        stdin.write(Chunk::Line(2));
        stdin.close();
        assert_eq!(stdin.wait_end(), vec![Some(1), Some(2), None]);
    });
}

/// The input ends while a call runs: the call finishes, the end is handed
/// on once, and both readers leave.
#[test]
fn the_end_while_a_call_runs_lets_it_finish_and_every_reader_leave() {
    readers_model(|| {
        let stdin = Stdin::new(0, &[Chunk::Call(1, 9)], true);
        Readers::start(Model(stdin.clone()), 2).expect("readers");
        assert_eq!(stdin.wait_end(), vec![Some(1), None]);
    });
}
