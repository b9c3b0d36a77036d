//! The state store a call is lent (see `toolhost_core::state`): which calls
//! get one, and the owner and scope the host fixes for them.
//!
//! A call without a session (an MCP 2026-07-28 request over HTTP) is owned
//! by its principal, and with `[host] state_url` its module keeps what must
//! outlive the call in the fleet's PostgreSQL, under
//! `principal:<name>` and the module's mount name, so the principal's next
//! call may land on any host. Every other call (a session's: MCP session,
//! stdio, CLI) gets none and its module keeps its state in memory, by
//! session, as before.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use toolhost_core::state::{Answer, Request};

use crate::context::LentState;
use crate::state::postgres::principal_kv::PrincipalKv;
use crate::state::StateError;

/// The fleet's key/value store, opened at the first call that needs it.
#[derive(Default)]
pub(crate) struct Lender {
    kv: OnceLock<Option<Arc<PrincipalKv>>>,
}

impl Lender {
    /// The state lent to a call of module mount `scope` owned by
    /// `principal` (`None`: the call has a session), or `None`.
    pub(crate) fn lend(
        &self,
        state_url: Option<&str>,
        principal: Option<&str>,
        scope: &str,
    ) -> Option<Arc<dyn LentState>> {
        let (url, principal) = (state_url?, principal?);
        let kv = self
            .kv
            .get_or_init(|| match PrincipalKv::open(url) {
                Ok(kv) => Some(Arc::new(kv)),
                Err(e) => {
                    tracing::error!("cannot open the principal state store: {e}");
                    None
                }
            })
            .clone()?;
        Some(Arc::new(Lent {
            kv,
            owner: format!("principal:{principal}"),
            scope: scope.to_string(),
        }))
    }
}

/// One call's view: the owner and scope fixed.
struct Lent {
    kv: Arc<PrincipalKv>,
    owner: String,
    scope: String,
}

fn failed(e: StateError) -> Answer {
    Answer::failed("unavailable", e.to_string())
}

impl LentState for Lent {
    fn perform(&self, request: &Request) -> Answer {
        let (owner, scope) = (self.owner.as_str(), self.scope.as_str());
        match request {
            Request::Get { key } => self.kv.get(owner, scope, key).map_or_else(failed, Answer::ok),
            Request::Put { key, value, ttl_ms } => self
                .kv
                .put(owner, scope, key, value, ttl_ms.map(Duration::from_millis))
                .map_or_else(failed, |()| Answer::ok(None)),
            Request::Delete { key } => self
                .kv
                .delete(owner, scope, key)
                .map_or_else(failed, |()| Answer::ok(None)),
            Request::Grant { .. } | Request::Release => Answer::failed(
                "bad_request",
                "grants are issued and released by the context and coordinator",
            ),
        }
    }

    fn scope(&self) -> &str {
        &self.scope
    }
}
