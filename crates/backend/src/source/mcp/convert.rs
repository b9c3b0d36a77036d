//! MCP tools and results as toolhost specs and results.

use rmcp::model::{CallToolResult, Tool};
use serde_json::{json, Value};
use toolhost_core::wire::codes;
use toolhost_core::{Effect, Status, ToolResult, ToolSpec};

/// The error code of a result the server marked `isError`.
pub const TOOL_ERROR: &str = "tool_error";

/// The effect an MCP tool's annotations imply: `readOnlyHint` is
/// read-only, `destructiveHint` irreversible, anything else a mutation.
/// The plan's `[policy.tools.NAME] effect` overrides it later.
pub fn effect(tool: &Tool) -> Effect {
    let hints = tool.annotations.as_ref();
    if hints.and_then(|a| a.read_only_hint) == Some(true) {
        Effect::ReadOnly
    } else if hints.and_then(|a| a.destructive_hint) == Some(true) {
        Effect::Irreversible
    } else {
        Effect::InternalMutation
    }
}

/// A toolhost spec for an MCP tool (its own name, before the prefix).
pub fn spec(tool: &Tool) -> ToolSpec {
    let mut spec = ToolSpec::new(
        tool.name.to_string(),
        tool.description.as_deref().unwrap_or("").to_string(),
    )
    .effect(effect(tool));
    spec.input_schema = Value::Object((*tool.input_schema).clone());
    spec.output_schema = tool.output_schema.as_ref().map(|s| Value::Object((**s).clone()));
    if let Some(title) = tool
        .title
        .clone()
        .or_else(|| tool.annotations.as_ref().and_then(|a| a.title.clone()))
    {
        spec = spec.title(title);
    }
    spec
}

/// The text of a result's content blocks, joined.
fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A toolhost result for an MCP result: structured content when there is
/// some, else the text (or every block as JSON when some are not text).
pub fn result(result: CallToolResult) -> ToolResult {
    let all_text = result.content.iter().all(|b| b.as_text().is_some());
    let output = match &result.structured_content {
        Some(structured) => structured.clone(),
        None if all_text => json!(text_of(&result)),
        None => serde_json::to_value(&result.content).unwrap_or(Value::Null),
    };
    if result.is_error == Some(true) {
        let message = match text_of(&result) {
            text if text.is_empty() => "the MCP server reported an error without a message".to_string(),
            text => text,
        };
        let mut failed = ToolResult::failure("", Status::Error, TOOL_ERROR, message);
        failed.output = output;
        failed
    } else {
        ToolResult::success("", output)
    }
}

/// A result for a protocol-level error the server answered a call with.
pub fn protocol_error(message: impl std::fmt::Display) -> ToolResult {
    ToolResult::failure(
        "",
        Status::Error,
        codes::INVALID_OUTPUT,
        format!("the MCP server refused the call: {message}"),
    )
}
