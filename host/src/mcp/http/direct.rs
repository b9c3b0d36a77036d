//! The fast path for a plain `tools/call` inside a live HTTP session: run
//! here, on the connection's task, and answered as one `application/json`
//! body (which the streamable HTTP transport allows in place of an SSE
//! stream, and every client must accept).
//!
//! rmcp's path for the same POST takes a round trip to the session's worker
//! task to open a response stream, a second one to hand it the request,
//! the service loop's task, a task per request, and the way back through
//! all of them into an SSE body: half of a small call's time over HTTP.
//! This path keeps what makes the answer: the same pipeline call, built
//! from the same fields as [`ToolhostServer::call_tool`], the same result
//! conversion ([`convert::call_result`]), and rmcp's own message types to
//! parse and serialize.
//!
//! It takes a POST only when rmcp would certainly hand it to the handler
//! and the handler would need nothing of rmcp's session: every header
//! check rmcp makes passes in its plainest form (no `Origin`, a loopback
//! `Host`, `Accept` naming both types without weights, a JSON content
//! type, a protocol version header that is absent or names a version this
//! server negotiates), the body has a length within rmcp's limit, and the
//! call asks for nothing that needs the SSE stream: no progress token, no
//! per-request protocol version, no input responses, and no approval the
//! client could be asked for (a client that declared elicitation, calling a
//! tool the policy may ask about). Everything else, including every
//! malformed or refused request, goes to rmcp unchanged, and rmcp answers
//! it. `TOOLHOST_MCP_HTTP_DIRECT=off` sends everything to rmcp (the
//! differential test runs one transcript both ways).
//!
//! What rmcp's session would otherwise see is kept in step: a direct call
//! counts as activity for the session's idle expiry (the worker is touched
//! at most once a second), `notifications/cancelled` for a direct call
//! cancels it (and still reaches rmcp), and a call whose client cancelled
//! it, or whose session ended while it ran, gets an SSE stream with no
//! message, as rmcp's stream ends then.
//!
//! [`ToolhostServer::call_tool`]: super::super::ToolhostServer

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderMap, ACCEPT, CONTENT_LENGTH, CONTENT_TYPE, HOST, ORIGIN};
use hyper::{Request, Response, StatusCode};
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, GetMeta, InitializeRequestParams,
    ProtocolVersion, RequestId, ServerJsonRpcMessage, ServerResult,
};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use toolhost_core::ToolResult;

use super::super::auth::{Body, Principal};
use super::super::convert;
use super::sessions::SessionCalls;
use crate::cancel::CancelToken;
use crate::pipeline::{Call, Pipeline};

/// Set to `off` in the server's environment, every request takes rmcp's
/// path.
pub const DIRECT_ENV: &str = "TOOLHOST_MCP_HTTP_DIRECT";

/// How often, at most, a session busy with direct calls touches rmcp's
/// worker so that its idle timer restarts.
const TOUCH_EVERY: Duration = Duration::from_secs(1);

/// The protocol version header.
const VERSION_HEADER: &str = "mcp-protocol-version";

/// What became of a POST offered to the fast path.
pub enum Outcome {
    /// Answered here.
    Answered(Response<Body>),
    /// For rmcp, untouched.
    Rmcp(Request<Incoming>),
    /// For rmcp, its body already read.
    RmcpRead(Request<Full<Bytes>>),
}

/// The fast path's state: what it knows of each session, and its calls in
/// flight.
pub struct Direct {
    pipeline: Arc<Pipeline>,
    calls: Arc<SessionCalls>,
    manager: Arc<LocalSessionManager>,
    shutdown: CancelToken,
    enabled: bool,
    /// rmcp checks `Host` against the loopback names (a loopback server).
    loopback_hosts: bool,
    max_body: usize,
    sessions: Mutex<HashMap<String, Known>>,
}

/// What the fast path knows of one session.
struct Known {
    /// The client declared elicitation (or its `initialize` could not be
    /// read): calls the policy may ask about take rmcp's path.
    may_elicit: bool,
    /// When rmcp's worker was last touched.
    touched: Instant,
    /// Direct calls in flight, by request id.
    in_flight: HashMap<RequestId, InFlight>,
}

struct InFlight {
    cancel: CancelToken,
    cancelled_by_client: bool,
}

