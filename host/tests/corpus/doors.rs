//! One runner per front door: `toolhost call`, `toolhost batch`, MCP over
//! stdio and MCP over streamable HTTP. Each drives the real binary (one
//! server per MCP front door and backend, reused by every case) and returns
//! the case's observation (see `observe.rs`).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest, ElicitRequestParams,
    ElicitResult, ErrorData, ProgressNotificationParam, ProgressToken, Request, RequestMetaObject,
    ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RequestContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{json, Value};

use crate::backends::Backend;
use crate::cases::{Act, Case};
use crate::common::serve::{args, HttpServer};
use crate::common::Env;
use crate::observe::{self, AuditTail};

/// A way into the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Door {
    /// `toolhost call`, one process per call.
    Call,
    /// `toolhost batch`, one process per case.
    Batch,
    /// `toolhost serve` on stdio, one per backend.
    Stdio,
    /// `toolhost serve --http`, one per backend.
    Http,
}

impl Door {
    /// Every front door.
    pub const ALL: [Door; 4] = [Door::Call, Door::Batch, Door::Stdio, Door::Http];

    /// Its name in failures and in `differences.rs`.
    pub fn name(self) -> &'static str {
        match self {
            Door::Call => "cli-call",
            Door::Batch => "cli-batch",
            Door::Stdio => "mcp-stdio",
            Door::Http => "mcp-http",
        }
    }
}

/// A host under test behind one front door.
pub enum Runner {
    /// `call` or `batch`: a process per case.
    Cli { door: Door, env: Env, audit: AuditTail },
    /// An MCP client of one server.
    Mcp(Box<Mcp>),
}

impl Runner {
    /// The host with `backend`'s plan behind `door`, its server (if any)
    /// started and initialized.
    pub fn start(door: Door, backend: Backend) -> Runner {
        let env = Env::new("");
        env.set_plan(&backend.plan(env.path()));
        let audit = AuditTail::new(env.path().join("audit.jsonl"));
        match door {
            Door::Call | Door::Batch => Runner::Cli { door, env, audit },
            Door::Stdio | Door::Http => Runner::Mcp(Box::new(Mcp::start(door, env, audit))),
        }
    }

    /// Runs one case: its observation.
    pub fn run(&mut self, case: &Case) -> Value {
        let calls = if case.act == Act::Replay { 2 } else { 1 };
        let (results, progress) = match self {
            Runner::Cli { door, env, .. } => (cli(*door, env, case), observe::progress(&[])),
            Runner::Mcp(mcp) => mcp.run(case),
        };
        let audit = match self {
            Runner::Cli { audit, .. } => audit.take(calls),
            Runner::Mcp(mcp) => mcp.audit.take(calls),
        };
        observe::observation(results, progress, audit)
    }
}

/// `toolhost` for `env`, with the target folder first on `PATH`: the
/// mounted backend's plan names its server by a bare `toolhost` (see
/// `backends.rs`).
fn command(env: &Env) -> Command {
    let mut cmd = env.command();
    let mut path = std::ffi::OsString::from(crate::common::target_dir());
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    cmd.env("PATH", path);
    cmd
}

/// The idempotency key of a case (each host under test has its own store).
fn key(case: &Case) -> String {
    format!("corpus-{}", case.name)
}

