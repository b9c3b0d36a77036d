//! MCP over rmcp's streamable HTTP transport, served with hyper.
//!
//! Every request needs the bearer token unless the operator opted out with
//! `--no-auth` (loopback only); with no token given, one is generated and
//! written to a 0600 file ([`super::auth::TokenFile`]). Before rmcp sees a
//! request: the token, then the caps (connections, sessions), with a clear
//! refusal for each. Connections that have not shown a token have their
//! own budget and deadline ([`unauthenticated`]); a session answers only
//! the principal that opened it, and each principal holds a bounded number
//! ([`owners`]). rmcp itself checks `Host` (DNS rebinding) and
//! `Origin` (a present `Origin` must be the server's own loopback origin
//! or on the allow-list: 403 otherwise).
//! Accepted sockets get `TCP_NODELAY` (small calls would otherwise wait
//! for Nagle's delayed ACK, 10–60× slower than stdio).

mod accept;
mod metrics;
pub mod owners;
mod priming;
pub mod sessions;
pub mod unauthenticated;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{SessionId, SessionManager};
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;

use super::auth::{self, Body, Principal};
use super::ToolhostServer;
use crate::cancel::CancelToken;
use crate::pipeline::Pipeline;
use accept::{Backoff, Connections};
use owners::{Owners, Room};
use sessions::SessionCalls;
use unauthenticated::{Pending, Unauthenticated};

/// Where the MCP endpoint answers (also at `/`).
pub const ENDPOINT: &str = "/mcp";

/// The largest request body read (rmcp's own cap).
const MAX_BODY: usize = 4 * 1024 * 1024;
/// The first protocol version without sessions.
const STATELESS_SINCE: &str = "2026-07-28";
/// The header naming a request's session.
const SESSION_HEADER: &str = "mcp-session-id";

/// How to listen, and the limits that keep the server up under abuse.
pub struct Options {
    /// `HOST:PORT`, `IP:PORT`, or a bare port (loopback).
    pub addr: String,
    /// Who may call (see [`auth::Access`]).
    pub access: auth::Access,
    /// Browser origins allowed to call besides a loopback server's own; a
    /// request with any other `Origin` gets 403 (requests without one, as
    /// non-browser clients send, pass).
    pub allowed_origins: Vec<String>,
    /// Authenticated connections open at once; a request beyond is
    /// answered 503 and its connection closed.
    pub max_connections: usize,
    /// Connections open at once that have not yet sent a request with a
    /// known token; past it the oldest of them is closed for the newest.
    pub max_unauthenticated: usize,
    /// How long a connection may take to send a request with a known token.
    pub unauthenticated_timeout: Duration,
    /// Live sessions at once; the next `initialize` is answered 503.
    pub max_sessions: usize,
    /// Sessions one principal may hold; past it, its least recently used
    /// idle session ends for the new one (`[host] sessions_per_principal`).
    pub sessions_per_principal: usize,
    /// How long a client may take to send a request's headers, and how long
    /// an idle keep-alive connection is kept.
    pub header_timeout: Duration,
    /// How long a request's body may take to arrive, once its headers did.
    pub body_timeout: Duration,
    /// A session with no request for this long ends (its calls with it).
    pub session_idle: Duration,
}

impl Options {
    /// The defaults for `addr`, with `access`.
    pub fn new(addr: String, access: auth::Access) -> Self {
        Options {
            addr,
            access,
            allowed_origins: Vec::new(),
            max_connections: 256,
            max_unauthenticated: 64,
            unauthenticated_timeout: Duration::from_secs(3),
            max_sessions: 64,
            sessions_per_principal: 16,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(60),
            session_idle: Duration::from_secs(600),
        }
    }
}

