//! One mounted MCP server: its connection (a child process over stdio, or
//! streamable HTTP), calls with cancellation and progress, and what happens
//! when it dies (as for an isolated module's worker: the calls in flight
//! answer `module_crashed`, the next call reconnects after a backoff, and
//! five crashes in a minute leave the source answering `module_failed`).

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use abi_stable::std_types::RStr;
use rmcp::model::{
    CallToolRequestParams, ClientRequest, ProgressNotificationParam, ProgressToken, Request, ServerResult,
    Tool,
};
use rmcp::model::{ClientConfig, ElicitRequestParams, ElicitResult};
use rmcp::service::{
    NotificationContext, Peer, PeerRequestOptions, RequestContext, RunningService, ServiceError,
};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient};
use serde_json::{json, Value};
use toolhost_core::abi::FfiContext;
use toolhost_core::wire::codes;
use toolhost_core::{CallRequest, Status, ToolResult};

use super::bounds::{self, McpLimits, WalkError, Walked};
use super::error::{HandshakeError, SourceError};
use super::input::{self, Callers, InputPolicy};
use super::{convert, probe, runtime};

use crate::context::CallContext;
use crate::isolate::{crashed_result, unavailable_result};
use crate::plan::McpSource;
use toolhost_supervise::{describe, reaper, Ended, Process, Restarts};

/// A stdio server started and past its handshake: the client service,
/// the process (under its reaper) and the thread forwarding its stderr.
type Started = (
    RunningService<RoleClient, Handler>,
    Arc<Process>,
    super::stderr::Forwarder,
);

/// The most `input_required` rounds one call may take.
const MAX_INPUT_ROUNDS: usize = 10;

/// How long connecting (spawn, initialize, tools/list) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);

type Routes = Arc<Mutex<HashMap<ProgressToken, mpsc::Sender<Reply>>>>;

/// What a waiting call hears.
enum Reply {
    Progress(String),
    Done(Box<ToolResult>),
    Cancelled,
    Lost(String),
}

/// The client side: routes progress to calls, notes list changes, and
/// passes the server's requests for input on (see [`input`]).
#[derive(Clone)]
struct Handler {
    routes: Routes,
    on_change: Arc<dyn Fn() + Send + Sync>,
    label: String,
    policy: InputPolicy,
    callers: Arc<Callers>,
    /// Connecting again with `initialize` alone (see [`Server::open`]): the
    /// handshake then offers the newest revision that has one.
    legacy: bool,
}

impl ClientHandler for Handler {
    /// Declares form elicitation unless the plan declines every request
    /// for input: a server then asks, and the caller answers.
    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        if self.legacy {
            info.protocol_version = rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE;
        }
        if self.policy == InputPolicy::Pass {
            if let Ok(capabilities) = serde_json::from_value(json!({"elicitation": {"form": {}}})) {
                info.capabilities = capabilities;
            }
        }
        info
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        Ok(input::elicit(self.policy, &self.callers, &self.label, request).await)
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let sender = self
            .routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&params.progress_token)
            .cloned();
        if let Some(sender) = sender {
            let mut report = json!({ "progress": params.progress });
            if let Some(total) = params.total {
                report["total"] = json!(total);
            }
            if let Some(message) = params.message {
                report["message"] = json!(message);
            }
            let _ = sender.send(Reply::Progress(report.to_string()));
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        (self.on_change)();
    }
}

/// A live connection.
pub(super) struct Conn {
    pub(super) peer: Peer<RoleClient>,
    service: Mutex<Option<RunningService<RoleClient, Handler>>>,
    /// A stdio server's reaper; SIGTERM to it ends the server and all it
    /// started (see [`toolhost_supervise::reaper`]).
    reaper: Option<Arc<Process>>,
    /// How the stdio server ended, once it has.
    pub(super) ended: Mutex<Option<Ended>>,
    pub(super) closing: AtomicBool,
    /// Its crash was counted: one failed connection is one crash, however
    /// many calls were in flight on it (each of them, and the waiter of a
    /// stdio server, reports it).
    counted: AtomicBool,
    /// Calls waiting on it, and whether a liveness probe watches it (a
    /// server reached by URL; see [`super::probe`]).
    pub(super) watch: probe::Watch,
    /// The thread logging a stdio server's stderr.
    stderr: Mutex<Option<super::stderr::Forwarder>>,
}

