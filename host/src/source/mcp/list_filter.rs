//! A stdio server's stdout, checked line by line before the MCP client
//! parses it.
//!
//! The client parses each message whole into its own types, and a
//! `tools/list` page of 100,000 tiny tools (a few MiB of JSON) takes
//! hundreds of MiB once parsed. So a long line is first scanned, without
//! building anything, for a result that lists tools: one with more tools
//! than `max_tools`, or longer than `max_list_bytes`, is replaced by a
//! JSON-RPC error for the same request, naming the cap, before the client
//! sees it. Every other line passes unchanged.

use serde::de::{Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream};

use super::bounds::{ListBound, McpLimits};

/// The longest line passed on: the MCP client's own cap on one message.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Lines shorter than this cannot list enough tools to matter and are not
/// scanned.
const SCAN_FROM_BYTES: usize = 64 * 1024;

/// Starts a task (on the current runtime) that copies `stdout` to the
/// stream it returns, line by line, replacing oversized tool lists.
pub(super) fn filtered(stdout: impl AsyncRead + Send + Unpin + 'static, limits: McpLimits) -> DuplexStream {
    let (mut ours, theirs) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        let mut reader = BufReader::new(stdout);
        let mut line = Vec::new();
        loop {
            line.clear();
            let cap = MAX_LINE_BYTES as u64 + 1;
            match (&mut reader).take(cap).read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line.len() > MAX_LINE_BYTES {
                // Dropped, as the client itself would drop it.
                tracing::error!(
                    "an MCP server sent a message longer than {MAX_LINE_BYTES} bytes; dropped it"
                );
                if skip_line(&mut reader).await.is_err() {
                    return;
                }
                continue;
            }
            if line.len() >= SCAN_FROM_BYTES {
                if let Some(refusal) = refusal(&line, &limits) {
                    line = refusal;
                }
            }
            if ours.write_all(&line).await.is_err() {
                return;
            }
            if line.capacity() > 1024 * 1024 {
                line = Vec::new();
            }
        }
    });
    theirs
}

/// Reads up to the end of the current line.
async fn skip_line(reader: &mut (impl AsyncBufReadExt + Unpin)) -> std::io::Result<()> {
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok(());
        }
        match buf.iter().position(|b| *b == b'\n') {
            Some(end) => {
                reader.consume(end + 1);
                return Ok(());
            }
            None => {
                let n = buf.len();
                reader.consume(n);
            }
        }
    }
}

/// For a response listing tools past a cap, the JSON-RPC error (with a
/// newline) that replaces it.
fn refusal(line: &[u8], limits: &McpLimits) -> Option<Vec<u8>> {
    let probe: Probe<'_> = serde_json::from_slice(line).ok()?;
    let tools = probe.result?.tools?.0;
    let bound = if tools > limits.max_tools {
        ListBound::Tools {
            cap: limits.max_tools,
        }
    } else if line.len() as u64 > limits.max_list_bytes {
        ListBound::Bytes {
            cap: limits.max_list_bytes,
        }
    } else {
        return None;
    };
    let message = format!(
        "toolhost refused a tools/list page of {tools} tools in {} bytes: {bound}",
        line.len()
    );
    let id = probe.id.map_or("null", RawValue::get);
    let error = serde_json::json!({"code": -32000, "message": message});
    Some(format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{error}}}\n").into_bytes())
}

/// The parts of a JSON-RPC message the scan reads; everything else is
/// skipped without being built.
#[derive(Deserialize)]
struct Probe<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    result: Option<ProbeResult>,
}

#[derive(Deserialize)]
struct ProbeResult {
    #[serde(default)]
    tools: Option<Counted>,
}

/// The length of a JSON array, counted without building its items.
struct Counted(usize);

impl<'de> Deserialize<'de> for Counted {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Count;
        impl<'de> Visitor<'de> for Count {
            type Value = Counted;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Counted, A::Error> {
                let mut n = 0;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(Counted(n))
            }
        }
        deserializer.deserialize_seq(Count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_past_the_caps_becomes_an_error_for_the_same_request() {
        let limits = McpLimits {
            max_tools: 2,
            max_list_pages: 10,
            max_list_bytes: 200,
        };
        let tools = |n: usize| {
            let list: Vec<_> = (0..n)
                .map(|i| serde_json::json!({"name": format!("t{i}")}))
                .collect();
            serde_json::json!({"jsonrpc": "2.0", "id": "a-7", "result": {"tools": list}}).to_string()
        };
        assert!(refusal(tools(2).as_bytes(), &limits).is_none());
        let refused = refusal(tools(3).as_bytes(), &limits).expect("three tools");
        let refused: serde_json::Value = serde_json::from_slice(&refused).unwrap();
        assert_eq!(refused["id"], "a-7");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("3 tools") && message.contains("max_tools"),
            "{message}"
        );

        let long =
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "x".repeat(300)}]}});
        let refused = refusal(long.to_string().as_bytes(), &limits).expect("too long");
        assert!(String::from_utf8_lossy(&refused).contains("max_list_bytes"));

        let call = serde_json::json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [], "structuredContent": {"tools": [1, 2, 3]}}});
        assert!(refusal(call.to_string().as_bytes(), &limits).is_none());
    }
}
