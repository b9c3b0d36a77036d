//! The host's hand-written concurrency, in a crate of its own so that it can
//! be model-checked: built with `RUSTFLAGS="--cfg loom"`, every primitive
//! below is loom's, and `tests/loom.rs` explores every interleaving of the
//! races that matter (`cargo xtask loom` runs them in a target folder of
//! their own, so that the flag does not rebuild the workspace).
//!
//! - [`cancel::CancelToken`]: the cancel flag, its hooks and its blocking
//!   waiters (async waiters use tokio's `Notify`, which tokio checks).
//! - [`hot::HotSlot`]: the one-job slot through which a caller hands a job
//!   to a thread that spins waiting for it.
//! - [`readers::Readers`]: the threads that take turns reading the MCP
//!   server's stdin and run the calls they read.
//!
//! Everything else in the hand-off (the result channel, the thread pool) is
//! tokio's.

#![forbid(unsafe_code)]

pub mod cancel;
pub mod hot;
pub mod readers;

/// The primitives the two models use: std's normally, loom's under
/// `--cfg loom`. `Arc`/`Weak` stay std's (loom has no `Weak`; reference
/// counts are not what is being checked).
mod prim {
    #[cfg(loom)]
    pub(crate) use loom::sync::{
        atomic::{AtomicBool, AtomicU8, AtomicUsize},
        Condvar, Mutex, MutexGuard,
    };
    #[cfg(loom)]
    pub(crate) use loom::thread;
    #[cfg(not(loom))]
    pub(crate) use std::sync::{
        atomic::{AtomicBool, AtomicU8, AtomicUsize},
        Condvar, Mutex, MutexGuard,
    };
    #[cfg(not(loom))]
    pub(crate) use std::thread;

    /// One step of a spin loop: a CPU hint normally; under loom a yield, so
    /// that the model lets the other threads run.
    pub(crate) fn spin() {
        #[cfg(loom)]
        loom::thread::yield_now();
        #[cfg(not(loom))]
        std::hint::spin_loop();
    }

    /// Locks, ignoring poisoning: every critical section here leaves its
    /// data whole, so a panic elsewhere does not make it unusable.
    pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
        mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