/// One `[tools.mcp]` server.
pub struct Server {
    label: String,
    source: McpSource,
    routes: Routes,
    state: Restarts<Conn>,
    /// Run (on the MCP runtime) when the server says its tool list changed.
    on_change: Mutex<Option<Arc<dyn Fn() + Send + Sync>>>,
    /// The server said its tool list changed since the last re-read began.
    refresh_pending: AtomicBool,
    /// A refresher thread is running.
    refresher: AtomicBool,
    /// Caps on its tool list.
    limits: McpLimits,
    /// The last whole `tools/list` walk's counts, and the tools it refused
    /// for their names (`name (reason)`, escaped).
    walked: Mutex<(Walked, Vec<String>)>,
    /// The protocol revision the last connection negotiated.
    protocol: Mutex<Option<String>>,
    /// The calls in flight and who can answer for each.
    callers: Arc<Callers>,
}

/// How a connection starts: `server/discover` first, offering every
/// revision rmcp knows, newest first, so a server that answers it is
/// spoken to in the newest revision both know (2026-07-28 when it speaks
/// it; one that speaks only 2026-07-28, with no `initialize`, can be
/// mounted at all). A server that answers discover as a legacy server does
/// (an error, or nothing for 10 s) gets the `initialize` handshake offering
/// the newest revision that has one, and answers with the newest it
/// supports.
fn lifecycle() -> ClientLifecycleMode {
    use rmcp::model::ProtocolVersion;
    let mut preferred = ProtocolVersion::known_up_to(&ProtocolVersion::LATEST).to_vec();
    preferred.reverse();
    ClientLifecycleMode::Auto {
        preferred_versions: preferred,
        legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
    }
}

impl Server {
    /// A server not connected yet.
    pub fn new(label: String, source: McpSource, limits: McpLimits) -> Arc<Self> {
        Arc::new(Server {
            label,
            source,
            routes: Arc::default(),
            state: Restarts::default(),
            on_change: Mutex::new(None),
            refresh_pending: AtomicBool::new(false),
            refresher: AtomicBool::new(false),
            limits,
            walked: Mutex::default(),
            protocol: Mutex::default(),
            callers: Arc::default(),
        })
    }

    /// The plan's `[tools.mcp]` table it was mounted from.
    pub fn source(&self) -> &McpSource {
        &self.source
    }

    /// The label messages name it by.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Sets what runs when the server's tool list changes.
    pub fn set_on_change(&self, callback: Arc<dyn Fn() + Send + Sync>) {
        *self.on_change.lock().unwrap_or_else(PoisonError::into_inner) = Some(callback);
    }

    /// Connects (the first time) and returns the server's tools.
    pub fn connect(self: &Arc<Self>) -> Result<Vec<Tool>, SourceError> {
        let conn = self.open()?;
        *self.protocol.lock().unwrap_or_else(PoisonError::into_inner) = conn
            .peer
            .peer_info()
            .map(|info| info.protocol_version.to_string());
        self.state.install(conn.clone());
        self.list_tools(&conn)
    }

    /// The server's current tools.
    pub fn tools(self: &Arc<Self>) -> Result<Vec<Tool>, SourceError> {
        let conn = self
            .live(|| false, || false)
            .map_err(|r| SourceError::Unavailable(r.message().to_string()))?;
        self.list_tools(&conn)
    }