/// Why the HTTP server did not start (each is the user's to fix).
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address is no socket address and the resolver failed.
    #[error("cannot resolve the address '{addr}': {source} (use HOST:PORT, e.g. 127.0.0.1:8080)")]
    Resolve {
        /// As given.
        addr: String,
        /// The resolver's answer.
        source: std::io::Error,
    },
    /// The name resolves to no address.
    #[error("the address '{0}' resolves to nothing")]
    NoAddress(String),
    /// The port is taken, or not ours to bind.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// Where.
        addr: SocketAddr,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The bound socket would not name its address.
    #[error("cannot read the bound address: {0}")]
    LocalAddr(std::io::Error),
    /// No token to check requests against.
    #[error(transparent)]
    Token(#[from] auth::TokenError),
    /// `[host.oauth]` cannot be served.
    #[error("[host.oauth]: {0}")]
    OAuth(String),
}

/// Resolves the address: a bare port (or `:PORT`) means loopback.
pub async fn resolve(addr: &str) -> Result<SocketAddr, ServeError> {
    let addr = addr.trim();
    let port_only = addr.strip_prefix(':').unwrap_or(addr);
    if let Ok(port) = port_only.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    if let Ok(socket) = addr.parse::<SocketAddr>() {
        return Ok(socket);
    }
    tokio::net::lookup_host(addr)
        .await
        .map_err(|source| ServeError::Resolve {
            addr: addr.to_string(),
            source,
        })?
        .next()
        .ok_or_else(|| ServeError::NoAddress(addr.to_string()))
}

/// What every connection's requests are routed with.
struct Routing {
    mcp: StreamableHttpService<ToolhostServer, LocalSessionManager>,
    manager: Arc<LocalSessionManager>,
    token: Option<Arc<str>>,
    /// Which token is whose (issue #16).
    gate: auth::Gate,
    calls: Arc<SessionCalls>,
    max_sessions: usize,
    /// How long a request's body may take (`--body-timeout-secs`).
    body_timeout: Duration,
    /// Whose each session is, and the per-principal quota.
    owners: Arc<Owners>,
    /// Authenticated connections (`max_connections`).
    connections: Connections,
    /// Who may read `/metrics` (`[host.metrics]`).
    metrics: metrics::Access,
    /// Refusals are logged at most once per window (a flood must not flood
    /// the log as well).
    refusals: std::sync::Mutex<accept::RateLimitedLog>,
    /// Sessions ended for a principal's quota, logged the same way.
    evictions: std::sync::Mutex<accept::RateLimitedLog>,
    /// Held from the cap check until rmcp has registered the new session:
    /// without it two `initialize` calls racing for the last place both
    /// saw room and the server held one session past its cap.
    admission: tokio::sync::Mutex<()>,
    /// The operator page (`/ui/`), when the plan names operators.
    ui: Option<crate::ui::Ui>,
}

