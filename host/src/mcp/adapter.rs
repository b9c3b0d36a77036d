//! The MCP adapter: the one place where a `tools/call` becomes a pipeline
//! [`Call`] and the pipeline's result becomes the answer, whichever front
//! door it came by: rmcp's handler (stdio and streamable HTTP, see
//! [`Runner::call_tool`]) or the stdio fast path ([`direct_call`],
//! [`answer`]; see `stdio/direct.rs`).
//!
//! Every decision a front door could make differently is made here once:
//! - which calls only rmcp may run ([`rmcp_must_judge`]);
//! - what the request's `_meta` means (its idempotency key, its request
//!   context, from 2026-07-28 on its protocol version and client), and what
//!   the transport adds (the HTTP session, principal and toolset; progress;
//!   approval by elicitation, or by an input-required result for clients
//!   on 2026-07-28, see [`super::input_required`]);
//! - when a call is cancelled (the client's `notifications/cancelled`, its
//!   HTTP session ending, the client gone), and that a cancelled call is
//!   still awaited, so it is recorded;
//! - how a result is answered: converted once ([`convert::call_result`]),
//!   without `resultType` for clients before 2026-07-28, which rmcp adds
//!   for later ones;
//! - the newest protocol version served ([`NEWEST_PROTOCOL`]).
//!
//! No response goes to a request its client cancelled: rmcp's rule on its
//! path, which the fast path keeps with its own record of the calls it
//! runs.

use std::borrow::Cow;

use rmcp::model::{CallToolRequestParams, CallToolResponse, ProtocolVersion, ServerResult};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};
use serde_json::{Map, Value};
use toolhost_core::ToolResult;

use super::http::sessions::SessionCalls;
use super::input_required::{Asking, Retry};
use super::{convert, elicit, progress};
use crate::cancel::CancelToken;
use crate::pipeline::{Call, Pipeline};

/// The newest protocol version served: 2026-07-28, stateless (no
/// `initialize`, no session: each request's `_meta` names its version and
/// client), served beside every earlier one. Its clients are asked for
/// approval by input-required results ([`input_required`]), which replace
/// the elicitation requests that revision forbids.
pub const NEWEST_PROTOCOL: ProtocolVersion = ProtocolVersion::V_2026_07_28;

/// Every protocol version served, oldest first.
pub fn protocol_versions() -> Cow<'static, [ProtocolVersion]> {
    Cow::Borrowed(ProtocolVersion::known_up_to(&NEWEST_PROTOCOL))
}

/// Whether only rmcp's handler may run this call: progress needs rmcp's
/// notification plumbing; input responses, request state and per-request
/// protocol versions are rmcp's to judge.
pub fn rmcp_must_judge(params: &CallToolRequestParams) -> bool {
    params
        .meta
        .as_ref()
        .is_some_and(|m| m.get_progress_token().is_some() || m.protocol_version().is_some())
        || params.input_responses.is_some()
        || params.request_state.is_some()
}

/// Whether a request speaks 2026-07-28 or later (its `_meta` says so, or
/// the session it came in opened on it).
pub fn is_stateless(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
}

/// Whether the stdio fast path may run calls in a session rmcp opened:
/// only after an `initialize` handshake. A session rmcp opened on a
/// stateless request (2026-07-28: no handshake, no stored client) needs
/// every request's `_meta` checked, which is rmcp's to do.
pub fn direct_calls_allowed(peer: &Peer<RoleServer>) -> bool {
    peer.peer_info()
        .is_some_and(|info| info.protocol_version < ProtocolVersion::V_2026_07_28)
}

/// The call the stdio fast path runs for `params` (which
/// [`rmcp_must_judge`] let through): cancelled by `cancel`, approved by
/// asking the client through rmcp's `peer`.
pub fn direct_call(params: CallToolRequestParams, peer: &Peer<RoleServer>, cancel: CancelToken) -> Call {
    let meta = params.meta.unwrap_or_default();
    Call {
        cancel: Some(cancel.clone()),
        approver: elicit::approver(peer, cancel.clone()),
        asker: elicit::asker(peer, cancel),
        ..from_request(params.name.into_owned(), params.arguments, &meta)
    }
}

/// The answer to a call the fast path ran. rmcp's path answers the same
/// conversion, and strips `resultType` for the protocols
/// [`protocol_versions`] allows, as done here.
pub fn answer(result: ToolResult) -> ServerResult {
    let mut answer = ServerResult::CallToolResult(convert::call_result(result));
    answer.strip_result_type_for_legacy_peer();
    answer
}

/// What runs a call: the pipeline, and what ends every call of a
/// connection at once.
pub struct Runner<'a> {
    /// The pipeline every call goes through.
    pub pipeline: &'a Pipeline,
    /// Fires when the client is gone (stdin closed, the server shutting
    /// down): every call in flight is cancelled.
    pub gone: &'a CancelToken,
    /// HTTP: each session's calls, cancelled when the session ends.
    pub session_calls: Option<&'a SessionCalls>,
    /// Where calls that become MCP tasks run (see [`super::tasks`]).
    pub tasks: Option<&'a std::sync::Arc<super::tasks::Tasks>>,
}