    /// Walks `tools/list` under the plan's caps and drops the tools whose
    /// names break MCP's rule (each logged); a list past a cap is an error
    /// and nothing of it is kept.
    fn list_tools(&self, conn: &Arc<Conn>) -> Result<Vec<Tool>, SourceError> {
        let peer = conn.peer.clone();
        let label = self.label.clone();
        let limits = self.limits.clone();
        let (listed, walked) = runtime::wait(async move {
            match tokio::time::timeout(CONNECT_TIMEOUT, bounds::walk(&peer, &limits)).await {
                Ok(Ok(done)) => Ok(done),
                Ok(Err(WalkError::Service(error))) => Err(SourceError::List {
                    label,
                    error: Box::new(error),
                }),
                Ok(Err(WalkError::Bound(bound, walked))) => Err(SourceError::Bounded {
                    label,
                    bound,
                    walked: walked.describe(&limits),
                }),
                Err(_) => Err(SourceError::ListTimeout {
                    label,
                    secs: CONNECT_TIMEOUT.as_secs(),
                }),
            }
        })??;
        let mut refused = Vec::new();
        let tools = listed
            .into_iter()
            .filter(|tool| match bounds::check_name(&tool.name) {
                Ok(()) => true,
                Err(why) => {
                    let name = crate::escape::escape_line(&tool.name).into_owned();
                    tracing::warn!(server = %self.label, tool = %name, "refused a tool: {why}");
                    refused.push(format!("'{name}' ({why})"));
                    false
                }
            })
            .collect();
        *self.walked.lock().unwrap_or_else(PoisonError::into_inner) = (walked, refused);
        Ok(tools)
    }

