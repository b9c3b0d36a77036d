//! Helpers shared by the tests that mount MCP servers and drive the host
//! as an MCP client: the pinned node peers, an inner `toolhost serve
//! --http`, `toolhost serve` over stdio, and reading results.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

use crate::common::Env;

/// The path of a node peer script in `tests/node`, whose packages must be
/// installed (the test fails, naming the command, when they are not).
pub fn node_peer(script: &str) -> String {
    let node = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/node");
    assert!(
        node.join("node_modules/@modelcontextprotocol/sdk").is_dir(),
        "run `npm ci --prefix tests/node --no-audit --no-fund` first (the README's test command does)"
    );
    node.join(script).display().to_string()
}

/// Kills the child on drop.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `toolhost --plan PLAN serve --http ADDRESS` with the bearer
/// `token`, and returns it with its URL (read from its listening line).
pub fn http_server(env: &Env, plan: &Path, address: &str, token: &str) -> (Running, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--plan")
        .arg(plan)
        .args(["serve", "--http", address])
        .current_dir(env.path())
        .env("TOOLHOST_TOKEN", token)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the inner toolhost");
    let stderr = child.stderr.take().expect("stderr");
    let server = Running(child);
    let mut lines = BufReader::new(stderr).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("the inner server ended before listening")
            .expect("read stderr");
        if let Some(rest) = line.split("streamable HTTP at ").nth(1) {
            break rest.split_whitespace().next().unwrap_or("").to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (server, url)
}

/// `toolhost serve` over stdio for `env`'s plan, as rmcp's client with
/// `handler`; and the host's pid.
pub async fn serve<H: rmcp::ClientHandler>(env: &Env, handler: H) -> (RunningService<RoleClient, H>, u32) {
    let mut cmd = tokio::process::Command::from(env.command());
    cmd.arg("serve");
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn toolhost serve");
    let pid = transport.id().expect("host pid");
    (handler.serve(transport).await.expect("initialize"), pid)
}

/// An object input as MCP arguments.
pub fn args(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// `tools/call`; a protocol-level failure fails the test.
pub async fn call<H: rmcp::ClientHandler>(
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