/// Serves until `shutdown` fires. Errors are for the user (bad address, no
/// token off loopback, port taken, token file not writable).
pub async fn serve(
    pipeline: Arc<Pipeline>,
    shutdown: CancelToken,
    options: Options,
) -> Result<(), ServeError> {
    let addr = resolve(&options.addr).await?;
    let loopback = auth::is_loopback(&addr);
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Listen { addr, source })?;
    let local = listener.local_addr().map_err(ServeError::LocalAddr)?;
    let token = options
        .access
        .token(loopback, &pipeline.host().plan.state_dir(), local.port())?;

    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_origins(allowed_origins(
            &options.allowed_origins,
            loopback.then_some(local),
        ))
        .enforce_origin_validation();
    if !loopback {
        // Host checks guard loopback servers against DNS rebinding; beyond
        // loopback the token does that job, and the names are the operator's.
        config = config.disable_allowed_hosts();
    }
    let sessions_done = config.cancellation_token.clone();
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(options.session_idle);
    let manager = Arc::new(manager);
    let calls = SessionCalls::for_host(pipeline.host().clone());
    let oauth = match &pipeline.host().plan.host.oauth {
        Some(section) => {
            let oauth = super::oauth::OAuth::new(section, &pipeline.host().plan.governance.principals)
                .map(Arc::new)
                .map_err(ServeError::OAuth)?;
            oauth.warm_up();
            Some(oauth)
        }
        None => None,
    };
    let gate = auth::Gate::new(token.clone(), &pipeline.host().plan.governance).with_oauth(oauth);
    let owners = Arc::new(Owners::new(options.sessions_per_principal));
    let pipeline_metrics = pipeline.host().plan.host.metrics.clone();
    let ui = crate::ui::Ui::new(pipeline.clone());
    let server = ToolhostServer::new(pipeline, shutdown.clone()).with_session_calls(calls.clone());
    let mcp = StreamableHttpService::new(move || Ok(server.clone()), manager.clone(), config);
    let routing = Arc::new(Routing {
        mcp,
        manager: manager.clone(),
        token: token.map(Arc::from),
        gate,
        calls: calls.clone(),
        max_sessions: options.max_sessions,
        body_timeout: options.body_timeout,
        owners: owners.clone(),
        connections: Connections::new(options.max_connections),
        metrics: metrics::Access::new(&pipeline_metrics),
        refusals: std::sync::Mutex::new(accept::RateLimitedLog::new(Duration::from_secs(5))),
        evictions: std::sync::Mutex::new(accept::RateLimitedLog::new(Duration::from_secs(5))),
        admission: tokio::sync::Mutex::new(()),
        ui,
    });
    let sweeper = tokio::spawn(sessions::sweep(
        calls,
        owners,
        manager,
        sweep_every(options.session_idle),
    ));
    eprintln!(
        "toolhost: serving MCP over streamable HTTP at http://{local}{ENDPOINT}{}",
        if routing.token.is_some() {
            " (bearer token required)"
        } else {
            " (no authentication: --no-auth)"
        }
    );

    let unauthenticated = Unauthenticated::new(options.max_unauthenticated, options.unauthenticated_timeout);
    let mut backoff = Backoff::default();
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => {
                    backoff.reset();
                    accepted
                }
                Err(e) => {
                    let pause = backoff.after(&e);
                    if !pause.is_zero() {
                        tokio::select! {
                            _ = tokio::time::sleep(pause) => {}
                            _ = shutdown.cancelled() => break,
                        }
                    }
                    continue;
                }
            },
            _ = shutdown.cancelled() => break,
        };
        let standing = Arc::new(Standing {
            pending: unauthenticated.arrive(),
            permit: std::sync::Mutex::new(None),
        });
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(%peer, "cannot set TCP_NODELAY: {e}");
        }
        let routing = routing.clone();
        let header_timeout = options.header_timeout;
        tokio::spawn(async move {
            let for_service = standing.clone();
            let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                let routing = routing.clone();
                let standing = for_service.clone();
                async move { Ok::<_, Infallible>(route(&routing, &standing, request).await) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout)
                .serve_connection(TokioIo::new(stream), service);
            // The connection first: one pushed out before this task first
            // ran still reads the request already waiting on it, and stays
            // if that request shows a known token (a flood of new
            // connections must not close a token holder's before it is read).
            tokio::select! {
                biased;
                ended = connection => if let Err(e) = ended {
                    tracing::debug!(%peer, "HTTP connection ended: {e}");
                },
                () = standing.pending.expired() => {
                    tracing::debug!(%peer, "closed an HTTP connection that sent no request with a known token in time");
                }
            }
        });
    }
    sweeper.abort();
    sessions_done.cancel();
    Ok(())
}

/// The origins a browser may call from: the operator's, and, on loopback,
/// the server's own (`http://127.0.0.1:PORT`, `http://localhost:PORT`): a
/// page the server itself served is no DNS-rebinding attack, which is what
/// the `Origin` check stops (a rebound name arrives with its own origin,
/// `http://evil.example:PORT`, and is still refused).
fn allowed_origins(operator: &[String], loopback: Option<SocketAddr>) -> Vec<String> {
    let mut allowed = operator.to_vec();
    if let Some(local) = loopback {
        allowed.push(format!("http://{local}"));
        allowed.push(format!("http://localhost:{}", local.port()));
    }
    allowed
}

/// How often ended sessions are looked for: often enough that an expired
/// session's calls stop soon after it.
fn sweep_every(idle: Duration) -> Duration {
    (idle / 4).clamp(Duration::from_millis(200), Duration::from_secs(5))
}

