//! Where a call's progress reports go. Its own file so that what wraps a
//! sink (redaction) needs nothing else of the call's context.

use std::sync::Arc;

use serde_json::Value;

/// Where progress reports go (MCP progress notifications, a terminal bar).
pub type ProgressSink = Arc<dyn Fn(Value) + Send + Sync>;
