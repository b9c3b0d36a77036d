//! `notifications/tools/list_changed` to the host's own MCP clients when
//! its tool list changes (a mounted MCP server changed its list): clients
//! cache `tools/list`, so without it they would not learn of new tools.
//!
//! Clients of the older revisions are told on their session (added at
//! `initialize`); 2026-07-28 clients have no session and ask instead with a
//! `subscriptions/listen` request, which waits on [`Subscribers::changes`].

use std::sync::{Arc, Mutex, PoisonError};

use rmcp::service::Peer;
use rmcp::RoleServer;
use tokio::runtime::Handle;
use tokio::sync::watch;

use crate::host::Host;

/// A connected client and the runtime its session runs on.
type Subscriber = (Peer<RoleServer>, Handle);

/// The connected clients to tell, and a count of changes that
/// `subscriptions/listen` requests wait on.
#[derive(Clone)]
pub struct Subscribers {
    peers: Arc<Mutex<Vec<Subscriber>>>,
    changes: Arc<watch::Sender<u64>>,
}

impl Subscribers {
    /// Clients of `host`, told when its tool list changes.
    pub fn watch(host: &Host) -> Self {
        let subscribers = Subscribers {
            peers: Arc::default(),
            changes: Arc::new(watch::Sender::new(0)),
        };
        let peers = Arc::downgrade(&subscribers.peers);
        let changes = Arc::downgrade(&subscribers.changes);
        host.on_tools_changed(Arc::new(move || {
            if let Some(changes) = changes.upgrade() {
                changes.send_modify(|n| *n = n.wrapping_add(1));
            }
            let Some(peers) = peers.upgrade() else { return };
            let mut peers = peers.lock().unwrap_or_else(PoisonError::into_inner);
            peers.retain(|(peer, _)| !peer.is_transport_closed());
            for (peer, runtime) in peers.iter() {
                let peer = peer.clone();
                runtime.spawn(async move {
                    if let Err(e) = peer.notify_tool_list_changed().await {
                        tracing::debug!("could not tell a client its tool list changed: {e}");
                    }
                });
            }
        }));
        subscribers
    }

    /// Adds a client (at its `initialize`, on its session's runtime;
    /// outside a runtime it is not added).
    pub fn add(&self, peer: Peer<RoleServer>) {
        let Ok(runtime) = Handle::try_current() else {
            return;
        };
        let mut peers = self.peers.lock().unwrap_or_else(PoisonError::into_inner);
        peers.retain(|(peer, _)| !peer.is_transport_closed());
        peers.push((peer, runtime));
    }

    /// Wakes (`changed()`) each time the tool list changes from now on.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
}
