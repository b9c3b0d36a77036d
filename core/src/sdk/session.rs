//! Session end: how the host tells a module that a session (an MCP HTTP
//! session, a stdio client, one CLI process) is over, so that the module
//! drops what it keeps for it (background jobs, files read, undo history).
//!
//! No ABI change: the host sends, through a tool's ordinary `execute`, a
//! reserved request that is deliberately *not* a valid `CallRequest` (it has
//! no `input` and no `working_dir`). This SDK recognises it when the normal
//! parse fails, so the common path pays nothing, and runs the handlers the
//! module registered with [`Coordinator::on_session_end`]. A module built on
//! an older SDK answers "malformed call request" and runs no tool: the host
//! ignores that answer.
//!
//! [`Coordinator::on_session_end`]: super::coordinator::Coordinator::on_session_end

use std::sync::{Arc, PoisonError, RwLock};

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::guard::guard;
use crate::wire::{codes, Status, ToolResult};

/// The `name` of the reserved session-end request. The slash keeps it out
/// of the tool-name space (tool names are `[A-Za-z0-9_.-]`).
pub const SESSION_END: &str = "toolhost/session_end";

/// The reserved request as it crosses the boundary.
#[derive(Serialize, Deserialize)]
struct EndRequest {
    name: String,
    session_id: String,
}

/// The request text the host sends to tell a module `session_id` ended.
pub fn end_request(session_id: &str) -> String {
    serde_json::to_string(&EndRequest {
        name: SESSION_END.to_string(),
        session_id: session_id.to_string(),
    })
    .unwrap_or_default()
}

type Handler = Box<dyn Fn(&str) + Send + Sync>;

/// A module's session-end handlers, shared by its coordinator and every
/// tool it registered (any of them may receive the notification).
#[derive(Clone, Default)]
pub(crate) struct SessionHooks {
    handlers: Arc<RwLock<Vec<Handler>>>,
}

impl SessionHooks {
    pub(crate) fn add(&self, handler: Handler) {
        self.handlers
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(handler);
    }

    /// When `call_json` is the reserved session-end request, runs every
    /// handler (each under the panic guard) and returns the answer; `None`
    /// for anything else.
    pub(crate) fn intercept(&self, call_json: &str) -> Option<ToolResult> {
        let request: EndRequest = serde_json::from_str(call_json).ok()?;
        if request.name != SESSION_END {
            return None;
        }
        let handlers = self.handlers.read().unwrap_or_else(PoisonError::into_inner);
        let mut panicked = Vec::new();
        for handler in handlers.iter() {
            if let Err(panic) = guard(|| handler(&request.session_id)) {
                panicked.push(panic.0);
            }
        }
        if panicked.is_empty() {
            return Some(ToolResult::success(
                "",
                json!({ "session_id": request.session_id, "handlers": handlers.len() }),
            ));
        }
        Some(ToolResult::failure(
            "",
            Status::Error,
            codes::PANICKED,
            format!(
                "a session-end handler panicked: {}. This is a bug in the module; the host is still running.",
                panicked.join("; ")
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::CallRequest;

    #[test]
    fn the_reserved_request_runs_every_handler_and_nothing_else_does() {
        let hooks = SessionHooks::default();
        let seen = Arc::new(Mutex::new(Vec::new()));
        for tag in ["first", "second"] {
            let seen = seen.clone();
            hooks.add(Box::new(move |session: &str| {
                seen.lock().unwrap().push(format!("{tag}:{session}"))
            }));
        }
        let answer = hooks.intercept(&end_request("http-abc")).expect("intercepted");
        assert!(answer.success, "{:?}", answer.error);
        assert_eq!(*seen.lock().unwrap(), ["first:http-abc", "second:http-abc"]);

        // An ordinary call, or another reserved-looking name, is not it.
        let call = CallRequest::new("1", "bash", json!({}), "/w");
        assert!(hooks.intercept(&serde_json::to_string(&call).unwrap()).is_none());
        assert!(hooks
            .intercept(r#"{"name":"toolhost/other","session_id":"x"}"#)
            .is_none());
        assert_eq!(seen.lock().unwrap().len(), 2);
    }

    #[test]
    fn the_reserved_request_is_not_a_call_an_old_sdk_would_run() {
        assert!(serde_json::from_str::<CallRequest>(&end_request("s")).is_err());
    }

    #[test]
    fn a_panicking_handler_is_reported_and_the_others_still_run() {
        let hooks = SessionHooks::default();
        hooks.add(Box::new(|_: &str| panic!("boom")));
        let ran = Arc::new(Mutex::new(false));
        let flag = ran.clone();
        hooks.add(Box::new(move |_: &str| *flag.lock().unwrap() = true));
        let answer = hooks.intercept(&end_request("s")).expect("intercepted");
        assert_eq!(answer.status, Status::Error);
        assert!(answer.message().contains("boom"), "{}", answer.message());
        assert!(*ran.lock().unwrap());
    }
}
