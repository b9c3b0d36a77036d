//! Connections that have not yet shown a token: their own small budget and
//! a short deadline, so they cannot starve the ones that have.
//!
//! Until a request on it carries a token the server knows (headers read,
//! token checked), a connection is *unauthenticated*: it counts against
//! `max_unauthenticated` only, never against `max_connections`, and it is
//! closed when it has not authenticated within the deadline. When the
//! budget is full, a new connection is still taken: the oldest waiting one
//! is closed for it. A client with the token sends its headers at once and
//! is through in a moment; half-sent requests held open by anyone on the
//! machine only ever push each other out.
//!
//! (hyper's own header read timeout stays on for every connection, for the
//! headers of each request and an idle keep-alive; it cannot tell a
//! connection that authenticated from one that never will, so the shorter
//! deadline for the latter is kept here.)

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::cancel::CancelToken;

/// The unauthenticated connections waiting, oldest first.
pub struct Unauthenticated {
    max: usize,
    deadline: Duration,
    waiting: Mutex<BTreeMap<u64, CancelToken>>,
    next: AtomicU64,
    /// Connections closed to make room (for the log and tests).
    evicted: AtomicU64,
}

/// One connection's standing.
pub struct Pending {
    id: u64,
    registry: Arc<Unauthenticated>,
    evicted: CancelToken,
    authenticated: AtomicBool,
}

impl Unauthenticated {
    /// At most `max` (at least one) unauthenticated connections, each given
    /// `deadline` to authenticate.
    pub fn new(max: usize, deadline: Duration) -> Arc<Unauthenticated> {
        Arc::new(Unauthenticated {
            max: max.max(1),
            deadline,
            waiting: Mutex::new(BTreeMap::new()),
            next: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, CancelToken>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A connection was accepted: it waits among the unauthenticated, and
    /// the oldest waiting ones are closed if the budget is exceeded.
    pub fn arrive(self: &Arc<Self>) -> Arc<Pending> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let evicted = CancelToken::new();
        let mut waiting = self.lock();
        waiting.insert(id, evicted.clone());
        while waiting.len() > self.max {
            if let Some((_, oldest)) = waiting.pop_first() {
                oldest.cancel();
                self.evicted.fetch_add(1, Ordering::Relaxed);
            }
        }
        drop(waiting);
        Arc::new(Pending {
            id,
            registry: self.clone(),
            evicted,
            authenticated: AtomicBool::new(false),
        })
    }

    /// How many connections were closed to make room so far.
    pub fn evicted(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }
}

impl Pending {
    /// A request on the connection carried a known token: it leaves the
    /// unauthenticated budget and its deadline.
    pub fn authenticated(&self) {
        if !self.authenticated.swap(true, Ordering::AcqRel) {
            self.registry.lock().remove(&self.id);
        }
    }

    /// Resolves when the connection must close: pushed out for a newer
    /// one, or its deadline passed, before it authenticated. Never resolves
    /// once it has authenticated.
    pub async fn expired(&self) {
        tokio::select! {
            _ = self.evicted.cancelled() => {}
            _ = tokio::time::sleep(self.registry.deadline) => {}
        }
        // Pushed out or out of time, a connection that authenticated in the
        // meantime (its request already read when the eviction came) stays.
        if self.authenticated.load(Ordering::Acquire) {
            std::future::pending::<()>().await;
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.authenticated.load(Ordering::Acquire) {
            self.registry.lock().remove(&self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_oldest_waiting_connection_makes_room() {
        let budget = Unauthenticated::new(2, Duration::from_secs(3600));
        let first = budget.arrive();
        let second = budget.arrive();
        second.authenticated();
        let third = budget.arrive();
        assert_eq!(budget.evicted(), 0, "an authenticated one no longer counts");
        let fourth = budget.arrive();
        assert_eq!(budget.evicted(), 1);
        let pushed_out = tokio::time::timeout(Duration::from_secs(5), first.expired()).await;
        assert!(pushed_out.is_ok(), "the oldest was closed");
        let kept = tokio::time::timeout(Duration::from_millis(50), third.expired()).await;
        assert!(kept.is_err(), "a newer one stays");
        drop((third, fourth));
        assert!(budget.lock().is_empty());
    }

    #[tokio::test]
    async fn a_connection_pushed_out_but_authenticated_since_stays() {
        let budget = Unauthenticated::new(1, Duration::from_secs(3600));
        let first = budget.arrive();
        let _second = budget.arrive();
        assert_eq!(budget.evicted(), 1);
        // Its request, waiting when the eviction came, showed a known token.
        first.authenticated();
        let kept = tokio::time::timeout(Duration::from_millis(100), first.expired()).await;
        assert!(
            kept.is_err(),
            "an authenticated connection is never closed for room"
        );
    }

    #[tokio::test]
    async fn only_unauthenticated_connections_have_a_deadline() {
        let budget = Unauthenticated::new(8, Duration::from_millis(50));
        let waiting = budget.arrive();
        let through = budget.arrive();
        through.authenticated();
        assert!(tokio::time::timeout(Duration::from_secs(5), waiting.expired())
            .await
            .is_ok());
        assert!(
            tokio::time::timeout(Duration::from_millis(300), through.expired())
                .await
                .is_err()
        );
    }
}