    /// The protocol revision negotiated when it was mounted.
    pub fn protocol(&self) -> Option<String> {
        self.protocol
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The last whole walk's counts, in words, and the tools it refused.
    pub fn walked(&self) -> (String, Vec<String>) {
        let (walked, refused) = self.walked.lock().unwrap_or_else(PoisonError::into_inner).clone();
        (walked.describe(&self.limits), refused)
    }

    /// Notes that the tool list changed and makes sure one refresher runs
    /// (off the client's task: the refresh calls tools/list). However many
    /// notifications arrive, there is at most one refresher thread per
    /// server, and the notifications that arrive while it re-reads the
    /// list cost one more refresh, not one each.
    fn schedule_refresh(self: &Arc<Self>) {
        self.refresh_pending.store(true, Ordering::SeqCst);
        if self.refresher.swap(true, Ordering::SeqCst) {
            return;
        }
        let me = Arc::downgrade(self);
        let spawned = std::thread::Builder::new()
            .name("toolhost-mcp-refresh".into())
            .spawn(move || loop {
                let Some(server) = me.upgrade() else { return };
                if server.refresh_pending.swap(false, Ordering::SeqCst) {
                    let callback = server
                        .on_change
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .clone();
                    drop(server);
                    if let Some(callback) = callback {
                        callback();
                    }
                    continue;
                }
                server.refresher.store(false, Ordering::SeqCst);
                // A notification between the swap and the store saw a
                // refresher still running: take its refresh on.
                if !server.refresh_pending.load(Ordering::SeqCst)
                    || server.refresher.swap(true, Ordering::SeqCst)
                {
                    return;
                }
            });
        if let Err(e) = spawned {
            self.refresher.store(false, Ordering::SeqCst);
            tracing::error!(server = %self.label, "cannot start the tool-list refresher: {e}");
        }
    }

    /// Spawns or dials the server and runs the MCP handshake.
    fn open(self: &Arc<Self>) -> Result<Arc<Conn>, SourceError> {
        let make_handler = |legacy: bool| Handler {
            routes: self.routes.clone(),
            on_change: {
                let me = Arc::downgrade(self);
                Arc::new(move || {
                    if let Some(me) = me.upgrade() {
                        me.schedule_refresh();
                    }
                })
            },
            label: self.label.clone(),
            policy: self.source.elicitation,
            callers: self.callers.clone(),
            legacy,
        };
        let handler = make_handler(false);
        let label = self.label.clone();
        if let Some(url) = self.source.url.clone() {
            let headers = self.source.headers.clone();
            let legacy_handler = make_handler(true);
            let service = runtime::wait(async move {
                let mut custom = HashMap::new();
                for (name, value) in headers {
                    let name = hyper::header::HeaderName::try_from(name.as_str()).map_err(|error| {
                        SourceError::HeaderName {
                            label: label.clone(),
                            name: name.clone(),
                            error,
                        }
                    })?;
                    let value = hyper::header::HeaderValue::try_from(value.as_str()).map_err(|error| {
                        SourceError::HeaderValue {
                            label: label.clone(),
                            name: name.to_string(),
                            error,
                        }
                    })?;
                    custom.insert(name, value);
                }
                let config =
                    rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                        url.as_str(),
                    )
                    .custom_headers(custom);
                let transport = rmcp::transport::StreamableHttpClientTransport::from_config(config.clone());
                let mut attempt = tokio::time::timeout(
                    CONNECT_TIMEOUT,
                    handler.serve_with_lifecycle(transport, lifecycle()),
                )
                .await;
                // A server of an earlier revision may answer `server/discover`
                // with a result that is not a discover result (an empty one, as
                // some answer any method they do not know), which rmcp's probe
                // takes as an error rather than as "legacy". Over HTTP a second
                // connection costs one round trip: connect again with
                // `initialize` alone. (Over stdio the process is started again:
                // see below.)
                if matches!(
                    attempt,
                    Ok(Err(rmcp::service::ClientInitializeError::ExpectedInitResult(_)))
                ) {
                    let transport = rmcp::transport::StreamableHttpClientTransport::from_config(config);
                    attempt = tokio::time::timeout(
                        CONNECT_TIMEOUT,
                        legacy_handler.serve_with_lifecycle(transport, ClientLifecycleMode::Initialize),
                    )
                    .await;
                }
                match attempt {
                    Ok(Ok(service)) => Ok(service),
                    Ok(Err(error)) => Err(SourceError::Initialize {
                        label,
                        url,
                        error: Box::new(error),
                    }),
                    Err(_) => Err(SourceError::InitializeTimeout {
                        label,
                        url,
                        secs: CONNECT_TIMEOUT.as_secs(),
                    }),
                }
            })??;
            return Ok(Arc::new(Conn {
                peer: service.peer().clone(),
                service: Mutex::new(Some(service)),
                reaper: None,
                ended: Mutex::new(None),
                closing: AtomicBool::new(false),
                counted: AtomicBool::new(false),
                watch: probe::Watch::default(),
                stderr: Mutex::new(None),
            }));
        }

        // A server of an earlier revision may answer `server/discover` with
        // a result that is not a discover result (an empty one, as some
        // answer any method they do not know), which rmcp's probe takes as
        // an error rather than as "legacy". That process has read the probe
        // already: start it again and speak `initialize` alone.
        let (service, process, forwarder) = match self.spawn_stdio(make_handler(false), lifecycle()) {
            Err(SourceError::Handshake {
                error: HandshakeError::Failed(error),
                ..
            }) if matches!(
                *error,
                rmcp::service::ClientInitializeError::ExpectedInitResult(_)
            ) =>
            {
                tracing::info!(server = %label, "the MCP server did not understand server/discover: starting it again with initialize");
                self.spawn_stdio(make_handler(true), ClientLifecycleMode::Initialize)?
            }
            started => started?,
        };
        let conn = Arc::new(Conn {
            peer: service.peer().clone(),
            service: Mutex::new(Some(service)),
            reaper: Some(process.clone()),
            ended: Mutex::new(None),
            closing: AtomicBool::new(false),
            counted: AtomicBool::new(false),
            watch: probe::Watch::default(),
            stderr: Mutex::new(Some(forwarder)),
        });
        let (me, watched) = (self.clone(), conn.clone());
        std::thread::Builder::new()
            .name("toolhost-mcp-wait".into())
            .spawn(move || {
                let status = process.wait();
                me.ended(&watched, describe(status));
            })
            .map_err(|error| SourceError::Watch { label, error })?;
        Ok(conn)
    }

