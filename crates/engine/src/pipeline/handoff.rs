//! The hand-off of a call to a blocking thread (DESIGN rule 4), made cheap.
//!
//! A plain `spawn_blocking` round trip costs two thread wake-ups: one to
//! start a parked pool thread, one to wake the caller when the tool is done.
//! On a virtual machine each wake-up of an idle vCPU is an interrupt and a VM
//! exit, 10–60 µs, several times what a small tool (read_file, echo) takes.
//! So both ends spin briefly instead of sleeping, but only when it pays:
//!
//! - After a job, its thread stays *hot* for up to [`HOT_SPIN`], waiting for
//!   the next job in a one-job slot; it does so only while calls have been
//!   arriving within that time of each other (an agent's burst, a batch).
//!   Otherwise it goes back to tokio's pool at once, so a server answering
//!   one call every few hundred microseconds burns no CPU on spinning.
//! - The caller, on its first poll, spins up to [`WAIT_SPIN`] for the result
//!   when its job went to a hot thread and recent jobs have been that short;
//!   otherwise it sleeps on a waker.
//!
//! A process limited to one CPU (`taskset`, a cgroup) never spins.
//!
//! Nothing else changes: the tool still runs on a thread of its own, the
//! caller can stop waiting at any moment (timeout, cancel, abandon), and a
//! job nobody waits for any more simply delivers into a dropped channel.
//!
//! The concurrency is not written here: the slot is
//! [`toolhost_sync::hot::HotSlot`] (model-checked with loom), the result
//! travels on a tokio `oneshot` (checked by tokio), the threads are tokio's.
//! What is here is policy: when to spin and for how long.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use toolhost_sync::hot::HotSlot;

/// How long a thread stays hot after a job.
pub const HOT_SPIN: Duration = Duration::from_micros(100);
/// How long a caller spins for a result before it sleeps.
pub const WAIT_SPIN: Duration = Duration::from_micros(100);

type Job = Box<dyn FnOnce() + Send>;

/// Why a job handed no value back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobError {
    /// It panicked, with this message.
    #[error("{0}")]
    Panicked(String),
    /// It was dropped before it ran (its runtime shut down first).
    #[error("the job was dropped before it ran (the runtime is shutting down)")]
    Dropped,
}

/// Hands jobs to blocking threads; one per pipeline.
pub struct Handoff {
    slot: HotSlot<Job>,
    started: Instant,
    /// When the last job ended (ns since `started`).
    last_end: AtomicU64,
    /// Moving average of the time from a job's end to the next job's start.
    gap_ns: AtomicU64,
    /// Moving average of how long jobs run.
    busy_ns: AtomicU64,
    /// How many times a thread stayed hot.
    spells: AtomicU64,
}

impl Default for Handoff {
    fn default() -> Self {
        let never = 10 * HOT_SPIN.as_nanos() as u64;
        Handoff {
            slot: HotSlot::default(),
            started: Instant::now(),
            last_end: AtomicU64::new(0),
            // Start out assuming sparse, long calls: no spinning until the
            // calls themselves show it pays.
            gap_ns: AtomicU64::new(never),
            busy_ns: AtomicU64::new(never),
            spells: AtomicU64::new(0),
        }
    }
}

impl Handoff {
    /// Runs `f` on a blocking thread; the returned future resolves to its
    /// value, or to why there is none. Must be called inside a tokio
    /// runtime.
    pub fn run<T, F>(self: &Arc<Self>, f: F) -> Completion<T>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        self.note_gap();
        let (tx, rx) = oneshot::channel();
        let job: Job = {
            let me = self.clone();
            Box::new(move || {
                let began = Instant::now();
                let value = catch_unwind(AssertUnwindSafe(f))
                    .map_err(|p| JobError::Panicked(toolhost_core::panic_message(&*p)));
                me.note_end(began.elapsed());
                // A caller that stopped waiting dropped the receiver.
                let _ = tx.send(value);
            })
        };
        let hot = match self.slot.offer(job) {
            Ok(()) => true,
            Err(job) => {
                let me = self.clone();
                // The JoinHandle is not needed: the job delivers itself.
                drop(tokio::task::spawn_blocking(move || {
                    job();
                    me.stay_hot();
                }));
                false
            }
        };
        // Spin only when the job started at once and jobs are short; a cold
        // start takes a wake-up anyway, so sleep through it.
        let spin = if hot && self.busy_ns.load(Ordering::Relaxed) < WAIT_SPIN.as_nanos() as u64 {
            WAIT_SPIN
        } else {
            Duration::ZERO
        };
        Completion { rx, spin }
    }

    /// After a job: spin for the next one while calls come in bursts, then
    /// give the thread back. Only one thread is hot at a time.
    fn stay_hot(&self) {
        if single_cpu() {
            return;
        }
        loop {
            if self.gap_ns.load(Ordering::Relaxed) >= HOT_SPIN.as_nanos() as u64 || !self.slot.become_hot() {
                return;
            }
            self.spells.fetch_add(1, Ordering::Relaxed);
            let until = Instant::now() + HOT_SPIN;
            match self.slot.wait(|| Instant::now() >= until) {
                Some(job) => job(),
                None => return,
            }
        }
    }

    /// How many times a thread has stayed hot after a job: zero while calls
    /// are sparse (a diagnostic, and what the tests check).
    pub fn hot_spells(&self) -> u64 {
        self.spells.load(Ordering::Relaxed)
    }

    fn now_ns(&self) -> u64 {
        self.started.elapsed().as_nanos() as u64
    }

    fn note_gap(&self) {
        let end = self.last_end.load(Ordering::Relaxed);
        if end == 0 {
            return;
        }
        let gap = self.now_ns().saturating_sub(end);
        average(&self.gap_ns, gap);
    }

    fn note_end(&self, took: Duration) {
        average(&self.busy_ns, took.as_nanos() as u64);
        self.last_end.store(self.now_ns().max(1), Ordering::Relaxed);
    }
}

