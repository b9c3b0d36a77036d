//! Mapping between toolhost's wire types and MCP's: tool specs become MCP
//! tools, ToolResults become `CallToolResult`s (their content blocks MCP
//! text and image content). The stdio fast path and rmcp's path both call
//! [`call_result`], so both send the same bytes.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, MetaObject, Tool, ToolAnnotations};
use serde_json::{json, Map, Value};
use toolhost_core::{ToolResult, ToolSpec};

use crate::alias::Profile;
use crate::host::Host;

/// What `tools/list` shows: every canonical tool, then, with
/// `[host] list_aliases = true`, every alias under its own name: a
/// profile's alias with the profile's schema and description, a plain
/// alias with its tool's schema. Hints are always the canonical tool's.
pub fn tools(host: &Host) -> Vec<Tool> {
    let mut listed: Vec<Tool> = host.tools().iter().map(|t| tool(&t.spec)).collect();
    if host.plan.host.list_aliases {
        for (name, target, profile) in host.aliases() {
            listed.push(alias_tool(&name, &target.spec, profile.as_deref()));
        }
    }
    listed
}

/// One alias as MCP lists it.
fn alias_tool(name: &str, spec: &ToolSpec, profile: Option<&Profile>) -> Tool {
    let mut listed = tool(spec);
    listed.name = name.to_string().into();
    let runs_as = format!(" (runs toolhost's `{}`)", spec.name);
    listed.description = Some(match profile.and_then(|p| p.def().description.clone()) {
        Some(own) => format!("{own}{runs_as}").into(),
        None => format!("{}{runs_as}", spec.description).into(),
    });
    if let Some(Value::Object(schema)) = profile.map(|p| &p.def().schema) {
        listed.input_schema = Arc::new(schema.clone());
        // The output is the canonical tool's, whatever the input's shape.
    }
    listed
}

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
    // A deprecated tool says so in `_meta.toolhost.deprecated`, so that a
    // toolhost mounting this one warns and refuses past the sunset itself.
    if let Some(deprecated) = &spec.deprecated {
        let mut meta = MetaObject::new();
        meta.0
            .insert("toolhost".into(), json!({ "deprecated": deprecated }));
        tool.meta = Some(meta);
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
    let link = result.metadata.extra.get(super::outputs::LINK_KEY).cloned();
    let mut out = if result.success {
        let content = if result.content.is_empty() {
            vec![ContentBlock::text(text_of(&result.output))]
        } else {
            blocks(&result.content)
        };
        let mut r = CallToolResult::success(content);
        if result.structured.is_some() {
            r.structured_content = result.structured;
        } else if result.output.is_object() {
            r.structured_content = Some(result.output);
        }
        r
    } else {
        let message = match &result.error {
            Some(e) if !e.message.is_empty() => e.message.clone(),
            Some(e) => e.code.clone(),
            None => format!("the call ended with status {}", result.status.as_str()),
        };
        let mut content = Vec::new();
        // The message leads, unless the blocks already say it (a mounted
        // server's failure, passed on as the server sent it).
        if !starts_with_text(&result.content, &message) {
            content.push(ContentBlock::text(message));
        }
        if !result.content.is_empty() {
            content.extend(blocks(&result.content));
        } else if !result.output.is_null() {
            content.push(ContentBlock::text(text_of(&result.output)));
        }
        let mut r = CallToolResult::error(content);
        // Structured data a failure carries (a mounted server's isError
        // result sent some) goes with it, unless it is what broke the
        // tool's output schema.
        if result
            .error
            .as_ref()
            .is_some_and(|e| e.code != toolhost_core::wire::codes::INVALID_OUTPUT)
        {
            r.structured_content = result.structured;
        }
        r
    };
    // An over-limit output kept whole: a `resource_link` to it.
    out.content.extend(super::outputs::mcp_blocks(link.as_ref()));
    out.meta = Some(meta);
    out
}

/// Whether the text of `content`'s text blocks, joined by newlines,
/// begins with `message`.
fn starts_with_text(content: &[toolhost_core::ContentBlock], message: &str) -> bool {
    let mut joined = String::new();
    for block in content {
        if let toolhost_core::ContentBlock::Text { text } = block {
            if !joined.is_empty() {
                joined.push('\n');
            }
            joined.push_str(text);
            if joined.len() >= message.len() {
                break;
            }
        }
    }
    !content.is_empty() && joined.starts_with(message)
}