/// Runs `case` through `toolhost call` or `toolhost batch`: the projected
/// results. The exit code is checked here against the statuses, since it
/// is the CLI's alone.
fn cli(door: Door, env: &Env, case: &Case) -> Vec<Value> {
    let input = (case.input)();
    let approve = ["--approve", case.tool];
    let flags: &[&str] = if case.act == Act::Approve { &approve } else { &[] };
    let calls = if case.act == Act::Replay { 2 } else { 1 };
    let command = || {
        let mut cmd = command(env);
        match door {
            Door::Call => {
                cmd.args(["call", case.tool, &input.to_string()]).args(flags);
                if case.act == Act::Replay {
                    cmd.args(["--idempotency-key", &key(case)]);
                }
            }
            _ => {
                cmd.args(["batch", "-"]).args(flags);
            }
        }
        cmd
    };
    let stdin = match door {
        Door::Call => Vec::new(),
        _ => {
            let mut line = json!({"name": case.tool, "input": input});
            if case.act == Act::Replay {
                line["idempotency_key"] = json!(key(case));
            }
            // A replay is the same line twice in one batch.
            format!("{line}\n").repeat(calls).into_bytes()
        }
    };
    let outputs: Vec<Output> = if case.act == Act::Cancel {
        vec![interrupted(command(), &stdin)]
    } else if door == Door::Call {
        // A replay is a second process with the same key.
        (0..calls)
            .map(|_| crate::common::output_with_stdin(command(), &stdin))
            .collect()
    } else {
        vec![crate::common::output_with_stdin(command(), &stdin)]
    };
    let mut results = Vec::new();
    for out in outputs {
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let parsed: Vec<Value> = stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}\nstderr:\n{stderr}")))
            .collect();
        assert!(
            !parsed.is_empty(),
            "{}: no result on stdout\nstderr:\n{stderr}",
            case.name
        );
        let all_ok = parsed.iter().all(|r| r["status"] == "success");
        let expected_exit = match (case.act, all_ok) {
            (Act::Cancel, _) => 130,
            (_, true) => 0,
            (_, false) => 1,
        };
        assert_eq!(
            out.status.code(),
            Some(expected_exit),
            "{} through {}: exit code for {stdout}\nstderr:\n{stderr}",
            case.name,
            door.name()
        );
        results.extend(parsed.iter().map(observe::from_tool_result));
    }
    results
}

/// Runs `cmd` with `stdin`, sends it SIGINT once the call is about to run
/// (its `tool:pre` event is the readiness signal), and returns its output.
fn interrupted(mut cmd: Command, stdin: &[u8]) -> Output {
    let mut child = cmd
        .env("RUST_LOG", "info,toolhost::events=debug")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn toolhost");
    let mut input = child.stdin.take().expect("stdin");
    input.write_all(stdin).expect("write stdin");
    drop(input);
    let stderr = child.stderr.take().expect("stderr");
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("tool:pre") {
                let _ = started_tx.send(());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    if started_rx.recv_timeout(Duration::from_secs(30)).is_err() {
        let _ = child.kill();
        panic!("the call never started:\n{}", reader.join().unwrap_or_default());
    }
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).expect("SIGINT the host");
    let mut out = child.wait_with_output().expect("wait for toolhost");
    out.stderr = reader.join().unwrap_or_default().into_bytes();
    out
}

/// The MCP client: approves or declines elicitations as the case says,
/// and keeps every progress report.
#[derive(Clone, Default)]
pub struct Client {
    approve: Arc<AtomicBool>,
    reports: Arc<Mutex<Vec<Value>>>,
    arrived: Arc<tokio::sync::Notify>,
}

impl Client {
    /// The reports of the call with progress token `token`: a late report
    /// of an earlier call (see the report on HTTP) must not count.
    fn reports(&self, token: &ProgressToken) -> Vec<Value> {
        let token = json!(token);
        self.reports
            .lock()
            .map(|r| r.iter().filter(|r| r["token"] == token).cloned().collect())
            .unwrap_or_default()
    }
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        info.capabilities =
            serde_json::from_value::<ClientCapabilities>(json!({"elicitation": {"form": {}}}))
                .expect("capabilities");
        info
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let answer = if self.approve.load(Ordering::SeqCst) {
            json!({"action": "accept", "content": {"approve": true}})
        } else {
            json!({"action": "decline"})
        };
        Ok(serde_json::from_value(answer).expect("elicitation answer"))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Ok(mut reports) = self.reports.lock() {
            reports.push(json!({
                "token": params.progress_token,
                "progress": params.progress,
                "total": params.total,
                "message": params.message,
            }));
        }
        self.arrived.notify_waiters();
    }
}