impl Direct {
    /// The fast path over `pipeline`, its calls counted in `calls` and
    /// cancelled by `shutdown`; `loopback_hosts` when rmcp checks `Host`
    /// against the loopback names.
    pub fn new(
        pipeline: Arc<Pipeline>,
        calls: Arc<SessionCalls>,
        manager: Arc<LocalSessionManager>,
        shutdown: CancelToken,
        loopback_hosts: bool,
        max_body: usize,
    ) -> Direct {
        Direct {
            pipeline,
            calls,
            manager,
            shutdown,
            enabled: std::env::var_os(DIRECT_ENV).is_none_or(|v| v != "off"),
            loopback_hosts,
            max_body,
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// rmcp created `session` for the `initialize` whose body was `body`.
    pub fn learn(&self, session: &str, body: &[u8]) {
        let may_elicit = serde_json::from_slice::<ClientJsonRpcMessage>(body)
            .ok()
            .and_then(|message| match message {
                ClientJsonRpcMessage::Request(request) => match request.request {
                    ClientRequest::InitializeRequest(init) => Some(declares_elicitation(&init.params)),
                    _ => None,
                },
                _ => None,
            })
            .unwrap_or(true);
        self.lock().insert(
            session.to_owned(),
            Known {
                may_elicit,
                touched: Instant::now(),
                in_flight: HashMap::new(),
            },
        );
    }

    /// Forgets the sessions `live` no longer names.
    pub fn retain(&self, live: impl Fn(&str) -> bool) {
        self.lock().retain(|id, _| live(id));
    }

    /// Answers `request` (a POST in `session`) here, or hands it back for
    /// rmcp.
    pub async fn post(&self, request: Request<Incoming>, session: &str) -> Outcome {
        if !self.enabled || !self.plain_headers(request.headers()) {
            return Outcome::Rmcp(request);
        }
        let handle = match self.manager.sessions.read().await.get(session) {
            Some(handle) => handle.clone(),
            // rmcp answers 404 for an unknown session.
            None => return Outcome::Rmcp(request),
        };
        let (parts, body) = request.into_parts();
        let bytes = match Limited::new(body, self.max_body).collect().await {
            Ok(collected) => collected.to_bytes(),
            // rmcp's answer to a body that cannot be read.
            Err(e) => {
                return Outcome::Answered(plain(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("Failed to read request body: {e}"),
                ))
            }
        };
        let for_rmcp = |parts, bytes| Outcome::RmcpRead(Request::from_parts(parts, Full::new(bytes)));
        let Ok(message) = serde_json::from_slice::<ClientJsonRpcMessage>(&bytes) else {
            return for_rmcp(parts, bytes);
        };
        let mut request = match message {
            ClientJsonRpcMessage::Request(request) => request,
            ClientJsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) = notification.notification {
                    if let Some(id) = cancelled.params.request_id {
                        self.cancelled(session, &id);
                    }
                }
                return for_rmcp(parts, bytes);
            }
            _ => return for_rmcp(parts, bytes),
        };
        let meta = std::mem::take(request.request.get_meta_mut());
        let ClientRequest::CallToolRequest(call) = request.request else {
            return for_rmcp(parts, bytes);
        };
        let params = call.params;
        let rmcp_judges = meta.get_progress_token().is_some()
            || meta.protocol_version().is_some()
            || params.input_responses.is_some()
            || params.request_state.is_some()
            || params.meta.is_some();
        if rmcp_judges || (self.may_elicit(session) && self.may_ask(&params.name)) {
            return for_rmcp(parts, bytes);
        }
        let id = request.id;
        let cancel = CancelToken::new();
        if !self.begin(session, &id, &cancel) {
            // The id is in flight already: rmcp judges the reuse.
            return for_rmcp(parts, bytes);
        }
        if self.touch_due(session) {
            tokio::spawn(async move {
                // Any event restarts the worker's idle timer; this one
                // closes a response stream that does not exist.
                let _ = handle.close_request_wise_channel(u64::MAX).await;
            });
        }
        let (session_ended, running) = self.calls.enter(session);
        let call = Call {
            cancel: Some(cancel.clone()),
            session_id: Some(crate::session::http(session)),
            principal: parts.extensions.get::<Principal>().map(|p| p.0.clone()),
            toolset: crate::surface::toolsets::from_query(parts.uri.query()),
            ..super::super::call::from_request(params.name.into_owned(), params.arguments, &meta)
        };
        let pipeline = self.pipeline.clone();
        let shutdown = self.shutdown.clone();
        let ended = session_ended.clone();
        // Polled on this task (a task of its own costs a thread hop), but
        // never dropped half-way: a client that hangs up leaves the rest to
        // a task, so the call runs to its end and is recorded, as on rmcp's
        // path.
        let result = Unabandoned::new(async move {
            let _running = running;
            let mut call = Box::pin(pipeline.call(call));
            tokio::select! {
                result = &mut call => result,
                _ = ended.cancelled() => {
                    cancel.cancel();
                    call.await
                }
                _ = shutdown.cancelled() => {
                    cancel.cancel();
                    call.await
                }
            }
        })
        .await;
        let cancelled_by_client = self.end(session, &id);
        if cancelled_by_client || session_ended.is_cancelled() {
            // rmcp sends nothing for such a request: its stream just ends.
            return Outcome::Answered(empty_stream());
        }
        let mut answer = ServerResult::CallToolResult(convert::call_result(result));
        // The handler negotiates no version from 2026-07-28 on, whose
        // results alone carry `resultType`; rmcp strips it, and so do we.
        answer.strip_result_type_for_legacy_peer();
        Outcome::Answered(json(&ServerJsonRpcMessage::response(answer, id)))
    }