/// One connection's standing: unauthenticated until a request shows a
/// known token, then holding a place among `max_connections`.
struct Standing {
    pending: Arc<Pending>,
    permit: std::sync::Mutex<Option<tokio::sync::OwnedSemaphorePermit>>,
}

impl Standing {
    /// A request showed a known token: the connection takes its place among
    /// the authenticated ones (once); `false` when they are all taken.
    fn authenticate(&self, connections: &Connections) -> bool {
        let mut permit = self
            .permit
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if permit.is_none() {
            *permit = connections.admit();
        }
        self.pending.authenticated();
        permit.is_some()
    }
}

/// Token first, then the connection cap, the endpoint, the session's owner,
/// the session cap, and rmcp; everything else is 404.
async fn route(routing: &Routing, standing: &Standing, mut request: Request<Incoming>) -> Response<Body> {
    // The operator page signs in with a form and a session cookie, not a
    // bearer header (see crate::ui); a signed-in browser's connection counts
    // as authenticated.
    if let Some(ui) = routing
        .ui
        .as_ref()
        .filter(|_| crate::ui::is_page(request.uri().path()))
    {
        if ui.signed_in(request.headers()) && !standing.authenticate(&routing.connections) {
            return routing.connections.refusal();
        }
        let identify = |token: String| async move {
            let mut headers = hyper::HeaderMap::new();
            let value = hyper::header::HeaderValue::from_str(&format!("Bearer {token}")).ok()?;
            headers.insert(hyper::header::AUTHORIZATION, value);
            routing.gate.authenticate(&headers).await.ok().map(|p| p.0)
        };
        return ui.handle(request, identify).await;
    }
    if request.method() == Method::GET {
        if let Some(metadata) = routing.gate.metadata(request.uri().path()) {
            return metadata;
        }
    }
    if request.uri().path() == metrics::PATH && routing.metrics.public() {
        return metrics::answer(&routing.manager).await;
    }
    let principal = match routing.gate.authenticate(request.headers()).await {
        Ok(principal) => principal,
        Err(refusal) => {
            tracing::info!(path = %request.uri().path(), ?refusal, "rejected an HTTP request without a known bearer token");
            return routing.gate.refuse(&refusal);
        }
    };
    if !standing.authenticate(&routing.connections) {
        return routing.connections.refusal();
    }
    request.extensions_mut().insert(principal.clone());
    let path = request.uri().path();
    if path == metrics::PATH {
        return routing.metrics.answer_for(&principal, &routing.manager).await;
    }
    if path != ENDPOINT && path != "/" {
        return auth::refusal(
            StatusCode::NOT_FOUND,
            "not found: the MCP endpoint is /mcp\n".into(),
        );
    }
    let session = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let Some(session) = session else {
        if request.method() == Method::POST {
            return new_session(routing, &principal, request).await;
        }
        let version = priming::version_of(request.headers(), None);
        return without_priming_unless(&version, routing.mcp.handle(request).await);
    };
    // Someone else's session is answered as one that does not exist, the
    // body read first as rmcp does (so the connection stays usable alike).
    let Some(busy) = routing.owners.claim(&session, &principal.0) else {
        let _ = read_body(routing, request.into_body()).await;
        return owners::not_found();
    };
    let response = in_session(routing, request, &session).await;
    owners::hold_while_streaming(response, busy)
}

/// A request in `session`, which is the caller's.
async fn in_session(routing: &Routing, request: Request<Incoming>, session: &str) -> Response<Body> {
    match *request.method() {
        Method::DELETE => {
            let response = routing.mcp.handle(request).await;
            if response.status().is_success() {
                // The session is gone: its calls stop now, not when rmcp's
                // drain gives up on them.
                routing.owners.forget(session);
                routing.calls.end(session);
            }
            response
        }
        Method::POST => {
            let version = priming::version_of(request.headers(), None);
            let (parts, body) = request.into_parts();
            let bytes = match read_body(routing, body).await {
                Ok(bytes) => bytes,
                Err(refused) => return refused,
            };
            let request = Request::from_parts(parts, Full::new(bytes));
            without_priming_unless(&version, routing.mcp.handle(request).await)
        }
        _ => {
            let version = priming::version_of(request.headers(), None);
            without_priming_unless(&version, routing.mcp.handle(request).await)
        }
    }
}