    /// Spawns the server's command under its reaper and runs the MCP
    /// handshake with `handler` in `lifecycle`; on failure the process is
    /// ended and its stderr drained into the log.
    fn spawn_stdio(&self, handler: Handler, lifecycle: ClientLifecycleMode) -> Result<Started, SourceError> {
        let label = self.label.clone();
        let (program, args) = self
            .source
            .command
            .split_first()
            .ok_or_else(|| SourceError::NoCommand { label: label.clone() })?;
        // The server runs under a subreaper (this executable, re-run as
        // `__reaper`) that kills whatever the server started, even what
        // left its process group, when the server ends or is stopped.
        let reaper_program = toolhost_supervise::program::get().map_err(|error| SourceError::Reaper {
            label: label.clone(),
            error,
        })?;
        let mut command = reaper::command(&reaper_program, "MCP server", program, args);
        command
            .env_clear()
            .envs(std::env::vars_os().filter(|(name, _)| passed_env(name)))
            .envs(&self.source.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = toolhost_supervise::spawn(command).map_err(|error| SourceError::Spawn {
            label: label.clone(),
            program: program.clone(),
            error,
        })?;
        let pipes = (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let process = Arc::new(Process::new(child));
        let (Some(stdin), Some(stdout), Some(stderr)) = pipes else {
            process.terminate();
            process.wait();
            return Err(SourceError::Pipes { label });
        };
        let forwarder = match super::stderr::forward(label.clone(), stderr) {
            Ok(forwarder) => forwarder,
            Err(error) => {
                process.terminate();
                process.wait();
                return Err(SourceError::Watch { label, error });
            }
        };
        let limits = self.limits.clone();
        let handshake = runtime::wait(async move {
            let stdin = tokio::process::ChildStdin::from_std(stdin).map_err(HandshakeError::Pipe)?;
            let stdout = tokio::process::ChildStdout::from_std(stdout).map_err(HandshakeError::Pipe)?;
            let stdout = super::list_filter::filtered(stdout, limits);
            match tokio::time::timeout(
                CONNECT_TIMEOUT,
                handler.serve_with_lifecycle((stdout, stdin), lifecycle),
            )
            .await
            {
                Ok(Ok(service)) => Ok(service),
                Ok(Err(e)) => Err(HandshakeError::Failed(Box::new(e))),
                Err(_) => Err(HandshakeError::Timeout {
                    secs: CONNECT_TIMEOUT.as_secs(),
                }),
            }
        })
        .map_err(HandshakeError::Runtime)
        .and_then(|r| r);
        let service = match handshake {
            Ok(service) => service,
            Err(error) => {
                process.terminate();
                let status = process.wait();
                forwarder.drain(Duration::from_secs(1));
                return Err(SourceError::Handshake {
                    label,
                    program: program.clone(),
                    why: describe(status).why,
                    error,
                });
            }
        };
        Ok((service, process, forwarder))
    }

    /// The connection died (`ended` says how): forget it and count a crash.
    pub(super) fn ended(&self, conn: &Arc<Conn>, ended: Ended) {
        *conn.ended.lock().unwrap_or_else(PoisonError::into_inner) = Some(ended.clone());
        let crashed = !conn.closing.load(Ordering::SeqCst) && !conn.counted.swap(true, Ordering::SeqCst);
        let crashes = self.state.ended(conn, crashed);
        if crashed {
            tracing::error!(server = %self.label, crashes, "MCP server {}", ended.why);
        }
        if let Some(service) = conn.service.lock().unwrap_or_else(PoisonError::into_inner).take() {
            let _ = runtime::handle().map(|h| {
                h.spawn(async move {
                    let _ = service.cancel().await;
                })
            });
        }
    }

    /// The live connection, reconnecting (after the backoff) if there is
    /// none; `stop` ends the wait for another caller's reconnection.
    fn live(
        self: &Arc<Self>,
        stop: impl Fn() -> bool,
        cancelled: impl Fn() -> bool,
    ) -> Result<Arc<Conn>, ToolResult> {
        let conn = self.state.live(
            || {
                let conn = self.open()?;
                tracing::info!(server = %self.label, "reconnected to the MCP server");
                toolhost_telemetry::metrics::server_restarted(&self.label);
                Ok::<_, SourceError>(conn)
            },
            stop,
        );
        conn.map_err(|why| unavailable_result(&why, &format!("MCP server '{}'", self.label), cancelled()))
    }

    /// Runs one call on the server; blocks until it answers, is cancelled
    /// (then `notifications/cancelled` is sent) or dies.
    pub fn call(self: &Arc<Self>, tool: &str, call_json: &str, ctx: &CallContext) -> ToolResult {
        let request: CallRequest = match serde_json::from_str(call_json) {
            Ok(request) => request,
            Err(e) => return ToolResult::failure("", Status::Error, codes::INTERNAL, e.to_string()),
        };
        let arguments = match request.input {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        let conn = match self.live(
            || ctx.is_cancelled() || ctx.remaining_ms() == 0,
            || ctx.is_cancelled(),
        ) {
            Ok(conn) => conn,
            Err(result) => return result,
        };
        // A server reached by URL has no process to wait on: a probe
        // notices its loss while calls are in flight.
        let _in_flight = probe::watch(self, &conn, conn.reaper.is_none());
        let _asking = self.callers.enter(ctx.ask.clone());
        let (tx, rx) = mpsc::channel();
        let (cancel_tx, mut cancel_rx) = tokio::sync::oneshot::channel::<()>();
        let (peer, routes, name) = (conn.peer.clone(), self.routes.clone(), tool.to_string());
        let (policy, asker) = (self.source.elicitation, ctx.ask.clone());
        let trace = (request.traceparent, request.tracestate);
        let spawned = runtime::handle().map(|h| {
            h.spawn(async move {
                let mut params = CallToolRequestParams::new(name).with_arguments(arguments);
                params.meta = trace_meta(trace);
                // A 2026-07-28 server may answer input_required: the caller
                // answers, and the call is sent again with the answers.
                for round in 1..=MAX_INPUT_ROUNDS {
                    let request = ClientRequest::CallToolRequest(Request::new(params.clone()));
                    let mut handle = match peer
                        .send_cancellable_request(request, PeerRequestOptions::no_options())
                        .await
                    {
                        Ok(handle) => handle,
                        Err(e) => {
                            let _ = tx.send(Reply::Lost(e.to_string()));
                            return;
                        }
                    };
                    let token = handle.progress_token.clone();
                    routes
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(token.clone(), tx.clone());
                    let outcome = tokio::select! {
                        answer = &mut handle.rx => Some(answer),
                        _ = &mut cancel_rx => None,
                    };
                    routes
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .remove(&token);
                    let reply = match outcome {
                        Some(Ok(Ok(ServerResult::CallToolResult(result)))) => {
                            Reply::Done(Box::new(convert::result(result)))
                        }
                        Some(Ok(Ok(ServerResult::InputRequiredResult(asked)))) => {
                            let answered = match round {
                                MAX_INPUT_ROUNDS => {
                                    Err(format!("the server asked for input {MAX_INPUT_ROUNDS} times"))
                                }
                                _ => {
                                    input::fulfil(
                                        policy,
                                        asker.as_ref(),
                                        asked.input_requests.as_ref().unwrap_or(&Default::default()),
                                    )
                                    .await
                                }
                            };
                            match answered {
                                Ok(responses) => {
                                    params.input_responses = Some(responses);
                                    params.request_state = asked.request_state.clone();
                                    continue;
                                }
                                Err(why) => Reply::Done(Box::new(convert::input_declined(&asked, &why))),
                            }
                        }
                        Some(Ok(Ok(_))) => Reply::Done(Box::new(convert::protocol_error(
                            "it answered tools/call with something else",
                        ))),
                        Some(Ok(Err(ServiceError::McpError(e)))) => {
                            Reply::Done(Box::new(convert::protocol_error(e.message)))
                        }
                        Some(Ok(Err(e))) => Reply::Lost(e.to_string()),
                        Some(Err(_)) => Reply::Lost("the connection closed".into()),
                        None => {
                            let _ = handle.cancel(Some("cancelled by toolhost".into())).await;
                            Reply::Cancelled
                        }
                    };
                    let _ = tx.send(reply);
                    return;
                }
            })
        });
        if let Err(error) = spawned {
            return ToolResult::failure("", Status::Error, codes::INTERNAL, error.to_string());
        }
        let mut cancel = Some(cancel_tx);
        loop {
            match rx.recv_timeout(Duration::from_millis(20)) {
                Ok(Reply::Progress(json)) => ctx.progress(RStr::from_str(&json)),
                Ok(Reply::Done(result)) => return *result,
                Ok(Reply::Cancelled) => {
                    return ToolResult::failure(
                        "",
                        Status::Cancelled,
                        codes::CANCELLED,
                        format!(
                            "the call was cancelled; MCP server '{}' was sent notifications/cancelled",
                            self.label
                        ),
                    )
                }
                Ok(Reply::Lost(message)) => return self.lost(&conn, &message),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    // The connection was found dead (its process ended,
                    // or the probe lost it) while this call waited.
                    if let Some(ended) = conn.ended.lock().unwrap_or_else(PoisonError::into_inner).clone() {
                        return crashed_result(&self.label, &ended.why, ended.details);
                    }
                    if ctx.is_cancelled() {
                        if let Some(cancel) = cancel.take() {
                            let _ = cancel.send(());
                        }
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return self.lost(&conn, "the call's task ended")
                }
            }
        }
    }

    /// The answer for a call whose connection failed under it.
    fn lost(&self, conn: &Arc<Conn>, message: &str) -> ToolResult {
        // A stdio server's exit status arrives from its waiter thread.
        if conn.reaper.is_some() {
            for _ in 0..100 {
                if let Some(ended) = conn.ended.lock().unwrap_or_else(PoisonError::into_inner).clone() {
                    return crashed_result(&self.label, &ended.why, ended.details);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        // An HTTP server (or a stdio one that closed its pipe but lives):
        // drop the connection so the next call reconnects.
        self.ended(
            conn,
            Ended {
                why: format!("lost its connection ({message})"),
                details: json!({}),
            },
        );
        stop(&conn.reaper);
        crashed_result(
            &self.label,
            &format!("lost its connection ({message})"),
            json!({}),
        )
    }

    /// Ends the connection (and a stdio server's process group).
    pub fn shutdown(&self) {
        let Some(conn) = self.state.take() else { return };
        conn.closing.store(true, Ordering::SeqCst);
        if let Some(service) = conn.service.lock().unwrap_or_else(PoisonError::into_inner).take() {
            let _ = runtime::wait(async move {
                let _ = tokio::time::timeout(Duration::from_secs(2), service.cancel()).await;
            });
        }
        // A stdio server sees its input close and may finish what it was
        // doing (record its audit, clean up); then its group is ended.
        if conn.reaper.is_some() {
            for _ in 0..200 {
                if conn
                    .ended
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .is_some()
                {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        stop(&conn.reaper);
        // Its last lines (and the count of any dropped) reach the log
        // before the host goes on, or exits.
        let forwarder = conn.stderr.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(forwarder) = forwarder {
            forwarder.drain(Duration::from_millis(500));
        }
    }
}

/// Ends a stdio server: its reaper, on SIGTERM, kills the server and every
/// process it started, then exits.
fn stop(reaper: &Option<Arc<Process>>) {
    if let Some(reaper) = reaper {
        reaper.terminate();
    }
}

/// Whether the host's variable `name` reaches a stdio MCP server. Only what
/// a program needs to run (the search path, the user, the locale, the
/// temporary directory, the terminal): the rest of the host's environment
/// (tokens, keys) is not the server's; the plan's `env` adds what it needs.
fn passed_env(name: &std::ffi::OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    matches!(name, "PATH" | "HOME" | "USER" | "LANG" | "TMPDIR" | "TERM") || name.starts_with("LC_")
}

/// The call's W3C trace context as request `_meta` (`traceparent`,
/// `tracestate`), so the server's own spans continue the caller's trace.
fn trace_meta(
    (traceparent, tracestate): (Option<String>, Option<String>),
) -> Option<rmcp::model::RequestMetaObject> {
    let traceparent = traceparent?;
    let mut meta = serde_json::Map::new();
    meta.insert("traceparent".into(), Value::String(traceparent));
    if let Some(state) = tracestate {
        meta.insert("tracestate".into(), Value::String(state));
    }
    Some(rmcp::model::RequestMetaObject(rmcp::model::MetaObject(meta)))
}
