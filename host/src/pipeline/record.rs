//! Stage 8, record: a `tracing` span per call and a closing log line with
//! status and duration.

use std::time::Duration;

use toolhost_core::ToolResult;
use tracing::Span;

/// The span every stage of one call runs in.
pub fn span(id: &str, name: &str) -> Span {
    tracing::info_span!("tool_call", call = %id, tool = %name)
}

/// Logs the outcome of one call.
pub fn finish(result: &ToolResult, module: Option<&str>, elapsed: Duration) {
    let ms = elapsed.as_secs_f64() * 1000.0;
    let module = module.unwrap_or("");
    if result.success {
        tracing::debug!(status = %result.status, module, duration_ms = ms, "call finished");
    } else {
        tracing::info!(status = %result.status, module, duration_ms = ms, error = result.message(), "call failed");
    }
}
