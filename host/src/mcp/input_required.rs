//! Approval by an input-required result, for clients on protocol
//! 2026-07-28 or later. That revision forbids the server to send requests
//! of its own (the elicitation older clients are asked with, see
//! [`super::elicit`]): a `tools/call` that needs approval is answered
//! `resultType: "input_required"`, holding the same one-field form as an
//! elicitation and a `requestState`; the client asks its user and sends
//! the call again with `inputResponses` and the `requestState` echoed.
//!
//! An answer counts only for the question it was asked: the state is
//! sealed (HMAC-SHA256 under a key made when the server starts) over the
//! principal, the tool's name and the arguments as sent, and expires
//! after [`STATE_TTL`]. A state that does not open (forged, tampered, expired,
//! sealed by another process of a fleet, or asked about another call) is
//! not an error: the question is asked again. Nothing is kept on the
//! server between the two requests, and a state may be used more than
//! once within its lifetime (the client that can answer "yes" once can do
//! so again: the seal keeps answers to the call they were given for, it
//! does not make them single-use). The audit log records the question as
//! `approval_required`, the retry as approved or declined.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ElicitResult, InputRequest, InputRequests, InputRequiredResult, InputResponses,
    RequestStateCodec, SealOptions,
};
use serde_json::{json, Map, Value};
use toolhost_core::{Status, ToolResult};

use super::elicit;
use crate::pipeline::{ApprovalRequest, Approver};

/// How long a client has to answer (and retry with) an approval question.
pub const STATE_TTL: Duration = Duration::from_secs(600);

/// The key of the approval question in `inputRequests` and of its answer
/// in `inputResponses`.
pub const APPROVAL_KEY: &str = "approval";

/// What a retried call brings back: the answers and the echoed state.
#[derive(Default)]
pub struct Retry {
    /// `inputResponses`, by key.
    pub responses: Option<InputResponses>,
    /// `requestState`, as the client echoed it.
    pub state: Option<String>,
}

/// One `tools/call` of a client that can be asked: who calls which tool
/// with what, and the answer its retry brings for this very call, if any.
pub struct Asking {
    tool: String,
    arguments: Value,
    /// What a state is sealed over (see [`bound_to`]).
    bound: Vec<u8>,
    answer: Option<bool>,
}

impl Asking {
    /// For a call of `tool` with `arguments` by `principal` from a client
    /// with `capabilities` (its request's `_meta`), carrying `retry`. `None`
    /// when the client cannot show a form: the pipeline then answers
    /// `approval_required`, as for an older client without elicitation.
    pub fn new(
        capabilities: Option<&ClientCapabilities>,
        principal: &str,
        tool: &str,
        arguments: Option<&Map<String, Value>>,
        retry: &Retry,
    ) -> Option<Asking> {
        // Without a sealing key no answer could be trusted: nobody is asked.
        if !shows_forms(capabilities) || codec().is_none() {
            return None;
        }
        let arguments = Value::Object(arguments.cloned().unwrap_or_default());
        let bound = bound_to(principal, tool, &arguments);
        let answer = answer_in(retry, tool, &bound);
        Some(Asking {
            tool: tool.to_string(),
            arguments,
            bound,
            answer,
        })
    }

    /// The approver for the pipeline: the retry's answer, when it brings
    /// one for this call. Without one there is no approver, and a call
    /// that needs approval comes back `approval_required` (recorded so),
    /// which [`Asking::question`] turns into the question.
    pub fn approver(&self) -> Option<Approver> {
        let answer = self.answer?;
        Some(Arc::new(move |_: ApprovalRequest| {
            Box::pin(std::future::ready(answer))
        }))
    }

    /// The input-required result to answer instead of `result`, when that
    /// is the pipeline's `approval_required` (and this call brought no
    /// answer): the form older clients get by elicitation, and the sealed
    /// state to echo.
    pub fn question(&self, result: &ToolResult) -> Option<InputRequiredResult> {
        if result.status != Status::ApprovalRequired || self.answer.is_some() {
            return None;
        }
        let details = result.error.as_ref().and_then(|e| e.details.as_ref());
        // Separation of duties: the caller's own answer would not count.
        if details.and_then(|d| d.get("approval")).and_then(Value::as_str) == Some("another_principal") {
            return None;
        }
        let reason = result
            .error
            .as_ref()
            .and_then(|e| e.details.as_ref())
            .and_then(|d| d.get("rule"))
            .and_then(Value::as_str)
            .unwrap_or("the plan says ask");
        let form = elicit::form(&ApprovalRequest {
            tool: self.tool.clone(),
            reason: reason.to_string(),
            input: self.arguments.clone(),
        })?;
        let elicitation: InputRequest = serde_json::from_value(json!({
            "method": "elicitation/create",
            "params": form,
        }))
        .map_err(|e| tracing::error!("cannot build the approval input request: {e}"))
        .ok()?;
        let state = codec()?.seal_with(
            APPROVAL_KEY.as_bytes(),
            &SealOptions::new().associated_data(&self.bound).ttl(STATE_TTL),
        );
        let requests = InputRequests::from([(APPROVAL_KEY.to_string(), elicitation)]);
        Some(InputRequiredResult::new(Some(requests), Some(state)))
    }
}

