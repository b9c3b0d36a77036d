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