    /// Whether every header check rmcp makes before the session passes in
    /// its plainest form (else rmcp makes them, and answers).
    fn plain_headers(&self, headers: &HeaderMap) -> bool {
        !headers.contains_key(ORIGIN)
            && (!self.loopback_hosts || loopback_host(headers))
            && accepts_both(headers)
            && json_content(headers)
            && legacy_version(headers)
            && headers
                .get(CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<usize>().ok())
                .is_some_and(|length| length <= self.max_body)
    }

    fn may_elicit(&self, session: &str) -> bool {
        self.lock().get(session).is_none_or(|known| known.may_elicit)
    }

    /// Whether the policy may ask before the tool called `name` runs.
    fn may_ask(&self, name: &str) -> bool {
        let host = self.pipeline.host();
        host.resolve(name)
            .is_some_and(|resolved| crate::pipeline::policy::may_ask(&host.plan, &resolved.tool))
    }

    /// Registers a call in flight; `false` when its id already is.
    fn begin(&self, session: &str, id: &RequestId, cancel: &CancelToken) -> bool {
        let mut sessions = self.lock();
        let known = sessions.entry(session.to_owned()).or_insert_with(|| Known {
            may_elicit: true,
            touched: Instant::now(),
            in_flight: HashMap::new(),
        });
        if known.in_flight.contains_key(id) {
            return false;
        }
        known.in_flight.insert(
            id.clone(),
            InFlight {
                cancel: cancel.clone(),
                cancelled_by_client: false,
            },
        );
        true
    }

    /// The call is over; whether its client cancelled it.
    fn end(&self, session: &str, id: &RequestId) -> bool {
        self.lock()
            .get_mut(session)
            .and_then(|known| known.in_flight.remove(id))
            .is_some_and(|call| call.cancelled_by_client)
    }

    /// `notifications/cancelled` for `id` in `session`.
    fn cancelled(&self, session: &str, id: &RequestId) {
        let token = self
            .lock()
            .get_mut(session)
            .and_then(|known| known.in_flight.get_mut(id))
            .map(|call| {
                call.cancelled_by_client = true;
                call.cancel.clone()
            });
        if let Some(token) = token {
            tracing::info!(session, %id, "a direct call cancelled by its client");
            token.cancel();
        }
    }

    /// Whether rmcp's worker is due a touch (and the touch is noted).
    fn touch_due(&self, session: &str) -> bool {
        let mut sessions = self.lock();
        let Some(known) = sessions.get_mut(session) else {
            return false;
        };
        if known.touched.elapsed() < TOUCH_EVERY {
            return false;
        }
        known.touched = Instant::now();
        true
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Known>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A future that finishes even when dropped: dropped unfinished, what is
/// left of it is spawned as a task.
struct Unabandoned<F: Future<Output = ToolResult> + Send + 'static>(Option<Pin<Box<F>>>);

impl<F: Future<Output = ToolResult> + Send + 'static> Unabandoned<F> {
    fn new(future: F) -> Self {
        Unabandoned(Some(Box::pin(future)))
    }
}

impl<F: Future<Output = ToolResult> + Send + 'static> Future for Unabandoned<F> {
    type Output = ToolResult;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<ToolResult> {
        let Some(future) = self.0.as_mut() else {
            return Poll::Pending;
        };
        let result = std::task::ready!(future.as_mut().poll(cx));
        self.0 = None;
        Poll::Ready(result)
    }
}