/// With a single CPU to run on, a spinning thread only delays the one it
/// waits for: never spin then. Asked after the first job, not when the
/// pipeline is made: the answer reads cgroup files, which `toolhost serve`
/// would otherwise pay before answering `initialize`.
fn single_cpu() -> bool {
    static SINGLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SINGLE.get_or_init(|| std::thread::available_parallelism().map_or(true, |n| n.get() < 2))
}

/// Folds `sample` into a moving average (weight 1/8); races only blur it.
fn average(avg: &AtomicU64, sample: u64) {
    let old = avg.load(Ordering::Relaxed);
    if old >= u64::MAX / 2 {
        return; // spinning is off for good (one CPU)
    }
    let new = old - old / 8 + sample.min(u64::MAX / 16) / 8;
    avg.store(new, Ordering::Relaxed);
}

/// A job's value, once it is there. Dropping it stops waiting; the job
/// runs on regardless.
pub struct Completion<T> {
    rx: oneshot::Receiver<Result<T, JobError>>,
    /// Spin budget left for the first poll.
    spin: Duration,
}

impl<T> Future for Completion<T> {
    type Output = Result<T, JobError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if !self.spin.is_zero() {
            let until = Instant::now() + std::mem::take(&mut self.spin);
            let mut spins = 0u32;
            loop {
                match self.rx.try_recv() {
                    Ok(value) => return Poll::Ready(value),
                    Err(oneshot::error::TryRecvError::Closed) => return Poll::Ready(Err(JobError::Dropped)),
                    Err(oneshot::error::TryRecvError::Empty) => {}
                }
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(64) && Instant::now() >= until {
                    break;
                }
                std::hint::spin_loop();
            }
        }
        Pin::new(&mut self.rx)
            .poll(cx)
            .map(|received| received.unwrap_or(Err(JobError::Dropped)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime")
    }

    #[test]
    fn every_job_runs_once_and_delivers_its_own_value() {
        let rt = runtime();
        let handoff = Arc::new(Handoff::default());
        let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        // Back-to-back calls make the threads hot; concurrent ones race the
        // hand-off against the fallback.
        rt.block_on(async {
            for i in 0..2000u64 {
                let c = count.clone();
                let got = handoff
                    .run(move || {
                        c.fetch_add(1, Ordering::SeqCst);
                        i * 2
                    })
                    .await;
                assert_eq!(got, Ok(i * 2));
            }
            let many: Vec<_> = (0..500u64)
                .map(|i| {
                    let c = count.clone();
                    handoff.run(move || {
                        c.fetch_add(1, Ordering::SeqCst);
                        i
                    })
                })
                .collect();
            for (i, done) in many.into_iter().enumerate() {
                assert_eq!(done.await, Ok(i as u64));
            }
        });
        assert_eq!(count.load(Ordering::SeqCst), 2500);
    }

    #[test]
    fn a_panic_becomes_its_message_and_the_next_job_still_runs() {
        let rt = runtime();
        let handoff = Arc::new(Handoff::default());
        rt.block_on(async {
            let failed = handoff.run(|| -> u8 { panic!("boom") }).await;
            assert_eq!(failed, Err(JobError::Panicked("boom".to_string())));
            assert_eq!(handoff.run(|| 7u8).await, Ok(7));
        });
    }

    #[test]
    fn a_caller_that_stops_waiting_is_not_held_by_a_long_job() {
        let rt = runtime();
        let handoff = Arc::new(Handoff::default());
        rt.block_on(async {
            let (release, hold) = std::sync::mpsc::channel::<()>();
            let long = handoff.run(move || {
                let _ = hold.recv();
            });
            let waited = tokio::time::timeout(Duration::from_millis(20), long).await;
            assert!(waited.is_err(), "the long job is still running");
            // The hand-off still works while that job runs on.
            assert_eq!(handoff.run(|| 1u8).await, Ok(1));
            drop(release);
        });
    }

    #[test]
    fn only_bursts_make_threads_spin() {
        let rt = runtime();
        let handoff = Arc::new(Handoff::default());
        rt.block_on(async {
            for _ in 0..5 {
                assert_eq!(handoff.run(|| ()).await, Ok(()));
                // Sparse on purpose: the gap between calls is what is
                // measured, not a state waited for.
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        });
        assert_eq!(handoff.hot_spells(), 0, "sparse calls must not spin");
        assert!(handoff.slot.is_cold());
        rt.block_on(async {
            for _ in 0..200 {
                assert_eq!(handoff.run(|| ()).await, Ok(()));
            }
        });
        if std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2 {
            assert!(
                handoff.hot_spells() > 0,
                "back-to-back calls should find a hot thread"
            );
        } else {
            assert_eq!(
                handoff.hot_spells(),
                0,
                "one CPU: spinning only delays the other thread"
            );
        }
    }
}
