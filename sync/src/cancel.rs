//! A cancel token both sides can use: async code awaits it, a module's
//! blocking thread polls or waits on it through the call context, and code
//! that is neither (a watchdog, a call running on its caller's thread) hooks
//! a callback onto it.
//!
//! Why not tokio-util's `CancellationToken`: it has no blocking wait and no
//! callbacks, the two things a module's thread and the watchdog need. The
//! races between `cancel`, `on_cancel`, dropping a hook and a blocking wait
//! are model-checked in `tests/loom.rs`.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::prim::{lock, AtomicBool, Condvar, Mutex};

/// Cancellation for one call (or for the whole process, at shutdown).
#[derive(Clone, Default)]
pub struct CancelToken(Arc<Inner>);

type Callback = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Inner {
    cancelled: AtomicBool,
    /// Callbacks still to run on cancel, by id; the condvar waits on it.
    hooks: Mutex<Hooks>,
    wake: Condvar,
    notify: Notify,
}

#[derive(Default)]
struct Hooks {
    next: u64,
    pending: Vec<(u64, Callback)>,
}

/// A callback hooked onto a token with [`CancelToken::on_cancel`]; dropping
/// it unhooks the callback unless a `cancel` has already taken it to run
/// (so a callback may still run, once, just after its guard is dropped).
#[must_use = "dropping the hook unhooks its callback"]
pub struct OnCancel {
    token: Weak<Inner>,
    id: u64,
}

impl Drop for OnCancel {
    fn drop(&mut self) {
        if let Some(inner) = self.token.upgrade() {
            lock(&inner.hooks).pending.retain(|(id, _)| *id != self.id);
        }
    }
}

impl CancelToken {
    /// A fresh, uncancelled token.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels; wakes every waiter, blocking or async, and runs the hooked
    /// callbacks (on this thread, after the wake-ups). Idempotent.
    pub fn cancel(&self) {
        let callbacks = {
            let mut hooks = lock(&self.0.hooks);
            // Set under the lock: a hook added after this sees the flag and
            // runs at once; one added before is in `pending`.
            self.0.cancelled.store(true, Ordering::SeqCst);
            self.0.wake.notify_all();
            self.0.notify.notify_waiters();
            std::mem::take(&mut hooks.pending)
        };
        for (_, callback) in callbacks {
            callback();
        }
    }

    /// Runs `callback` once when the token is cancelled: at once (on this
    /// thread) if it already is, else on the thread that cancels it. The
    /// callback must not block; it is unhooked when the returned guard
    /// drops first.
    pub fn on_cancel(&self, callback: impl FnOnce() + Send + 'static) -> OnCancel {
        let mut hooks = lock(&self.0.hooks);
        hooks.next += 1;
        let id = hooks.next;
        if self.is_cancelled() {
            drop(hooks);
            callback();
        } else {
            hooks.pending.push((id, Box::new(callback)));
        }
        OnCancel {
            token: Arc::downgrade(&self.0),
            id,
        }
    }

    /// Whether it has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }

    /// Blocks up to `timeout` for cancellation; returns whether cancelled.
    pub fn wait_blocking(&self, timeout: Duration) -> bool {
        let end = Instant::now().checked_add(timeout);
        let mut held = lock(&self.0.hooks);
        while !self.is_cancelled() {
            let left = match end {
                Some(end) => end.saturating_duration_since(Instant::now()),
                None => Duration::from_secs(3600),
            };
            if left.is_zero() {
                break;
            }
            held = match self.0.wake.wait_timeout(held, left) {
                Ok((held, _)) => held,
                Err(poisoned) => poisoned.into_inner().0,
            };
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn counter() -> (Arc<AtomicUsize>, impl FnOnce() + Send + 'static) {
        let count = Arc::new(AtomicUsize::new(0));
        let bump = count.clone();
        (count, move || {
            bump.fetch_add(1, Ordering::SeqCst);
        })
    }

    #[test]
    fn hooks_run_once_on_cancel_and_not_after_unhooking() {
        let token = CancelToken::new();
        let (ran, hook) = counter();
        let _kept = token.on_cancel(hook);
        let (unhooked, other) = counter();
        drop(token.on_cancel(other));
        token.cancel();
        token.cancel();
        assert_eq!(
            ran.load(Ordering::SeqCst),
            1,
            "runs once, however often cancelled"
        );
        assert_eq!(unhooked.load(Ordering::SeqCst), 0, "a dropped hook never runs");
    }

    #[test]
    fn a_hook_on_a_cancelled_token_runs_at_once() {
        let token = CancelToken::new();
        token.cancel();
        let (ran, hook) = counter();
        let _hook = token.on_cancel(hook);
        assert_eq!(ran.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_hook_may_cancel_other_tokens_and_hook_again() {
        let (outer, inner) = (CancelToken::new(), CancelToken::new());
        let chained = inner.clone();
        let _link = outer.on_cancel(move || chained.cancel());
        let (ran, hook) = counter();
        let _hook = inner.on_cancel(hook);
        outer.cancel();
        assert!(inner.is_cancelled());
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        assert!(
            inner.wait_blocking(Duration::from_millis(1)),
            "blocking waiters see it"
        );
    }
}
