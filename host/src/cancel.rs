//! A cancel token both sides can use: async code awaits it, a module's
//! blocking thread polls or waits on it through the call context.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// Cancellation for one call (or for the whole process, at shutdown).
#[derive(Clone, Default)]
pub struct CancelToken(Arc<Inner>);

#[derive(Default)]
struct Inner {
    cancelled: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
    notify: Notify,
}

impl CancelToken {
    /// A fresh, uncancelled token.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels; wakes every waiter, blocking or async. Idempotent.
    pub fn cancel(&self) {
        let _held = self.0.lock.lock();
        self.0.cancelled.store(true, Ordering::SeqCst);
        self.0.wake.notify_all();
        self.0.notify.notify_waiters();
    }

    /// Whether it has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }

    /// Blocks up to `timeout` for cancellation; returns whether cancelled.
    pub fn wait_blocking(&self, timeout: Duration) -> bool {
        let end = Instant::now().checked_add(timeout);
        let Ok(mut held) = self.0.lock.lock() else {
            return self.is_cancelled();
        };
        while !self.is_cancelled() {
            let left = match end {
                Some(end) => end.saturating_duration_since(Instant::now()),
                None => Duration::from_secs(3600),
            };
            if left.is_zero() {
                break;
            }
            match self.0.wake.wait_timeout(held, left) {
                Ok((h, _)) => held = h,
                Err(_) => break,
            }
        }
        self.is_cancelled()
    }

    /// Resolves once cancelled.
    pub async fn cancelled(&self) {
        loop {
            let notified = self.0.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}
