//! A way from a running call back to its caller for input: the caller's
//! MCP client answers a request for input (an elicitation form) that the
//! backend needs answered to go on, such as a mounted MCP server's own
//! elicitation or `input_required` result (see `source/mcp/input.rs`). It
//! travels beside the progress sink: [`crate::pipeline::Call`] to the
//! call's [`crate::context::CallContext`].

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

/// The caller's answer: an MCP `ElicitResult` as JSON, or why none came.
pub type Answer = Pin<Box<dyn Future<Output = Result<Value, String>> + Send>>;

/// Asks the caller; takes MCP `ElicitRequestParams` as JSON. Present only
/// when the caller can answer (an MCP client that declared elicitation).
pub type Asker = Arc<dyn Fn(Value) -> Answer + Send + Sync>;

/// `[tools.mcp] elicitation`: what a server's request for input meets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputPolicy {
    /// Ask the caller, when its client can answer; decline otherwise.
    #[default]
    Pass,
    /// Decline every request.
    Decline,
}
