//! A mounted server's requests for input: an `elicitation/create` request
//! (revisions before 2026-07-28) or an `input_required` result
//! (2026-07-28). Each is passed to the caller when the plan lets it
//! (`[tools.mcp] elicitation = "pass"`, the default) and the caller can
//! answer (its MCP client declared form elicitation), through the call's
//! [`crate::ask::Asker`]; otherwise it is declined, saying why.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest, InputRequests, InputResponses,
    MetaObject,
};
use serde_json::json;

use crate::ask::Asker;

pub use crate::ask::InputPolicy;

/// Why a request was declined: nobody can answer.
const NO_CAPABILITY: &str =
    "the caller's MCP client did not declare the elicitation capability, so nobody can answer";
/// Why a request was declined: the plan says so.
const BY_PLAN: &str =
    "the plan declines this server's requests for input ([tools.mcp] elicitation = \"decline\")";

/// The calls in flight on one server, each with its caller's asker (if
/// any): where the server's `elicitation/create` goes. Over stdio such a
/// request does not say which call it belongs to, so it goes to the one
/// call in flight, and is declined when there are several.
#[derive(Default)]
pub struct Callers {
    next: AtomicU64,
    calls: Mutex<HashMap<u64, Option<Asker>>>,
}

/// A call's place among its server's callers; it leaves when dropped.
pub struct Entered {
    callers: Arc<Callers>,
    id: u64,
}

impl Drop for Entered {
    fn drop(&mut self) {
        self.callers
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.id);
    }
}

impl Callers {
    /// Counts a call in flight until the guard drops.
    pub fn enter(self: &Arc<Self>, asker: Option<Asker>) -> Entered {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, asker);
        Entered {
            callers: self.clone(),
            id,
        }
    }

    /// The asker of the one call in flight, or why there is none.
    fn pick(&self) -> Result<Asker, String> {
        let calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        match calls.len() {
            0 => Err("no call is in flight on this server".into()),
            1 => calls
                .values()
                .next()
                .cloned()
                .flatten()
                .ok_or_else(|| NO_CAPABILITY.to_string()),
            n => Err(format!(
                "{n} calls are in flight on this server, and its request does not say which caller to ask"
            )),
        }
    }
}

/// The answer to a server's `elicitation/create`: the caller's, or a
/// decline whose `_meta.toolhost.declined` says why (also logged).
pub async fn elicit(
    policy: InputPolicy,
    callers: &Callers,
    label: &str,
    request: ElicitRequestParams,
) -> ElicitResult {
    let asker = match policy {
        InputPolicy::Decline => Err(BY_PLAN.to_string()),
        InputPolicy::Pass => callers.pick(),
    };
    let answer = match asker {
        Ok(asker) => ask(&asker, &request).await,
        Err(why) => Err(why),
    };
    answer.unwrap_or_else(|why| {
        tracing::info!(server = %label, "declined the MCP server's request for input: {why}");
        let mut meta = MetaObject::new();
        meta.0.insert("toolhost".into(), json!({ "declined": why }));
        let mut declined = ElicitResult::new(ElicitationAction::Decline);
        declined.meta = Some(meta);
        declined
    })
}

/// The caller's answers to a 2026 `input_required` result's requests, or
/// why they cannot be had (the call then ends `input_declined`).
pub async fn fulfil(
    policy: InputPolicy,
    asker: Option<&Asker>,
    requests: &InputRequests,
) -> Result<InputResponses, String> {
    if policy == InputPolicy::Decline {
        return Err(BY_PLAN.into());
    }
    let asker = asker.ok_or(NO_CAPABILITY)?;
    let mut responses = InputResponses::new();
    for (key, request) in requests {
        let InputRequest::Elicitation(elicit) = request else {
            return Err(format!(
                "the server asked '{key}' by sampling or roots, which toolhost does not pass on"
            ));
        };
        let answer = ask(asker, &elicit.params).await?;
        responses.insert(
            key.clone(),
            serde_json::to_value(answer).map_err(|e| e.to_string())?,
        );
    }
    Ok(responses)
}

/// Asks the caller one form.
async fn ask(asker: &Asker, request: &ElicitRequestParams) -> Result<ElicitResult, String> {
    let params = serde_json::to_value(request).map_err(|e| e.to_string())?;
    let answer = asker(params).await?;
    serde_json::from_value(answer).map_err(|e| format!("the caller's answer is malformed: {e}"))
}