/// A POST outside any session: an `initialize`, or a stateless request
/// (2026-07-28), which rmcp serves without a session (anything else rmcp
/// refuses). Capped by `max_sessions` and by the principal's quota (at
/// which its least recently used idle session ends instead); its body is
/// read here to learn the protocol version it asks for.
async fn new_session(routing: &Routing, principal: &Principal, request: Request<Incoming>) -> Response<Body> {
    // A cheap first look, before the body is read: a flood is refused
    // without reading what it sends (unless one of the principal's own
    // sessions could make room).
    // A request that names 2026-07-28 in its header opens no session
    // (unless its body is an `initialize` after all, checked below).
    let stateless = priming::version_of(request.headers(), None).as_str() >= STATELESS_SINCE;
    if !stateless && !routing.owners.at_quota(&principal.0) {
        if let Some(refused) = refuse_if_full(routing).await {
            return refused;
        }
    }
    let (parts, body) = request.into_parts();
    let bytes = match read_body(routing, body).await {
        Ok(bytes) => bytes,
        Err(refused) => return refused,
    };
    let asked = asked_version(&bytes);
    let version = priming::version_of(&parts.headers, asked.as_deref());
    let request = Request::from_parts(parts, Full::new(bytes.clone()));
    if !is_initialize(&bytes) {
        // No session can come of it (rmcp refuses it): it takes no place
        // and ends none of the principal's sessions.
        return without_priming_unless(&version, routing.mcp.handle(request).await);
    }
    // The decisive look: under the admission lock, held until rmcp has
    // created the session (it does so before it answers the initialize).
    let admitted = routing.admission.lock().await;
    // With a place free on the server, the principal's own idle session
    // ends only once the new one exists (rmcp may still refuse this
    // initialize); with none free, it must end first to make that place.
    let server_full = routing.manager.sessions.read().await.len() >= routing.max_sessions;
    if server_full {
        match routing.owners.room_for(&principal.0) {
            Room::Free => {}
            Room::Evict(oldest) => end_for_quota(routing, principal, &oldest).await,
            Room::Full => return quota_full(routing, principal),
        }
    } else if routing.owners.all_busy(&principal.0) {
        return quota_full(routing, principal);
    }
    if let Some(refused) = refuse_if_full(routing).await {
        return refused;
    }
    let response = routing.mcp.handle(request).await;
    let id = response
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|_| response.status().is_success())
        .map(str::to_owned);
    let Some(id) = id else {
        drop(admitted);
        return without_priming_unless(&version, response);
    };
    // Registered before the answer leaves: the session id is never
    // usable without its owner, and it is busy until its answer is sent.
    let busy = routing.owners.register(&id, &principal.0);
    if let Room::Evict(oldest) = routing.owners.trim(&principal.0) {
        end_for_quota(routing, principal, &oldest).await;
    }
    drop(admitted);
    owners::hold_while_streaming(without_priming_unless(&version, response), busy)
}

/// Ends `session`, the least recently used idle one of `principal`, which
/// is at its quota and opens another.
async fn end_for_quota(routing: &Routing, principal: &Principal, session: &str) {
    let admitted = routing
        .evictions
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .admit();
    if let Some(suppressed) = admitted {
        tracing::info!(
            principal = %principal.0,
            session,
            suppressed,
            "ended the principal's least recently used idle MCP session: sessions_per_principal ({}) reached",
            routing.owners.per_principal()
        );
    }
    let id: SessionId = Arc::from(session);
    if let Err(e) = routing.manager.close_session(&id).await {
        tracing::debug!(session, "closing the evicted session: {e}");
    }
    routing.calls.end(session);
}

/// A 503 for a principal whose sessions are all busy at its quota.
fn quota_full(routing: &Routing, principal: &Principal) -> Response<Body> {
    let mut refused = auth::refusal(
        StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "too many sessions for principal '{}': it holds {} (sessions_per_principal), all busy; \
             end one with DELETE or wait for one to finish\n",
            principal.0,
            routing.owners.per_principal()
        ),
    );
    refused.headers_mut().insert(
        hyper::header::CONNECTION,
        hyper::header::HeaderValue::from_static("close"),
    );
    refused
}

