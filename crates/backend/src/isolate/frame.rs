//! The worker protocol: one JSON object per line, both ways.
//!
//! Host to worker: `open` (the library file), `mount` (the envelope),
//! `call` (a `CallRequest`, with the tool's name and the time left),
//! `cancel`; end of input means "clean up and exit". Worker to host:
//! `manifest`, `mounted` (the tools' specs), `result`, `progress`, `log`,
//! `event`, `events` (names contributed), `error` (open or mount failed),
//! `state` (a call's state request, answered by the host's `state_answer`).
//! The ABI's own JSON (spec, call, result) crosses untouched, as `body`.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// What a frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Host: open the library at `text`.
    Open,
    /// Worker: the library's manifest, in `body`.
    Manifest,
    /// Host: mount with the envelope in `body`.
    Mount,
    /// Worker: mounted; `list` holds each tool's spec as JSON text.
    Mounted,
    /// Host: run `body` (a CallRequest) on the tool named `text`.
    Call,
    /// Host: cancel call `id`.
    Cancel,
    /// Host: run the module's cleanup and exit (the host keeps answering
    /// state requests meanwhile).
    Shutdown,
    /// Worker: call `id` answered `body` (a ToolResult).
    Result,
    /// Worker: call `id` reported progress `body`.
    Progress,
    /// Worker: a log line (`level`, `text`), of call `id` if set.
    Log,
    /// Worker: the module emitted event `text` with payload `body`.
    Event,
    /// Worker: the module contributed the event names in `list`.
    Events,
    /// Worker: `open` or `mount` failed, with the message in `text`.
    Error,
    /// Worker: call `id` asks the host's lent state `body` (a
    /// `toolhost_core::state::Request`).
    State,
    /// Host: the answer `body` to call `id`'s state request, or to the
    /// coordinator's granted request `id`.
    StateAnswer,
    /// Worker: the coordinator asks the state a grant names, outside any
    /// call: `body` is a `toolhost_core::state::Granted`, `id` the
    /// request's own (from [`GRANTED_IDS`], apart from call ids).
    GrantedState,
}

/// Where the ids of the coordinator's granted requests start: call ids
/// count up from 1 and never get here.
pub const GRANTED_IDS: u64 = 1 << 63;

/// One line of the protocol.
#[derive(Debug, Serialize, Deserialize)]
pub struct Frame {
    /// What it is.
    pub t: Kind,
    /// The call it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// JSON carried as is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Box<RawValue>>,
    /// A name, path or message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Specs or event names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<Vec<String>>,
    /// Log level (toolhost_core::abi::level).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<u8>,
    /// Milliseconds left before the call's deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<u64>,
}

impl Frame {
    /// A frame of kind `t` with nothing else set.
    pub fn new(t: Kind) -> Self {
        Frame {
            t,
            id: None,
            body: None,
            text: None,
            list: None,
            level: None,
            deadline_ms: None,
        }
    }

    /// Sets the call id.
    pub fn id(mut self, id: u64) -> Self {
        self.id = Some(id);
        self
    }

    /// Sets the text.
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    /// Carries `json` as the body. Text that is not JSON, or that spans
    /// lines (which would break the framing), is re-encoded: as compact JSON
    /// when it parses, else as a JSON string (which the host then rejects as
    /// a malformed result, as it would in-process).
    pub fn body(mut self, json: &str) -> Self {
        let raw = if json.contains('\n') {
            match serde_json::from_str::<serde_json::Value>(json) {
                Ok(value) => serde_json::value::to_raw_value(&value).ok(),
                Err(_) => serde_json::value::to_raw_value(json).ok(),
            }
        } else {
            RawValue::from_string(json.to_owned())
                .ok()
                .or_else(|| serde_json::value::to_raw_value(json).ok())
        };
        self.body = raw;
        self
    }

    /// The frame as one line, newline included.
    pub fn line(&self) -> Vec<u8> {
        let mut out = serde_json::to_vec(self).unwrap_or_else(|_| br#"{"t":"error"}"#.to_vec());
        out.push(b'\n');
        out
    }

    /// The body's JSON text, or `null`.
    pub fn body_text(&self) -> &str {
        self.body.as_deref().map(RawValue::get).unwrap_or("null")
    }
}

/// Why no frame could be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The stream ended (or failed) before a whole line.
    #[error("the stream ended")]
    Eof,
    /// A line longer than the limit.
    #[error(
        "sent a protocol frame longer than the limit of {limit} bytes ([host.worker_limits] \
         max_frame_bytes)"
    )]
    TooLong {
        /// The limit, in bytes.
        limit: usize,
    },
    /// A line that is not a frame (bad JSON, invalid UTF-8).
    #[error("broke the protocol ({0})")]
    Malformed(#[from] serde_json::Error),
    /// A frame past one of the caps on what a worker may send.
    #[error("{0}")]
    Exceeded(#[from] super::bounds::Exceeded),
}

/// Reads one frame of at most `limit` bytes (a line that grows past it, a
/// module writing to the protocol descriptor without a newline, would
/// otherwise grow the host's memory without bound), newline included, from
/// `reader`; `buf` is scratch space kept between calls.
pub fn read_frame(
    reader: &mut impl std::io::BufRead,
    buf: &mut Vec<u8>,
    limit: usize,
) -> Result<Frame, ReadError> {
    use std::io::{BufRead, Read};
    buf.clear();
    // One large frame must not keep its buffer for the worker's life.
    if buf.capacity() > 1024 * 1024 {
        buf.shrink_to(64 * 1024);
    }
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    match reader.by_ref().take(cap).read_until(b'\n', buf) {
        Ok(0) | Err(_) => return Err(ReadError::Eof),
        Ok(_) => {}
    }
    if buf.last() != Some(&b'\n') {
        return Err(if buf.len() > limit {
            ReadError::TooLong { limit }
        } else {
            ReadError::Eof
        });
    }
    Ok(serde_json::from_slice(buf)?)
}
