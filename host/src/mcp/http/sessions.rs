//! Per-session cancellation for HTTP: each MCP session's calls share one
//! token, fired when the session ends (DELETE, idle expiry, server
//! shutdown), so its calls stop within the cancel grace instead of running
//! on until rmcp's own drain gives up on them. Then every module is told
//! the session ended ([`crate::session::end`]): its background jobs end
//! with it and its read records go.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use tokio::sync::Notify;

use crate::cancel::CancelToken;
use crate::host::Host;

/// What runs, on a blocking thread, once an ended session's calls are over.
pub type EndHook = Arc<dyn Fn(&str) + Send + Sync>;

/// How long past the cancel grace an ended session's calls may run before
/// its modules are told anyway.
const CALLS_MARGIN: Duration = Duration::from_secs(2);

/// Live sessions' cancel tokens and calls in flight, by session id.
#[derive(Default)]
pub struct SessionCalls {
    sessions: Mutex<HashMap<String, Session>>,
    /// Told (with the MCP session id) that a session ended.
    on_end: Option<EndHook>,
    /// How long an ended session's cancelled calls get to finish first.
    calls_grace: Duration,
}

#[derive(Default)]
struct Session {
    token: CancelToken,
    running: Arc<Running>,
}

/// A session's calls in flight.
#[derive(Default)]
struct Running {
    count: AtomicUsize,
    idle: Notify,
}

/// Held while a call of a session runs (see [`SessionCalls::enter`]).
pub struct CallGuard(Arc<Running>);

impl Drop for CallGuard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

impl Running {
    /// Waits until no call runs, for at most `limit`; returns whether none does.
    async fn wait_idle(&self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let notified = self.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.count.load(Ordering::Acquire) == 0 {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.count.load(Ordering::Acquire) == 0;
            }
        }
    }
}

impl SessionCalls {
    /// An empty registry (nobody is told of sessions' ends).
    pub fn new() -> Arc<Self> {
        Arc::new(SessionCalls::default())
    }

    /// An empty registry whose sessions' ends reach `host`'s modules, once
    /// their cancelled calls are over (or the cancel grace has passed): so
    /// a call that was starting a background job as the session ended does
    /// not leave the job behind.
    pub fn for_host(host: Arc<Host>) -> Arc<Self> {
        let grace = Duration::from_millis(host.plan.host.cancel_grace_ms);
        let hook: EndHook = Arc::new(move |session: &str| {
            crate::session::end(&host, &crate::session::http(session));
        });
        SessionCalls::with_end_hook(hook, grace + CALLS_MARGIN)
    }

    /// An empty registry that runs `on_end` for each ended session once its
    /// calls are over, waiting at most `calls_grace` for them.
    pub fn with_end_hook(on_end: EndHook, calls_grace: Duration) -> Arc<Self> {
        Arc::new(SessionCalls {
            sessions: Mutex::default(),
            on_end: Some(on_end),
            calls_grace,
        })
    }

    /// A call of `session` starts: the token that fires when the session
    /// ends, and a guard to hold until the call is over.
    pub fn enter(&self, session: &str) -> (CancelToken, CallGuard) {
        let mut sessions = self.lock();
        let entry = sessions.entry(session.to_owned()).or_default();
        entry.running.count.fetch_add(1, Ordering::AcqRel);
        (entry.token.clone(), CallGuard(entry.running.clone()))
    }

    /// The session ended: its calls are cancelled; once they are over (at
    /// most the cancel grace later) the end hook runs on a blocking thread.
    /// Call it inside the runtime.
    pub fn end(&self, session: &str) {
        let Some(ended) = self.lock().remove(session) else {
            return;
        };
        tracing::info!(session, "MCP session ended: cancelling its calls");
        ended.token.cancel();
        if let Some(hook) = self.on_end.clone() {
            let session = session.to_owned();
            let grace = self.calls_grace;
            tokio::spawn(async move {
                if !ended.running.wait_idle(grace).await {
                    tracing::warn!(
                        session,
                        "the ended session's calls still run past the grace; telling its modules now"
                    );
                }
                let _ = tokio::task::spawn_blocking(move || hook(&session)).await;
            });
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Ends, every `every`, the sessions rmcp no longer holds (expired idle,
/// closed by the client going away), and has the owners' table forget
/// them.
pub async fn sweep(
    calls: Arc<SessionCalls>,
    owners: Arc<super::owners::Owners>,
    manager: Arc<LocalSessionManager>,
    every: Duration,
) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let known: Vec<String> = calls.lock().keys().cloned().collect();
        let live = manager.sessions.read().await;
        let is_live = |id: &str| live.contains_key(id);
        owners.retain(is_live);
        let gone: Vec<String> = known.into_iter().filter(|id| !is_live(id)).collect();
        drop(live);
        for id in gone {
            calls.end(&id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ending_a_session_cancels_its_token_only() {
        let calls = SessionCalls::new();
        let (a, _ga) = calls.enter("a");
        let (b, _gb) = calls.enter("b");
        calls.end("a");
        assert!(a.is_cancelled());
        assert!(!b.is_cancelled());
        assert!(
            !calls.enter("a").0.is_cancelled(),
            "a new session with the id starts fresh"
        );
    }

    #[tokio::test]
    async fn modules_are_told_only_once_the_sessions_calls_are_over() {
        let (told_tx, mut told) = tokio::sync::mpsc::unbounded_channel();
        let hook: EndHook = Arc::new(move |session: &str| {
            let _ = told_tx.send(session.to_owned());
        });
        let calls = SessionCalls::with_end_hook(hook, Duration::from_secs(30));
        let (token, guard) = calls.enter("a");
        calls.end("a");
        assert!(token.is_cancelled());
        // The call is still running (its guard held): nobody is told yet.
        let early = tokio::time::timeout(Duration::from_millis(200), told.recv()).await;
        assert!(early.is_err(), "told while a call of the session still ran");
        drop(guard);
        let told = tokio::time::timeout(Duration::from_secs(10), told.recv()).await;
        assert_eq!(told.ok().flatten().as_deref(), Some("a"));
    }

    #[tokio::test]
    async fn a_call_that_never_ends_delays_the_end_only_by_the_grace() {
        let (told_tx, mut told) = tokio::sync::mpsc::unbounded_channel();
        let hook: EndHook = Arc::new(move |session: &str| {
            let _ = told_tx.send(session.to_owned());
        });
        let calls = SessionCalls::with_end_hook(hook, Duration::from_millis(100));
        let (_token, _stuck) = calls.enter("a");
        calls.end("a");
        let told = tokio::time::timeout(Duration::from_secs(10), told.recv()).await;
        assert_eq!(told.ok().flatten().as_deref(), Some("a"));
    }
}