impl<F: Future<Output = ToolResult> + Send + 'static> Drop for Unabandoned<F> {
    fn drop(&mut self) {
        if let Some(rest) = self.0.take() {
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    runtime.spawn(async move {
                        let result = rest.await;
                        tracing::debug!(status = %result.status, "a direct call finished after its client left");
                    });
                }
                Err(_) => tracing::warn!("a direct call was dropped outside the runtime"),
            }
        }
    }
}

/// Whether a client may be asked for input during a call (any elicitation
/// capability counts: rmcp's path decides what it allows).
fn declares_elicitation(init: &InitializeRequestParams) -> bool {
    init.capabilities.elicitation.is_some()
}

/// `Host` names a loopback address (rmcp's default allow-list).
fn loopback_host(headers: &HeaderMap) -> bool {
    let Some(host) = headers.get(HOST).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let Ok(authority) = host.parse::<hyper::http::uri::Authority>() else {
        return false;
    };
    let name = authority.host().trim_start_matches('[').trim_end_matches(']');
    ["localhost", "127.0.0.1", "::1"]
        .iter()
        .any(|allowed| name.eq_ignore_ascii_case(allowed))
}

/// `Accept` names both `application/json` and `text/event-stream`, with no
/// weights (a weighted list is rmcp's to read).
fn accepts_both(headers: &HeaderMap) -> bool {
    let (mut json, mut sse) = (false, false);
    for value in headers.get_all(ACCEPT) {
        let Ok(value) = value.to_str() else {
            return false;
        };
        for part in value.split(',') {
            let mut fields = part.split(';');
            let essence = fields.next().unwrap_or("").trim();
            if fields.next().is_some() {
                return false;
            }
            json |= essence.eq_ignore_ascii_case("application/json");
            sse |= essence.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json && sse
}

fn json_content(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let essence = v.split(';').next().unwrap_or("");
            essence.trim().eq_ignore_ascii_case("application/json")
        })
}

/// No protocol version header (2025-03-26), or one naming a version the
/// handler negotiates: sessions, no per-request metadata.
fn legacy_version(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(VERSION_HEADER) else {
        return true;
    };
    let Ok(version) = value.to_str() else {
        return false;
    };
    ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25)
        .iter()
        .any(|known| known.as_str() == version)
}

/// One JSON-RPC message as the whole response.
fn json(message: &ServerJsonRpcMessage) -> Response<Body> {
    match serde_json::to_vec(message) {
        Ok(body) => Response::builder()
            .status(StatusCode::OK)
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)).boxed())
            .unwrap_or_else(|_| {
                plain(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "cannot build the response".into(),
                )
            }),
        Err(e) => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot serialize the response: {e}"),
        ),
    }
}

/// An SSE stream that ends without a message.
fn empty_stream() -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::new()).boxed());
    response.headers_mut().insert(
        CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/event-stream"),
    );
    response
}

fn plain(status: StatusCode, text: String) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(text)).boxed());
    *response.status_mut() = status;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, value.parse().expect("header"));
        }
        headers
    }

    #[test]
    fn only_the_plainest_headers_pass() {
        assert!(accepts_both(&headers(&[(
            "accept",
            "application/json, text/event-stream"
        )])));
        assert!(accepts_both(&headers(&[
            ("accept", "application/json"),
            ("accept", "text/event-stream")
        ])));
        assert!(!accepts_both(&headers(&[("accept", "application/json")])));
        assert!(!accepts_both(&headers(&[(
            "accept",
            "application/json, text/event-stream;q=0"
        )])));
        assert!(json_content(&headers(&[(
            "content-type",
            "application/json; charset=utf-8"
        )])));
        assert!(!json_content(&headers(&[("content-type", "text/plain")])));
        assert!(loopback_host(&headers(&[("host", "127.0.0.1:8080")])));
        assert!(loopback_host(&headers(&[("host", "[::1]:80")])));
        assert!(loopback_host(&headers(&[("host", "LOCALHOST")])));
        assert!(!loopback_host(&headers(&[("host", "evil.example:80")])));
        assert!(!loopback_host(&HeaderMap::new()));
        assert!(legacy_version(&HeaderMap::new()));
        assert!(legacy_version(&headers(&[(VERSION_HEADER, "2025-06-18")])));
        assert!(!legacy_version(&headers(&[(VERSION_HEADER, "2026-07-28")])));
        assert!(!legacy_version(&headers(&[(VERSION_HEADER, "1999-01-01")])));
    }
}
