//! Per-session cancellation for HTTP: each MCP session's calls share one
//! token, fired when the session ends (DELETE, idle expiry, server
//! shutdown), so its calls stop within the cancel grace instead of running
//! on until rmcp's own drain gives up on them. Then every module is told
//! the session ended ([`crate::session::end`]): its background jobs end
//! with it and its read records go.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use crate::cancel::CancelToken;
use crate::host::Host;

/// Live sessions' cancel tokens, by session id.
#[derive(Default)]
pub struct SessionCalls {
    tokens: Mutex<HashMap<String, CancelToken>>,
    /// Whose modules hear of a session's end.
    host: Option<Arc<Host>>,
}

impl SessionCalls {
    /// An empty registry (modules are not told of sessions' ends).
    pub fn new() -> Arc<Self> {
        Arc::new(SessionCalls::default())
    }

    /// An empty registry whose sessions' ends reach `host`'s modules.
    pub fn for_host(host: Arc<Host>) -> Arc<Self> {
        Arc::new(SessionCalls {
            tokens: Mutex::default(),
            host: Some(host),
        })
    }

    /// The token of `session` (made on first use).
    pub fn token(&self, session: &str) -> CancelToken {
        self.lock().entry(session.to_owned()).or_default().clone()
    }

    /// The session ended: its calls are cancelled, then (on a blocking
    /// thread; call this inside the runtime) its modules are told.
    pub fn end(&self, session: &str) {
        let Some(token) = self.lock().remove(session) else {
            return;
        };
        tracing::info!(session, "MCP session ended: cancelling its calls");
        token.cancel();
        if let Some(host) = &self.host {
            let host = host.clone();
            let session = crate::session::http(session);
            tokio::task::spawn_blocking(move || crate::session::end(&host, &session));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancelToken>> {
        self.tokens.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Ends, every `every`, the sessions rmcp no longer holds (expired idle,
/// closed by the client going away).
pub async fn sweep(calls: Arc<SessionCalls>, manager: Arc<LocalSessionManager>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let known: Vec<String> = calls.lock().keys().cloned().collect();
        if known.is_empty() {
            continue;
        }
        let live = manager.sessions.read().await;
        let gone: Vec<String> = known
            .into_iter()
            .filter(|id| !live.keys().any(|live| live.as_ref() == id.as_str()))
            .collect();
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
        let a = calls.token("a");
        let b = calls.token("b");
        calls.end("a");
        assert!(a.is_cancelled());
        assert!(!b.is_cancelled());
        assert!(
            !calls.token("a").is_cancelled(),
            "a new session with the id starts fresh"
        );
    }
}
