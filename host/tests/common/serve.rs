//! `toolhost serve` on stdio, started for rmcp's client, and reading its
//! answers: the one MCP peer helper every test that drives the host as an
//! MCP client shares (`mcp`, `mcp_source*`, `isolation*`, `alias_mcp`,
//! `governance_stdio`, `mcp_list_changed`).

use std::process::{Command, Stdio};

use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::process::ChildStderr;

/// Spawns `cmd serve` (an [`Env::command`](super::Env::command), with any
/// extra environment already set) with its stderr as asked; the transport
/// rmcp's client serves on, and the stderr pipe when `stderr` was piped.
pub fn transport(mut cmd: Command, stderr: Stdio) -> (TokioChildProcess, Option<ChildStderr>) {
    cmd.arg("serve");
    TokioChildProcess::builder(tokio::process::Command::from(cmd))
        .stderr(stderr)
        .spawn()
        .expect("spawn toolhost serve")
}

/// `cmd serve` as rmcp's client with `handler`, initialized (its stderr
/// discarded); and the host's pid.
pub async fn client<H: ClientHandler>(cmd: Command, handler: H) -> (RunningService<RoleClient, H>, u32) {
    let (transport, _) = transport(cmd, Stdio::null());
    let pid = transport.id().expect("host pid");
    (handler.serve(transport).await.expect("initialize"), pid)
}

/// A tool call's arguments from a JSON object (anything else: none).
pub fn args(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// An MCP session over streamable HTTP at `url` with bearer `token`; a
/// failed handshake fails the test.
pub async fn http_client(url: &str, token: &str) -> RunningService<RoleClient, ()> {
    let config = rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url)
        .auth_header(token);
    ().serve(rmcp::transport::StreamableHttpClientTransport::from_config(
        config,
    ))
    .await
    .expect("MCP handshake over HTTP")
}

/// `tools/call`; a protocol-level failure fails the test.
pub async fn call<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    tool: &str,
    input: Value,
) -> CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args(input)))
        .await
        .unwrap_or_else(|e| panic!("tools/call {tool} failed at the protocol level: {e}"))
}

/// The `_meta.toolhost` object of a result (status, code, details, …).
pub fn toolhost_meta(result: &CallToolResult) -> Value {
    result
        .meta
        .as_ref()
        .and_then(|m| m.0.get("toolhost").cloned())
        .unwrap_or(Value::Null)
}

/// The text of a successful result (the test fails on an error).
pub fn text(result: &CallToolResult) -> String {
    assert_eq!(result.is_error, Some(false), "{result:?}");
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

/// Every text block of a result, joined by newlines, whatever its status
/// (a refusal's message included).
pub fn all_text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A client handler that keeps the token of every progress notification,
/// and wakes whoever awaits a number of distinct ones: the readiness signal
/// that that many calls have started running (a tool reports progress once
/// it runs), instead of polling a counter.
#[derive(Clone, Default)]
pub struct ProgressTokens {
    seen: std::sync::Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
    arrived: std::sync::Arc<tokio::sync::Notify>,
}

impl ProgressTokens {
    fn count(&self) -> usize {
        self.seen.lock().map(|s| s.len()).unwrap_or(0)
    }

    /// Forgets the calls seen so far (the next wait counts from here).
    pub fn clear(&self) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.clear();
        }
    }

    /// Waits until `n` distinct calls reported progress; `false` when
    /// `within` passed first.
    pub async fn wait_for(&self, n: usize, within: std::time::Duration) -> bool {
        let wait = async {
            loop {
                // Registered before the count is read: a notification in
                // between still wakes this waiter.
                let arrived = self.arrived.notified();
                tokio::pin!(arrived);
                arrived.as_mut().enable();
                if self.count() >= n {
                    return;
                }
                arrived.await;
            }
        };
        tokio::time::timeout(within, wait).await.is_ok()
    }
}

impl ClientHandler for ProgressTokens {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.insert(format!("{:?}", params.progress_token));
        }
        self.arrived.notify_waiters();
    }
}

/// A `toolhost serve --http` process, killed on drop, with the URL it
/// listens at and what it has logged so far.
pub struct HttpServer {
    child: std::process::Child,
    /// The streamable HTTP endpoint it printed.
    pub url: String,
    log: std::sync::Arc<std::sync::Mutex<String>>,
}

impl HttpServer {
    /// Spawns `cmd` (a `toolhost … serve --http ADDRESS` command, its
    /// environment set) and returns once the server logs the address it
    /// listens at: the readiness signal. Fails the test, with the log, when
    /// it does not within a minute.
    pub fn start(mut cmd: Command) -> HttpServer {
        use std::io::{BufRead, BufReader};
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start toolhost serve --http");
        let stderr = child.stderr.take().expect("stderr");
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let sink = log.clone();
        // Keeps draining stderr after the address, so the server never
        // blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("streamable HTTP at ").nth(1) {
                    let _ = tx.send(rest.split_whitespace().next().unwrap_or("").to_string());
                }
                if let Ok(mut log) = sink.lock() {
                    log.push_str(&line);
                    log.push('\n');
                }
            }
        });
        let mut server = HttpServer {
            child,
            url: String::new(),
            log,
        };
        server.url = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("the server did not start listening:\n{}", server.log()));
        server
    }

    /// Asks the server to stop as an operator would (SIGTERM) and waits for
    /// it to exit, at most `within`; whether it exited by then.
    pub fn terminate(&mut self, within: std::time::Duration) -> bool {
        // SAFETY: signalling our own child by its pid; it is not reaped yet
        // (only `wait` below or drop reaps it), so the pid is still its.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let until = std::time::Instant::now() + within;
        while std::time::Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        false
    }

    /// Everything the server has logged so far.
    pub fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
