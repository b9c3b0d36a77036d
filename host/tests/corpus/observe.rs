//! What a front door answered, reduced to what must be equal everywhere:
//! one projection for a CLI ToolResult and for an MCP `CallToolResult`
//! (status, code, message, details, output, truncation, redactions, link),
//! the progress the caller saw, and the host's audit records with ids,
//! times, durations and hash-chain fields taken out.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use rmcp::model::CallToolResult;
use serde_json::{json, Map, Value};

/// A CLI ToolResult (from `call` or one line of `batch`) as projected.
pub fn from_tool_result(result: &Value) -> Value {
    let error = &result["error"];
    let metadata = &result["metadata"];
    json!({
        "status": result["status"],
        "code": error["code"],
        "message": error["message"],
        "retryable": error["retryable"],
        "details": error["details"],
        "output": result["output"],
        "truncated": metadata["truncated"],
        "redactions": metadata["redactions"],
        "link": !metadata["resource_link"].is_null(),
    })
}

/// An MCP tool result as projected: the status, code and details travel in
/// `_meta.toolhost`; a failure's message is its first text block and its
/// output the text after it; a success's output is its structured content,
/// else its text.
pub fn from_mcp(result: &CallToolResult) -> Value {
    let info = result
        .meta
        .as_ref()
        .and_then(|m| m.0.get("toolhost").cloned())
        .unwrap_or(Value::Null);
    let texts: Vec<String> = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    let link = result
        .content
        .iter()
        .any(|c| serde_json::to_value(c).is_ok_and(|v| v["type"] == "resource_link"));
    let failed = result.is_error == Some(true);
    let (message, output) = if failed {
        let output = match texts.get(1) {
            // A failure's output is sent as text: JSON when it was JSON.
            Some(text) => serde_json::from_str(text).unwrap_or_else(|_| json!(text)),
            None => Value::Null,
        };
        (json!(texts.first()), output)
    } else {
        // The first text block is the output; a cut output's link adds a
        // line after it (compared as `link`).
        let output = match &result.structured_content {
            Some(structured) => structured.clone(),
            None => json!(texts.first()),
        };
        (Value::Null, output)
    };
    json!({
        "status": info["status"],
        "code": info["code"],
        "message": message,
        "retryable": info["retryable"],
        "details": info["details"],
        "output": output,
        "truncated": info["truncated"],
        "redactions": info["redactions"],
        "link": link,
    })
}

/// The progress a caller saw: whether any arrived, and the last report's
/// total and message (how many arrive depends on timing).
/// The CLI has no progress channel off a terminal: none is ever reported.
pub fn progress(reports: &[Value]) -> Value {
    match reports.last() {
        None => json!({"reported": false, "total": null, "message": null}),
        Some(last) => json!({
            "reported": true,
            "total": last["total"],
            "message": last["message"],
        }),
    }
}

/// Fields of an audit record that differ on every run or every host.
const UNSTABLE: &[&str] = &[
    "seq",
    "prev_sha256",
    "genesis",
    "ts_unix_ms",
    "call_id",
    "duration_ms",
];

/// An audit record without its run-to-run fields.
fn normalised(mut record: Value) -> Value {
    if let Some(map) = record.as_object_mut() {
        for key in UNSTABLE {
            map.remove(*key);
        }
    }
    record
}

/// The records a host appends to its audit log, read case by case.
pub struct AuditTail {
    path: PathBuf,
    seen: usize,
}

impl AuditTail {
    /// The log at `path` (which need not exist yet).
    pub fn new(path: PathBuf) -> AuditTail {
        AuditTail { path, seen: 0 }
    }

    /// The records appended since the last take, once `finished` records
    /// of finished calls (not `intent` records) are among them: the host
    /// writes a record when a call ends, which for a cancelled MCP call is
    /// after the test stopped waiting for it. Fails the test after 20 s.
    pub fn take(&mut self, finished: usize) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let text = std::fs::read_to_string(&self.path).unwrap_or_default();
            // Only whole lines: a record being written is read next time.
            let lines: Vec<&str> = text.split_inclusive('\n').filter(|l| l.ends_with('\n')).collect();
            let fresh: Vec<Value> = lines[self.seen.min(lines.len())..]
                .iter()
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("audit line {l:?}: {e}")))
                .collect();
            let done = fresh.iter().filter(|r| r.get("phase").is_none()).count();
            if done >= finished {
                self.seen = lines.len();
                return fresh.into_iter().map(normalised).collect();
            }
            assert!(
                Instant::now() < deadline,
                "{} holds {done} of {finished} records of finished calls after 20 s: {fresh:?}",
                self.path.display()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// One case's observation through one front door and backend.
pub fn observation(results: Vec<Value>, progress: Value, audit: Vec<Value>) -> Value {
    let mut map = Map::new();
    map.insert("results".into(), Value::Array(results));
    map.insert("progress".into(), progress);
    map.insert("audit".into(), Value::Array(audit));
    Value::Object(map)
}
