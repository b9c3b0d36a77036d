//! Noticing that a server reached by URL has gone while calls wait on it.
//!
//! A stdio server is a child process: its end is seen by waiting on it. A
//! streamable-HTTP server is not, and rmcp's HTTP client does not report a
//! response stream that breaks under a call (the call would wait for its
//! timeout). So while at least one call is in flight on such a connection,
//! one task per connection sends an MCP `ping` every [`EVERY`]: a ping that
//! fails at the transport (connection refused or reset, the session gone)
//! ends the connection, which answers every waiting call `module_crashed`
//! and makes the next call reconnect with the crash backoff. A ping the
//! server answers with an error still proves it alive; one that gets no
//! answer within [`PATIENCE`] is not taken as a loss (a busy server), so a
//! server that hangs without closing its socket is left to the calls'
//! own timeouts.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, Weak};
use std::time::Duration;

use rmcp::model::{ClientRequest, PingRequest};
use rmcp::service::ServiceError;
use serde_json::json;

use super::runtime;
use super::server::{Conn, Server};
use toolhost_supervise::Ended;

/// How often a connection with calls in flight is probed.
const EVERY: Duration = Duration::from_millis(500);
/// How long one ping may take before the next is sent.
const PATIENCE: Duration = Duration::from_secs(10);

/// A connection's calls in flight and its probe.
#[derive(Default)]
pub(crate) struct Watch {
    in_flight: AtomicUsize,
    probing: AtomicBool,
}

/// Counts a call in flight on `conn` until dropped; with `probe`, makes
/// sure one probe task watches the connection meanwhile.
pub(super) fn watch(server: &Arc<Server>, conn: &Arc<Conn>, probe: bool) -> InFlight {
    conn.watch.in_flight.fetch_add(1, Ordering::SeqCst);
    if probe && !conn.watch.probing.swap(true, Ordering::SeqCst) {
        let (server, watched) = (Arc::downgrade(server), conn.clone());
        match runtime::handle() {
            Ok(handle) => {
                handle.spawn(run(server, watched));
            }
            Err(e) => {
                conn.watch.probing.store(false, Ordering::SeqCst);
                tracing::warn!("cannot probe the MCP server: {e}");
            }
        }
    }
    InFlight(conn.clone())
}

/// A call in flight (see [`watch`]).
pub(super) struct InFlight(Arc<Conn>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.watch.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Whether the probe of `conn` should go on.
fn wanted(conn: &Conn) -> bool {
    conn.watch.in_flight.load(Ordering::SeqCst) > 0
        && !conn.closing.load(Ordering::SeqCst)
        && conn
            .ended
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
}

async fn run(server: Weak<Server>, conn: Arc<Conn>) {
    loop {
        tokio::time::sleep(EVERY).await;
        if !wanted(&conn) {
            conn.watch.probing.store(false, Ordering::SeqCst);
            // A call that arrived between the check and the store saw a
            // probe still running: carry on for it.
            if wanted(&conn) && !conn.watch.probing.swap(true, Ordering::SeqCst) {
                continue;
            }
            return;
        }
        let ping = conn
            .peer
            .send_request(ClientRequest::PingRequest(PingRequest::default()));
        let lost = match tokio::time::timeout(PATIENCE, ping).await {
            Ok(Ok(_)) | Ok(Err(ServiceError::McpError(_))) | Err(_) => None,
            Ok(Err(e)) => Some(e.to_string()),
        };
        if let Some(message) = lost {
            let Some(server) = server.upgrade() else { return };
            tracing::warn!(server = %server.label(), "a liveness probe failed: {message}");
            server.ended(
                &conn,
                Ended {
                    why: format!("lost its connection (a liveness probe failed: {message})"),
                    details: json!({}),
                },
            );
            conn.watch.probing.store(false, Ordering::SeqCst);
            return;
        }
    }
}