/// A result's content blocks as MCP content: text as `TextContent`, an
/// image as `ImageContent` (`data` base64, `mimeType`), audio as
/// `AudioContent`, a link as `resource_link`, an inline resource as an
/// embedded `resource`. A block kind this host does not know (the enum is
/// non-exhaustive) is named in a text block rather than dropped silently.
fn blocks(content: &[toolhost_core::ContentBlock]) -> Vec<ContentBlock> {
    use rmcp::model::{Resource, ResourceContents};
    content
        .iter()
        .map(|block| match block {
            toolhost_core::ContentBlock::Text { text } => ContentBlock::text(text.clone()),
            toolhost_core::ContentBlock::Image { mime_type, data } => {
                ContentBlock::image(data.clone(), mime_type.clone())
            }
            toolhost_core::ContentBlock::Audio { mime_type, data } => {
                ContentBlock::audio(data.clone(), mime_type.clone())
            }
            toolhost_core::ContentBlock::ResourceLink {
                uri,
                name,
                title,
                description,
                mime_type,
                size,
            } => {
                let mut link = Resource::new(uri.clone(), name.clone());
                link.title = title.clone();
                link.description = description.clone();
                link.mime_type = mime_type.clone();
                link.size = *size;
                ContentBlock::resource_link(link)
            }
            toolhost_core::ContentBlock::Resource {
                uri,
                mime_type,
                text,
                blob,
            } => {
                let contents = match (text, blob) {
                    (_, Some(blob)) => ResourceContents::blob(blob.clone(), uri.clone()),
                    (text, None) => ResourceContents::text(text.clone().unwrap_or_default(), uri.clone()),
                };
                let contents = match mime_type {
                    Some(mime) => contents.with_mime_type(mime.clone()),
                    None => without_mime(contents),
                };
                ContentBlock::resource(contents)
            }
            #[allow(unreachable_patterns)]
            other => ContentBlock::text(format!(
                "[content block this toolhost cannot send over MCP: {}]",
                serde_json::to_value(other)
                    .ok()
                    .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_string))
                    .unwrap_or_default()
            )),
        })
        .collect()
}

/// An inline resource without the `text/plain` type rmcp's constructor
/// gives a text resource: the block says only what the tool said.
fn without_mime(contents: rmcp::model::ResourceContents) -> rmcp::model::ResourceContents {
    use rmcp::model::ResourceContents;
    match contents {
        ResourceContents::TextResourceContents { uri, text, meta, .. } => {
            ResourceContents::TextResourceContents {
                uri,
                mime_type: None,
                text,
                meta,
            }
        }
        other => other,
    }
}

/// `{"toolhost": {status, code?, retryable?, details?, tool_call_id,
/// duration_ms, truncated?, redactions?}}`.
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
    if let Some(counts) = result.metadata.extra.get("redactions") {
        info.insert("redactions".into(), counts.clone());
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

    #[test]
    fn content_blocks_become_mcp_text_and_image_content() {
        let result = ToolResult::success("c4", json!({"path": "a.png"})).with_content(vec![
            toolhost_core::ContentBlock::text("a.png, 1x1"),
            toolhost_core::ContentBlock::image("image/png", "iVBORw0KGgo="),
        ]);
        let wire = serde_json::to_value(call_result(result)).expect("serializes");
        assert_eq!(
            wire["content"],
            json!([
                {"type": "text", "text": "a.png, 1x1"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
            ])
        );
        assert_eq!(wire["structuredContent"], json!({"path": "a.png"}));
        let failed = ToolResult::failure("c5", Status::Error, "too_big", "image too large")
            .with_content(vec![toolhost_core::ContentBlock::text("partial")]);
        let wire = serde_json::to_value(call_result(failed)).expect("serializes");
        assert_eq!(
            wire["content"],
            json!([{"type": "text", "text": "image too large"}, {"type": "text", "text": "partial"}])
        );
    }
}