/// A 503 when `max_sessions` sessions are live, its log line rate-limited.
async fn refuse_if_full(routing: &Routing) -> Option<Response<Body>> {
    let live = routing.manager.sessions.read().await.len();
    if live < routing.max_sessions {
        return None;
    }
    let admitted = routing
        .refusals
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .admit();
    if let Some(suppressed) = admitted {
        tracing::warn!(
            live,
            suppressed,
            "refused a new MCP session: max_sessions reached"
        );
    }
    let mut refused = auth::refusal(
        StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "too many sessions: this server holds at most {} (max_sessions); \
             end one with DELETE or wait for idle ones to expire\n",
            routing.max_sessions
        ),
    );
    // The body may be left unread, so the connection cannot be reused.
    refused.headers_mut().insert(
        hyper::header::CONNECTION,
        hyper::header::HeaderValue::from_static("close"),
    );
    Some(refused)
}

/// A request's body, read whole (as rmcp would) within the size cap and
/// `--body-timeout-secs`: past either, the answer that refuses it, with
/// the connection closed (the rest of the body is not read).
async fn read_body(routing: &Routing, body: Incoming) -> Result<Bytes, Response<Body>> {
    let refused = |status, message: String| {
        let mut refused = auth::refusal(status, message);
        refused.headers_mut().insert(
            hyper::header::CONNECTION,
            hyper::header::HeaderValue::from_static("close"),
        );
        refused
    };
    match tokio::time::timeout(routing.body_timeout, Limited::new(body, MAX_BODY).collect()).await {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(e)) => Err(refused(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body could not be read (at most {MAX_BODY} bytes): {e}\n"),
        )),
        Err(_) => Err(refused(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the request body did not arrive within {} s (--body-timeout-secs)\n",
                routing.body_timeout.as_secs()
            ),
        )),
    }
}

/// Whether a body is a JSON-RPC `initialize` request (the only request
/// that opens a session).
fn is_initialize(body: &Bytes) -> bool {
    serde_json::from_slice::<serde_json::Value>(body).is_ok_and(|value| {
        value.get("method").and_then(serde_json::Value::as_str) == Some("initialize")
            && value.get("id").is_some()
    })
}

/// `params.protocolVersion` of an `initialize` request body.
fn asked_version(body: &Bytes) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    value
        .get("params")?
        .get("protocolVersion")?
        .as_str()
        .map(str::to_owned)
}

fn without_priming_unless(version: &str, response: Response<Body>) -> Response<Body> {
    if priming::expects_priming(version) {
        return response;
    }
    response.map(priming::strip)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_interval_follows_the_idle_limit() {
        assert_eq!(sweep_every(Duration::from_secs(600)), Duration::from_secs(5));
        assert_eq!(sweep_every(Duration::from_secs(2)), Duration::from_millis(500));
        assert_eq!(sweep_every(Duration::ZERO), Duration::from_millis(200));
    }

    #[test]
    fn a_loopback_server_allows_its_own_origin_only() {
        let local: SocketAddr = "127.0.0.1:4711".parse().unwrap();
        let allowed = allowed_origins(&["https://app.example".into()], Some(local));
        assert_eq!(
            allowed,
            [
                "https://app.example",
                "http://127.0.0.1:4711",
                "http://localhost:4711"
            ]
        );
        let v6: SocketAddr = "[::1]:80".parse().unwrap();
        assert!(allowed_origins(&[], Some(v6)).contains(&"http://[::1]:80".to_string()));
        assert!(allowed_origins(&[], None).is_empty());
    }

    #[test]
    fn the_initialize_version_is_read_from_the_body() {
        let body = Bytes::from_static(
            br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}"#,
        );
        assert_eq!(asked_version(&body).as_deref(), Some("2025-03-26"));
        assert_eq!(asked_version(&Bytes::from_static(b"not json")), None);
    }
}
