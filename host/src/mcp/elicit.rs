//! Approval through MCP elicitation: when the plan says `ask`, the client's
//! user is asked (a form with one yes/no field). Without the client's
//! elicitation capability there is no approver, and the pipeline answers
//! `approval_required` with the reason.

use std::sync::Arc;

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use rmcp::service::ElicitationMode;
use rmcp::{Peer, RoleServer};
use serde_json::{json, Value};

use crate::cancel::CancelToken;
use crate::pipeline::{ApprovalRequest, Approver};

/// The longest input shown in the question, in bytes.
const MAX_SHOWN_INPUT: usize = 2000;

/// An approver that asks the client, if it declared form elicitation. The
/// question is abandoned (and the call denied) when `cancel` fires.
pub fn approver(peer: &Peer<RoleServer>, cancel: CancelToken) -> Option<Approver> {
    if !peer
        .supported_elicitation_modes()
        .contains(&ElicitationMode::Form)
    {
        return None;
    }
    let peer = peer.clone();
    Some(Arc::new(move |request: ApprovalRequest| {
        let peer = peer.clone();
        let cancel = cancel.clone();
        Box::pin(async move {
            let Some(params) = form(&request) else {
                return false;
            };
            tokio::select! {
                answer = peer.create_elicitation(params) => match answer {
                    Ok(answer) => approved(&answer),
                    Err(e) => {
                        tracing::warn!(tool = %request.tool, "approval request failed: {e}");
                        false
                    }
                },
                _ = cancel.cancelled() => false,
            }
        })
    }))
}

/// An asker that passes a backend's request for input (an elicitation
/// form, as MCP `ElicitRequestParams` JSON) to the client, if it declared
/// form elicitation; the question is abandoned when `cancel` fires.
pub fn asker(peer: &Peer<RoleServer>, cancel: CancelToken) -> Option<crate::ask::Asker> {
    if !peer
        .supported_elicitation_modes()
        .contains(&ElicitationMode::Form)
    {
        return None;
    }
    let peer = peer.clone();
    Some(Arc::new(move |params: Value| {
        let (peer, cancel) = (peer.clone(), cancel.clone());
        Box::pin(async move {
            let params: ElicitRequestParams = serde_json::from_value(params)
                .map_err(|e| format!("the request for input is malformed: {e}"))?;
            tokio::select! {
                answer = peer.create_elicitation(params) => match answer {
                    Ok(answer) => serde_json::to_value(answer).map_err(|e| e.to_string()),
                    Err(e) => Err(format!("the caller's client did not answer: {e}")),
                },
                _ = cancel.cancelled() => Err("the call was cancelled".to_string()),
            }
        })
    }))
}

/// The question: which tool, why, with what input; one boolean to answer.
pub(super) fn form(request: &ApprovalRequest) -> Option<ElicitRequestParams> {
    let mut input = serde_json::to_string_pretty(&request.input).unwrap_or_default();
    if input.len() > MAX_SHOWN_INPUT {
        let mut cut = MAX_SHOWN_INPUT;
        while !input.is_char_boundary(cut) {
            cut -= 1;
        }
        input.truncate(cut);
        input.push_str("\n…");
    }
    let message = format!(
        "Allow the tool '{}' to run?\nApproval is needed: {}\nInput:\n{input}",
        request.tool, request.reason
    );
    let params = json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {
                "approve": {
                    "type": "boolean",
                    "title": "Approve",
                    "description": format!("Run {} with this input", request.tool),
                    "default": true
                }
            },
            "required": ["approve"]
        }
    });
    serde_json::from_value(params)
        .map_err(|e| tracing::error!("cannot build the approval form: {e}"))
        .ok()
}

/// Approved when the user accepted and did not answer `approve: false`.
pub(super) fn approved(answer: &ElicitResult) -> bool {
    answer.action == ElicitationAction::Accept
        && answer
            .content
            .as_ref()
            .and_then(|c| c.get("approve"))
            .and_then(Value::as_bool)
            .unwrap_or(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_parses_and_answers_read_right() {
        let request = ApprovalRequest {
            tool: "bash".into(),
            reason: "[policy.tools.bash] decision = \"ask\"".into(),
            input: json!({"command": "x".repeat(5000)}),
        };
        assert!(form(&request).is_some());
        let accept = ElicitResult::new(ElicitationAction::Accept);
        assert!(approved(&accept));
        assert!(!approved(&accept.clone().with_content(json!({"approve": false}))));
        assert!(!approved(&ElicitResult::new(ElicitationAction::Decline)));
        assert!(!approved(&ElicitResult::new(ElicitationAction::Cancel)));
    }
}
