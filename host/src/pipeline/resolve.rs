//! Stage 1, resolve: a name or alias to a mounted tool. An unknown name
//! answers with the closest names, so a model can correct itself.

use std::sync::Arc;

use serde_json::json;
use toolhost_core::wire::codes;
use toolhost_core::{Status, ToolResult};

use crate::host::Host;
use crate::registry::Resolved;
use crate::tool::MountedTool;

/// The tool `name` refers to, or an `unknown_tool` result with suggestions.
pub fn tool(host: &Host, id: &str, name: &str) -> Result<Arc<MountedTool>, ToolResult> {
    call(host, id, name).map(|r| r.tool)
}

/// The tool `name` refers to and the alias profile whose schema the caller
/// used (see [`crate::alias`]), or an `unknown_tool` result.
pub fn call(host: &Host, id: &str, name: &str) -> Result<Resolved, ToolResult> {
    host.resolve(name).ok_or_else(|| {
        let suggestions = host.suggest(name);
        ToolResult::failure(
            id,
            Status::Error,
            codes::UNKNOWN_TOOL,
            unknown(name, &suggestions),
        )
        .with_details(json!({ "suggestions": suggestions }))
    })
}

/// "unknown tool 'x'; did you mean …?", for every front end that resolves names.
pub fn unknown(name: &str, suggestions: &[String]) -> String {
    let hint = match suggestions {
        [] => "run `toolhost list` to see the tools".to_string(),
        [one] => format!("did you mean {one}?"),
        many => format!("did you mean one of: {}?", many.join(", ")),
    };
    format!("unknown tool '{name}'; {hint}")
}
