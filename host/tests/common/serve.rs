//! `toolhost serve` on stdio, started for rmcp's client: the start-up the
//! MCP tests (`mcp`, `mcp_source`, `isolation`) share.

use std::process::{Command, Stdio};

use rmcp::model::JsonObject;
use rmcp::transport::TokioChildProcess;
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

/// A tool call's arguments from a JSON object (anything else: none).
pub fn args(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}
