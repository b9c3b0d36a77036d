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

use std::pin::Pin;
use std::task::{ready, Context, Poll};

use serde::de::{Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::io::{AsyncBufRead, AsyncRead, BufReader, ReadBuf};

use super::bounds::{ListBound, McpLimits};

/// The longest line passed on: the MCP client's own cap on one message.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Lines shorter than this cannot list enough tools to matter and are not
/// scanned.
const SCAN_FROM_BYTES: usize = 64 * 1024;

/// `stdout`, passed on line by line, with oversized tool lists replaced.
/// A reader rather than a task copying into a pipe: each message reaches
/// the client with no extra task wake-up.
pub(super) fn filtered<R: AsyncRead + Unpin>(stdout: R, limits: McpLimits) -> Filtered<R> {
    Filtered {
        reader: BufReader::new(stdout),
        line: Vec::new(),
        handed: 0,
        whole: false,
        skipping: false,
        limits,
    }
}

/// See [`filtered`].
pub(super) struct Filtered<R> {
    reader: BufReader<R>,
    /// The line being gathered, or (once `whole`) being handed out.
    line: Vec<u8>,
    /// Bytes of a whole `line` already handed out.
    handed: usize,
    whole: bool,
    /// Dropping the rest of a line past [`MAX_LINE_BYTES`].
    skipping: bool,
    limits: McpLimits,
}

impl<R: AsyncRead + Unpin> AsyncRead for Filtered<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let me = self.get_mut();
        loop {
            if me.whole {
                let rest = &me.line[me.handed..];
                let n = rest.len().min(out.remaining());
                out.put_slice(&rest[..n]);
                me.handed += n;
                if me.handed == me.line.len() {
                    me.whole = false;
                    me.handed = 0;
                    me.line.clear();
                    if me.line.capacity() > 1024 * 1024 {
                        me.line = Vec::new();
                    }
                }
                return Poll::Ready(Ok(()));
            }
            // A read error ends the stream, as the end of the pipe does.
            let available = match ready!(Pin::new(&mut me.reader).poll_fill_buf(cx)) {
                Ok(available) => available,
                Err(_) => &[],
            };
            if available.is_empty() {
                if me.line.is_empty() || me.skipping {
                    return Poll::Ready(Ok(()));
                }
                // The last line, without its newline.
                me.whole = true;
                continue;
            }
            let (taken, ends) = match available.iter().position(|b| *b == b'\n') {
                Some(at) => (at + 1, true),
                None => (available.len(), false),
            };
            if !me.skipping {
                me.line.extend_from_slice(&available[..taken]);
            }
            Pin::new(&mut me.reader).consume(taken);
            if me.line.len() > MAX_LINE_BYTES {
                // Dropped, as the client itself would drop it.
                tracing::error!(
                    "an MCP server sent a message longer than {MAX_LINE_BYTES} bytes; dropped it"
                );
                me.line = Vec::new();
                me.skipping = !ends;
                continue;
            }
            if ends {
                if me.skipping {
                    me.skipping = false;
                    continue;
                }
                if me.line.len() >= SCAN_FROM_BYTES {
                    if let Some(refusal) = refusal(&me.line, &me.limits) {
                        me.line = refusal;
                    }
                }
                me.whole = true;
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

    #[test]
    fn lines_pass_whole_and_an_oversized_list_is_replaced_in_the_stream() {
        let limits = McpLimits {
            max_tools: 2,
            max_list_pages: 10,
            max_list_bytes: 1 << 30,
        };
        let list: Vec<_> = (0..5000)
            .map(|i| serde_json::json!({"name": format!("t{i}")}))
            .collect();
        let big = serde_json::json!({"jsonrpc": "2.0", "id": 9, "result": {"tools": list}}).to_string();
        let input = format!("{{\"a\":1}}\n{big}\n{{\"b\":2}}");
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let text = runtime.block_on(async {
            use tokio::io::AsyncReadExt;
            let mut read = String::new();
            filtered(input.as_bytes(), limits)
                .read_to_string(&mut read)
                .await
                .unwrap();
            read
        });
        let lines: Vec<&str> = text.split('\n').collect();
        assert_eq!(lines.len(), 3, "{}", &text[..200.min(text.len())]);
        assert_eq!(lines[0], r#"{"a":1}"#);
        assert!(
            lines[1].contains("max_tools") && lines[1].contains(r#""id":9"#),
            "{}",
            lines[1]
        );
        assert_eq!(
            lines[2], r#"{"b":2}"#,
            "the last line, without a newline, still passes"
        );
    }
}
