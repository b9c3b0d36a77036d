//! The SSE priming event (an event id and an empty `data:` field, so a
//! client can resume a stream) only for clients that expect it.
//!
//! The priming event arrived with protocol 2025-11-25. Clients speaking
//! 2025-03-26 or 2025-06-18 (the TypeScript SDK before 1.2x among them)
//! parse every `data:` as JSON and fail on the empty one, so the official
//! SDK servers send it only to 2025-11-25 clients. rmcp sends it to
//! everyone; this filter takes it out of the streams of older clients.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame};
use hyper::header::HeaderMap;

use super::super::auth::Body as BoxBody;

/// The first protocol version whose clients expect the priming event.
pub const PRIMING_SINCE: &str = "2025-11-25";

/// The header that names the negotiated version on every request after
/// `initialize` (absent: 2025-03-26, as the spec says).
const VERSION_HEADER: &str = "mcp-protocol-version";

/// The version a request speaks: its header, or (for `initialize`, which has
/// none) the version it asks for, capped at ours; `None` when unknown.
pub fn version_of(headers: &HeaderMap, initialize_asks: Option<&str>) -> String {
    if let Some(v) = headers.get(VERSION_HEADER).and_then(|v| v.to_str().ok()) {
        return v.trim().to_string();
    }
    match initialize_asks {
        Some(asked) => asked.min(PRIMING_SINCE).to_string(),
        None => "2025-03-26".to_string(),
    }
}

/// Whether a client at `version` expects priming events (dates compare as
/// strings).
pub fn expects_priming(version: &str) -> bool {
    version >= PRIMING_SINCE
}

/// Whether one SSE frame is a priming event: only `id:`/`retry:` fields and
/// `data:` fields that are all empty.
pub fn is_priming(frame: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(frame) else {
        return false;
    };
    let mut data = false;
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() || line.starts_with("id:") || line.starts_with("retry:") {
            continue;
        }
        match line.strip_prefix("data:") {
            Some(value) if value.trim().is_empty() => data = true,
            _ => return false,
        }
    }
    data
}

/// A response body without priming events.
pub fn strip(body: BoxBody) -> BoxBody {
    WithoutPriming { inner: body }.boxed()
}

struct WithoutPriming {
    inner: BoxBody,
}

impl Body for WithoutPriming {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        loop {
            match Pin::new(&mut self.inner).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    if frame.data_ref().is_some_and(|d| is_priming(d)) {
                        continue;
                    }
                    return Poll::Ready(Some(Ok(frame)));
                }
                other => return other,
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priming_events_are_recognised() {
        assert!(is_priming(b"id: 0\nretry: 3000\ndata:\n\n"));
        assert!(is_priming(b"data: \nid: 0\n\n"));
        assert!(!is_priming(b"data: {\"jsonrpc\":\"2.0\"}\nid: 0\n\n"));
        assert!(!is_priming(b": keep-alive\n\n"));
        assert!(!is_priming(b"retry: 3000\n\n"));
    }

    #[test]
    fn versions_decide() {
        let mut headers = HeaderMap::new();
        assert_eq!(version_of(&headers, Some("2025-06-18")), "2025-06-18");
        assert_eq!(version_of(&headers, Some("2099-01-01")), PRIMING_SINCE);
        assert_eq!(version_of(&headers, None), "2025-03-26");
        headers.insert(VERSION_HEADER, "2025-11-25".parse().expect("header"));
        assert!(expects_priming(&version_of(&headers, None)));
        assert!(!expects_priming("2025-06-18"));
    }
}
