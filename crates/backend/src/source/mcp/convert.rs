//! MCP tools and results as toolhost specs and results.

use rmcp::model::{CallToolResult, Tool};
use serde_json::{json, Value};
use toolhost_core::wire::codes;
use toolhost_core::{ContentBlock, Effect, Status, ToolResult, ToolSpec};

use super::blocks;
use super::upstream::Upstream;

/// The error code of a result the server marked `isError`.
pub const TOOL_ERROR: &str = "tool_error";

/// The error code of a call whose server asked for input that was not
/// given (an `input_required` result).
pub const INPUT_DECLINED: &str = "input_declined";

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
    // A toolhost serving the tool says when it is deprecated; the host
    // mounting it then warns and refuses past the sunset as for its own.
    if let Some(deprecated) = tool
        .meta
        .as_ref()
        .and_then(|m| m.0.get("toolhost"))
        .and_then(|t| t.get("deprecated"))
        .and_then(|d| serde_json::from_value(d.clone()).ok())
    {
        spec = spec.deprecated(deprecated);
    }
    spec
}

/// A toolhost result for an MCP result, which the MCP front door answers
/// as the server did: every content block in order, `structuredContent`
/// and `isError` as they came (see [`blocks`]). `output`, what the CLI,
/// hooks and the output schema see, is the structured content when there
/// is some, else the text of the text blocks.
///
/// A failure keeps its kind when the server is a toolhost that said it
/// in `_meta.toolhost` ([`Upstream`]): its status, code, retryability and
/// details, its message (the first text block) and its output (the text
/// after it, JSON when it reads as JSON, as the serving side sent it).
/// Any other failure is `tool_error`, with the text as its message.
pub fn result(result: CallToolResult) -> ToolResult {
    let upstream = Upstream::from_meta(result.meta.as_ref());
    let content = blocks::from_mcp(&result.content);
    let text = blocks::joined_text(&content);
    let mut out = if result.is_error == Some(true) {
        failure(upstream.as_ref(), &result, &content, text)
    } else {
        let output = result.structured_content.clone().unwrap_or_else(|| json!(text));
        let mut ok = ToolResult::success("", output);
        ok.structured = result.structured_content;
        ok
    };
    // Kept only when the front door would not send these very blocks for
    // the output alone: a plain text answer stays plain, for the CLI too.
    if content != derived(&out) {
        out.content = content;
    }
    if let Some(counts) = upstream.and_then(|u| u.redactions).filter(|c| !c.is_empty()) {
        out.metadata
            .extra
            .insert("redactions".into(), Value::Object(counts));
    }
    out
}

/// An `isError` result as a failure of its upstream kind, else `tool_error`.
fn failure(
    upstream: Option<&Upstream>,
    result: &CallToolResult,
    content: &[ContentBlock],
    text: String,
) -> ToolResult {
    if let Some((status, code)) = upstream.and_then(Upstream::failure) {
        let upstream = upstream.expect("a failure came from it");
        let mut texts = content.iter().filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        });
        let message = texts.next().unwrap_or_default().to_string();
        let mut failed = ToolResult::failure("", status, code, message);
        failed.output = texts
            .next()
            .map(|t| serde_json::from_str(t).unwrap_or_else(|_| json!(t)))
            .unwrap_or(Value::Null);
        if let Some(error) = failed.error.as_mut() {
            error.retryable = upstream.retryable.unwrap_or(error.retryable);
            error.details = upstream.details.clone().filter(|d| !d.is_null());
        }
        return failed;
    }
    let message = if text.is_empty() {
        "the MCP server reported an error without a message".to_string()
    } else {
        text.clone()
    };
    let mut failed = ToolResult::failure("", Status::Error, TOOL_ERROR, message);
    failed.output = result.structured_content.clone().unwrap_or_else(|| json!(text));
    failed.structured = result.structured_content.clone();
    failed
}

/// The content the MCP front door sends for a result without content
/// blocks of its own (host/src/mcp/convert.rs): the output as text, after
/// the message on failure.
fn derived(result: &ToolResult) -> Vec<ContentBlock> {
    let mut content = Vec::new();
    if let Some(error) = result.error.as_ref() {
        content.push(ContentBlock::text(if error.message.is_empty() {
            error.code.clone()
        } else {
            error.message.clone()
        }));
        if result.output.is_null() {
            return content;
        }
    }
    content.push(ContentBlock::text(match &result.output {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }));
    content
}

/// A result for a call the server answered `input_required` (MCP
/// 2026-07-28: it needs the caller's answers to go on) when no answer could
/// be had: the call ends here, saying why and what the server asked.
pub fn input_declined(asked: &rmcp::model::InputRequiredResult, why: &str) -> ToolResult {
    let requests: Vec<Value> = asked
        .input_requests
        .iter()
        .flatten()
        .map(|(key, request)| {
            let wire = serde_json::to_value(request).unwrap_or(Value::Null);
            json!({"key": key, "method": wire["method"], "message": wire["params"]["message"]})
        })
        .collect();
    ToolResult::failure(
        "",
        Status::Error,
        INPUT_DECLINED,
        format!("the MCP server asked for input to go on (input_required), and it was declined: {why}"),
    )
    .with_details(json!({"input_requests": requests, "declined": why}))
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
