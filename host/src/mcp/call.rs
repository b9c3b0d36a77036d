//! The pipeline call an MCP `tools/call` asks for, built one way for every
//! path that answers one (rmcp's handler, and the stdio and HTTP fast
//! paths), so that what a request's `_meta` carries (its idempotency key,
//! its request context) means the same whichever path runs it. Each path
//! then adds only what is its own: cancellation, session, principal,
//! progress and approval.

use serde_json::{Map, Value};

use crate::pipeline::Call;

/// The call for tool `name` with `arguments` and the request's `_meta`.
pub fn from_request(name: String, arguments: Option<Map<String, Value>>, meta: &Map<String, Value>) -> Call {
    Call {
        name,
        input: Value::Object(arguments.unwrap_or_default()),
        // `_meta.idempotency_key`: run a side-effecting call once per key
        // (see pipeline/idempotency.rs).
        idempotency_key: meta
            .get("idempotency_key")
            .and_then(Value::as_str)
            .map(str::to_string),
        context: crate::governance::request::from_meta(meta),
        ..Call::default()
    }
}