/// An MCP front door: the server (stdio child or HTTP process) and its
/// initialized client.
pub struct Mcp {
    runtime: tokio::runtime::Runtime,
    client: RunningService<RoleClient, Client>,
    handler: Client,
    audit: AuditTail,
    _http: Option<HttpServer>,
    _env: Env,
}

/// The bearer token of the HTTP servers.
const TOKEN: &str = "corpus-token-0123456789";

impl Mcp {
    fn start(door: Door, env: Env, audit: AuditTail) -> Mcp {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let handler = Client::default();
        let (client, http) = if door == Door::Http {
            let mut cmd = command(&env);
            cmd.args(["serve", "--http", "127.0.0.1:0"])
                .env("TOOLHOST_TOKEN", TOKEN);
            let server = HttpServer::start(cmd);
            let config =
                StreamableHttpClientTransportConfig::with_uri(server.url.as_str()).auth_header(TOKEN);
            // The transport spawns its worker on the runtime it is made in.
            let client = runtime
                .block_on(async {
                    handler
                        .clone()
                        .serve(StreamableHttpClientTransport::from_config(config))
                        .await
                })
                .unwrap_or_else(|e| panic!("initialize over HTTP: {e}\n{}", server.log()));
            (client, Some(server))
        } else {
            let (client, _pid) =
                runtime.block_on(crate::common::serve::client(command(&env), handler.clone()));
            (client, None)
        };
        Mcp {
            runtime,
            client,
            handler,
            audit,
            _http: http,
            _env: env,
        }
    }

    /// The projected results and the progress seen.
    fn run(&mut self, case: &Case) -> (Vec<Value>, Value) {
        self.handler
            .approve
            .store(case.act == Act::Approve, Ordering::SeqCst);
        let mut params =
            CallToolRequestParams::new(case.tool.to_string()).with_arguments(args((case.input)()));
        if case.act == Act::Replay {
            let mut meta = RequestMetaObject::new();
            meta.0.insert("idempotency_key".into(), json!(key(case)));
            params.meta = Some(meta);
        }
        let calls = if case.act == Act::Replay { 2 } else { 1 };
        self.runtime.block_on(async {
            let mut results = Vec::new();
            let mut progress = Vec::new();
            for _ in 0..calls {
                let handle = self
                    .client
                    .send_cancellable_request(
                        ClientRequest::CallToolRequest(Request::new(params.clone())),
                        PeerRequestOptions::no_options(),
                    )
                    .await
                    .unwrap_or_else(|e| panic!("{}: sending tools/call failed: {e}", case.name));
                let token = handle.progress_token.clone();
                if case.act == Act::Cancel {
                    self.started(&token).await;
                    handle.cancel(Some("corpus".into())).await.expect("cancel");
                    // A cancelled request is not answered (MCP's rule).
                } else {
                    match handle.await_response().await {
                        Ok(ServerResult::CallToolResult(result)) => results.push(observe::from_mcp(&result)),
                        other => panic!("{}: tools/call answered {other:?}", case.name),
                    }
                }
                progress = self.handler.reports(&token);
            }
            (results, observe::progress(&progress))
        })
    }

    /// Waits for the first progress of the call with `token`: it runs.
    async fn started(&self, token: &ProgressToken) {
        let wait = async {
            loop {
                // Registered before the reports are read: a report in
                // between still wakes this waiter.
                let arrived = self.handler.arrived.notified();
                tokio::pin!(arrived);
                arrived.as_mut().enable();
                if !self.handler.reports(token).is_empty() {
                    return;
                }
                arrived.await;
            }
        };
        tokio::time::timeout(Duration::from_secs(30), wait)
            .await
            .expect("the call never reported progress");
    }
}
