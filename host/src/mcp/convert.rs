//! Mapping between toolhost's wire types and MCP's: tool specs become MCP
//! tools, ToolResults become `CallToolResult`s.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, MetaObject, Tool, ToolAnnotations};
use serde_json::{json, Map, Value};
use toolhost_core::{ToolResult, ToolSpec};

/// A tool spec as MCP lists it: name, title, description, input schema,
/// output schema (only when it describes an object, as MCP requires), and
/// the four hints from the spec's annotations (themselves derived from its
/// effect unless the author overrode them).
pub fn tool(spec: &ToolSpec) -> Tool {
    let input = match &spec.input_schema {
        Value::Object(schema) => schema.clone(),
        // MCP requires an object schema; a tool without one takes `{}`.
        _ => object_schema(),
    };
    let a = spec.annotations;
    let mut annotations = ToolAnnotations::new()
        .read_only(a.read_only)
        .destructive(a.destructive)
        .idempotent(a.idempotent)
        .open_world(a.open_world);
    annotations.title = spec.title.clone();
    let mut tool =
        Tool::new(spec.name.clone(), spec.description.clone(), Arc::new(input)).with_annotations(annotations);
    if let Some(title) = &spec.title {
        tool = tool.with_title(title.clone());
    }
    if let Some(Value::Object(schema)) = &spec.output_schema {
        if schema.get("type").and_then(Value::as_str) == Some("object") {
            tool = tool.with_raw_output_schema(Arc::new(schema.clone()));
        }
    }
    tool
}

fn object_schema() -> JsonObject {
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema
}

/// A pipeline result as an MCP tool result.
///
/// Success: the output as text (a string as is, anything else as JSON),
/// plus `structuredContent` when the output is an object. Failure:
/// `isError` with the error's message first and any output after it (a
/// failed command's stdout and stderr matter to the model). Either way
/// `_meta.toolhost` carries the status, error code and call id, so clients
/// that care can tell `approval_required` from `timeout`.
pub fn call_result(result: ToolResult) -> CallToolResult {
    let meta = meta(&result);
    let mut out = if result.success {
        let mut r = CallToolResult::success(vec![ContentBlock::text(text_of(&result.output))]);
        if result.output.is_object() {
            r.structured_content = Some(result.output);
        }
        r
    } else {
        let message = match &result.error {
            Some(e) if !e.message.is_empty() => e.message.clone(),
            Some(e) => e.code.clone(),
            None => format!("the call ended with status {}", result.status.as_str()),
        };
        let mut content = vec![ContentBlock::text(message)];
        if !result.output.is_null() {
            content.push(ContentBlock::text(text_of(&result.output)));
        }
        CallToolResult::error(content)
    };
    out.meta = Some(meta);
    out
}

/// `{"toolhost": {status, code?, tool_call_id, duration_ms, truncated?}}`.
fn meta(result: &ToolResult) -> MetaObject {
    let mut info = Map::new();
    info.insert("status".into(), json!(result.status.as_str()));
    if let Some(e) = &result.error {
        info.insert("code".into(), json!(e.code));
        info.insert("retryable".into(), json!(e.retryable));
        if let Some(details) = &e.details {
            info.insert("details".into(), details.clone());
        }
    }
    info.insert("tool_call_id".into(), json!(result.tool_call_id));
    info.insert("duration_ms".into(), json!(result.metadata.duration_ms));
    if let Some(t) = &result.metadata.truncated {
        info.insert("truncated".into(), json!(t));
    }
    let mut meta = MetaObject::new();
    meta.0.insert("toolhost".into(), Value::Object(info));
    meta
}

/// A value as a model reads it: strings bare, the rest as JSON.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_core::{Effect, Status};

    #[test]
    fn annotations_follow_the_effect() {
        let spec = ToolSpec::new("rm", "removes").effect(Effect::Irreversible);
        let t = tool(&spec);
        let a = t.annotations.expect("annotations");
        assert_eq!(a.read_only_hint, Some(false));
        assert_eq!(a.destructive_hint, Some(true));
        assert_eq!(a.idempotent_hint, Some(false));
        assert_eq!(a.open_world_hint, Some(true));
        assert_eq!(t.input_schema.get("type"), Some(&json!("object")));
    }

    #[test]
    fn non_object_output_schema_is_not_listed() {
        let spec = ToolSpec::new("t", "d").output_schema(json!({"type": "string"}));
        assert!(tool(&spec).output_schema.is_none());
        let spec = ToolSpec::new("t", "d").output_schema(json!({"type": "object"}));
        assert!(tool(&spec).output_schema.is_some());
    }

    #[test]
    fn results_map_to_content() {
        let ok = call_result(ToolResult::success("c1", json!({"a": 1})));
        assert_eq!(ok.is_error, Some(false));
        assert_eq!(ok.structured_content, Some(json!({"a": 1})));
        let text = call_result(ToolResult::success("c2", json!("plain")));
        assert!(text.structured_content.is_none());
        let failed = call_result(ToolResult::failure(
            "c3",
            Status::ValidationError,
            "invalid_input",
            "bad /x",
        ));
        assert_eq!(failed.is_error, Some(true));
        let meta = failed.meta.expect("meta");
        assert_eq!(meta.0["toolhost"]["status"], json!("validation_error"));
    }
}
