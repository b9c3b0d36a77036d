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
