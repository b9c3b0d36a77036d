//! `notifications/tools/list_changed` to the host's own MCP clients when
//! its tool list changes (a mounted MCP server changed its list): clients
//! cache `tools/list`, so without it they would not learn of new tools.

use std::sync::{Arc, Mutex, PoisonError};

use rmcp::service::Peer;
use rmcp::RoleServer;
use tokio::runtime::Handle;

use crate::host::Host;

/// A connected client and the runtime its session runs on.
type Subscriber = (Peer<RoleServer>, Handle);

/// The connected clients to tell.
#[derive(Clone, Default)]
pub struct Subscribers(Arc<Mutex<Vec<Subscriber>>>);

impl Subscribers {
    /// Clients of `host`, told when its tool list changes.
    pub fn watch(host: &Host) -> Self {
        let subscribers = Subscribers::default();
        let peers = Arc::downgrade(&subscribers.0);
        host.on_tools_changed(Arc::new(move || {
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
        let mut peers = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        peers.retain(|(peer, _)| !peer.is_transport_closed());
        peers.push((peer, runtime));
    }
}