/// Whether a client declared form elicitation (or elicitation without a
/// mode, which means forms).
fn shows_forms(capabilities: Option<&ClientCapabilities>) -> bool {
    capabilities
        .and_then(|c| c.elicitation.as_ref())
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// The retry's answer: `None` when it brings none, or its state was not
/// sealed over `bound` (then the question is asked again).
fn answer_in(retry: &Retry, tool: &str, bound: &[u8]) -> Option<bool> {
    let state = retry.state.as_deref()?;
    let response = retry.responses.as_ref()?.get(APPROVAL_KEY)?;
    if let Err(e) = codec()?.open_with(state, bound) {
        tracing::info!(
            tool,
            "asking again: the approval's requestState does not hold ({e})"
        );
        return None;
    }
    match serde_json::from_value::<ElicitResult>(response.clone()) {
        Ok(answer) => Some(elicit::approved(&answer)),
        Err(e) => {
            tracing::info!(
                tool,
                "asking again: the approval answer is no elicitation result ({e})"
            );
            None
        }
    }
}

/// What a state is sealed over: who asks, to run what, with which input.
fn bound_to(principal: &str, tool: &str, arguments: &Value) -> Vec<u8> {
    Value::Array(vec![
        Value::from(principal),
        Value::from(tool),
        Value::from(arguments.to_string()),
    ])
    .to_string()
    .into_bytes()
}

/// The process's sealing key, made at first use from the OS's random
/// source; `None` if it gave nothing (an unguessable key is the point).
fn codec() -> Option<&'static RequestStateCodec> {
    static CODEC: std::sync::OnceLock<Option<RequestStateCodec>> = std::sync::OnceLock::new();
    CODEC
        .get_or_init(|| {
            let mut key = [0u8; RequestStateCodec::MIN_KEY_LENGTH];
            match getrandom::fill(&mut key) {
                Ok(()) => RequestStateCodec::try_new(key.to_vec()).ok(),
                Err(e) => {
                    tracing::error!("no key to seal approval questions with: {e}");
                    None
                }
            }
        })
        .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ElicitationCapability;

    fn forms() -> ClientCapabilities {
        let mut caps = ClientCapabilities::default();
        caps.elicitation = Some(ElicitationCapability::default());
        caps
    }

    fn args(command: &str) -> Map<String, Value> {
        json!({ "command": command }).as_object().cloned().unwrap()
    }

    fn needs_approval() -> ToolResult {
        ToolResult::failure(
            "c1",
            Status::ApprovalRequired,
            "approval_required",
            "needs approval",
        )
        .with_details(json!({ "rule": "[policy.tools.bash] decision = \"ask\"" }))
    }

    fn answered(principal: &str, command: &str, state: &str, reply: Value) -> Option<bool> {
        let retry = Retry {
            responses: Some(InputResponses::from([(APPROVAL_KEY.to_string(), reply)])),
            state: Some(state.to_string()),
        };
        Asking::new(Some(&forms()), principal, "bash", Some(&args(command)), &retry)
            .unwrap()
            .answer
    }

    #[test]
    fn an_answer_holds_only_for_the_call_it_was_asked_about() {
        let first = Asking::new(
            Some(&forms()),
            "alice",
            "bash",
            Some(&args("ls")),
            &Retry::default(),
        )
        .unwrap();
        assert!(first.approver().is_none(), "nothing answered yet");
        let question = first.question(&needs_approval()).expect("the question is asked");
        let requests = serde_json::to_value(question.input_requests.unwrap()).unwrap();
        assert!(requests[APPROVAL_KEY]["params"]["message"]
            .as_str()
            .unwrap()
            .contains("ls"));
        let state = question.request_state.unwrap();
        let yes = json!({"action": "accept", "content": {"approve": true}});
        assert_eq!(answered("alice", "ls", &state, yes.clone()), Some(true));
        assert_eq!(
            answered("alice", "ls", &state, json!({"action": "decline"})),
            Some(false)
        );
        assert_eq!(
            answered("alice", "rm -rf /", &state, yes.clone()),
            None,
            "other input"
        );
        assert_eq!(
            answered("bob", "ls", &state, yes.clone()),
            None,
            "other principal"
        );
        assert_eq!(
            answered("alice", "ls", "rs1.forged", yes.clone()),
            None,
            "forged state"
        );
        assert_eq!(
            answered("alice", "ls", &state, json!("yes")),
            None,
            "no elicitation result"
        );
    }

    #[test]
    fn only_approval_required_becomes_a_question() {
        let asking = Asking::new(Some(&forms()), "alice", "bash", None, &Retry::default()).unwrap();
        let denied = ToolResult::failure("c1", Status::PolicyDenied, "denied", "no");
        assert!(asking.question(&denied).is_none());
        assert!(asking.question(&needs_approval()).is_some());
    }

    #[test]
    fn a_client_without_forms_is_not_asked() {
        let none = Retry::default();
        assert!(Asking::new(None, "alice", "bash", None, &none).is_none());
        assert!(Asking::new(Some(&ClientCapabilities::default()), "alice", "bash", None, &none).is_none());
    }
}