impl Runner<'_> {
    /// Runs `request` through the pipeline and answers it, or starts it
    /// as an MCP task and answers the task's handle.
    pub async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let as_task = match self.tasks {
            Some(tasks) => tasks.route(&request, context)?,
            None => false,
        };
        let cancel = CancelToken::new();
        let session = http_session(context);
        // Counted as running in its session until the guard drops.
        let (session_ended, _running) = match (self.session_calls, session) {
            (Some(calls), Some(session)) => {
                let (token, guard) = calls.enter(session);
                (token, Some(guard))
            }
            _ => (CancelToken::default(), None),
        };
        // A task's progress becomes its status message instead.
        let reporter = context
            .meta
            .get_progress_token()
            .filter(|_| !as_task)
            .map(|token| progress::Reporter::start(context.peer.clone(), token));
        let principal = http_principal(context).map(str::to_string);
        // 2026-07-28 forbids asking the client by a request of ours: the
        // question becomes the call's answer, the client's answer a retry.
        let stateless = is_stateless(context);
        let asking = if stateless {
            let retry = Retry {
                responses: request.input_responses.clone(),
                state: request.request_state.clone(),
            };
            let asker = principal
                .as_deref()
                .unwrap_or(&self.pipeline.host().plan.governance.host_principal);
            let capabilities = context.client_capabilities();
            Asking::new(
                capabilities.as_ref(),
                asker,
                &request.name,
                request.arguments.as_ref(),
                &retry,
            )
        } else {
            None
        };
        let approver = match &asking {
            Some(asking) => asking.approver(),
            None if stateless => None,
            None => elicit::approver(&context.peer, cancel.clone()),
        };
        let call = Call {
            cancel: Some(cancel.clone()),
            progress: reporter.as_ref().map(progress::Reporter::sink),
            approver,
            // A 2026-07-28 client cannot be sent requests: an upstream
            // server's question is declined, saying why.
            asker: (!stateless)
                .then(|| elicit::asker(&context.peer, cancel.clone()))
                .flatten(),
            session_id: call_session(session, principal.as_deref()),
            // Without a session, the principal owns what outlives the call.
            state_owner: session.is_none().then(|| principal.clone()).flatten(),
            principal,
            toolset: http_toolset(context),
            // An input-required client is asked by the call's answer; any
            // other client that cannot be asked may wait for the page.
            operator_may_answer: asking.is_none(),
            ..from_request(request.name.into_owned(), request.arguments, &context.meta)
        };
        if let (true, Some(tasks)) = (as_task, self.tasks) {
            let owner = call
                .principal
                .clone()
                .unwrap_or_else(|| self.pipeline.host().plan.governance.host_principal.clone());
            return tasks.start(call, owner).await;
        }
        // Boxed: the pipeline's future is large, and rmcp moves the handler's
        // future into a task per request.
        let mut running = Box::pin(self.pipeline.call(call));
        let result = tokio::select! {
            result = &mut running => result,
            // notifications/cancelled for this request, the session closing,
            // or the client gone: the tool stops, and its result is still
            // awaited so the call is recorded.
            _ = context.ct.cancelled() => {
                cancel.cancel();
                running.await
            }
            _ = self.gone.cancelled() => {
                cancel.cancel();
                running.await
            }
            _ = session_ended.cancelled() => {
                cancel.cancel();
                running.await
            }
        };
        if let Some(reporter) = reporter {
            reporter.finish().await;
        }
        if let Some(question) = asking.as_ref().and_then(|a| a.question(&result)) {
            return Ok(question.into());
        }
        Ok(convert::call_result(result).into())
    }
}

/// What a principal's stateless session id starts with (rmcp's session ids
/// are UUIDs: the two never meet).
const STATELESS_SESSION_PREFIX: &str = "principal-";

/// The session a call's state belongs to: its HTTP session; for a stateless
/// HTTP request (2026-07-28, no `Mcp-Session-Id`), one per principal, so
/// principals never share read records or undo history; on stdio (`None`)
/// the process's.
fn call_session(http_session: Option<&str>, principal: Option<&str>) -> Option<String> {
    match (http_session, principal) {
        (Some(session), _) => Some(crate::session::http(session)),
        (None, Some(principal)) => Some(crate::session::http(&format!(
            "{STATELESS_SESSION_PREFIX}{principal}"
        ))),
        (None, None) => None,
    }
}

/// The call for tool `name` with `arguments` and the request's `_meta`.
pub fn from_request(name: String, arguments: Option<Map<String, Value>>, meta: &Map<String, Value>) -> Call {
    Call {
        name,
        input: Value::Object(arguments.unwrap_or_default()),
        // `_meta.idempotency_key`: run a side-effecting call once per key
        // (see pipeline/idempotency.rs).
        idempotency_key: meta
            .get("idempotency_key")
            .and_then(Value::as_str)
            .map(str::to_string),
        context: crate::governance::request::from_meta(meta),
        // `_meta.traceparent` (W3C Trace Context, as the MCP `_meta`
        // convention carries it): the call's span is the caller's child.
        trace_parent: meta
            .get("traceparent")
            .and_then(Value::as_str)
            .and_then(|parent| {
                let state = meta.get("tracestate").and_then(Value::as_str);
                toolhost_telemetry::trace::TraceParent::parse(parent, state)
            }),
        ..Call::default()
    }
}

/// The principal the router identified an HTTP request as (none on stdio,
/// where calls run for `[host] principal`).
pub fn http_principal(context: &RequestContext<RoleServer>) -> Option<&str> {
    let parts = context.extensions.get::<hyper::http::request::Parts>()?;
    parts
        .extensions
        .get::<super::auth::Principal>()
        .map(|p| p.0.as_str())
}

/// The toolset an HTTP client selected with `?toolset=NAME` (none on stdio).
pub fn http_toolset(context: &RequestContext<RoleServer>) -> Option<String> {
    let parts = context.extensions.get::<hyper::http::request::Parts>()?;
    crate::surface::toolsets::from_query(parts.uri.query())
}

/// The MCP session id of an HTTP request (none on stdio).
fn http_session(context: &RequestContext<RoleServer>) -> Option<&str> {
    let parts = context.extensions.get::<hyper::http::request::Parts>()?;
    parts.headers.get("mcp-session-id")?.to_str().ok()
}
