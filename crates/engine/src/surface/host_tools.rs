//! The host's own tools: `tool_search` (finds tools by what they do, for
//! `[host] tool_discovery = "search"`) and `read_output` (reads a kept
//! over-limit output in ranges). They are ordinary mounted tools to the
//! pipeline (validated, under policy and hooks, audited), but they answer
//! from the host's own state, so the pipeline runs them itself instead of
//! handing them to a module: see [`super::Surface::run`].

use std::sync::Arc;

use serde_json::json;
use toolhost_core::wire::codes;
use toolhost_core::{Effect, Status, ToolResult, ToolSpec};

use crate::context::CallContext;
use crate::tool::{ModuleInfo, MountedTool, SourceKind, ToolBackend};

/// The search tool's name.
pub const TOOL_SEARCH: &str = "tool_search";
/// The output reader's name.
pub const READ_OUTPUT: &str = "read_output";
/// The module name the host's tools report.
pub const MODULE: &str = "toolhost";

/// Results `tool_search` returns unless asked for another number.
pub const DEFAULT_LIMIT: u64 = 5;
/// The most `tool_search` returns.
pub const MAX_LIMIT: u64 = 50;

/// The backend of a host tool: never called, since the pipeline answers
/// host tools itself; answers `internal` if something calls it anyway.
struct InPipeline;

impl ToolBackend for InPipeline {
    fn call(&self, _call: &str, _ctx: &CallContext) -> String {
        let result = ToolResult::failure(
            "",
            Status::Error,
            codes::INTERNAL,
            "a toolhost host tool was called outside the pipeline",
        );
        serde_json::to_string(&result).unwrap_or_default()
    }
}

fn search_spec() -> ToolSpec {
    let mut spec = ToolSpec::new(
        TOOL_SEARCH,
        "Finds tools by what they do. Most tools are not listed: describe the task in a few words \
         (e.g. \"search file contents\", \"create github issue\") and get the best-matching tools \
         with their full definitions; then call any of them by name.",
    )
    .effect(Effect::Meta);
    spec.input_schema = json!({
        "type": "object",
        "properties": {
            "query": { "type": "string", "minLength": 1, "description": "Words describing the task or the tool." },
            "limit": { "type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "How many tools to return (default 5)." }
        },
        "required": ["query"],
        "additionalProperties": false
    });
    spec.output_schema = Some(json!({
        "type": "object",
        "properties": {
            "tools": { "type": "array", "items": { "type": "object" } },
            "total": { "type": "integer", "minimum": 0 }
        },
        "required": ["tools", "total"]
    }));
    spec
}

fn read_output_spec() -> ToolSpec {
    let mut spec = ToolSpec::new(
        READ_OUTPUT,
        "Reads a range of a tool output that was too large to return whole, by the toolhost://output/ \
         URI its answer gave. Follow next_offset until it is absent.",
    )
    .effect(Effect::ReadOnly);
    spec.input_schema = json!({
        "type": "object",
        "properties": {
            "uri": { "type": "string", "description": "The toolhost://output/<id> handle." },
            "offset": { "type": "integer", "minimum": 0, "description": "Byte offset to start at (default 0)." },
            "length": { "type": "integer", "minimum": 1, "description": "Bytes to read (default and most: what fits one answer)." }
        },
        "required": ["uri"],
        "additionalProperties": false
    });
    spec.output_schema = Some(json!({
        "type": "object",
        "properties": {
            "uri": { "type": "string" },
            "offset": { "type": "integer", "minimum": 0 },
            "text": { "type": "string" },
            "total": { "type": "integer", "minimum": 0 },
            "next_offset": { "type": ["integer", "null"], "minimum": 0 }
        },
        "required": ["uri", "offset", "text", "total", "next_offset"],
        "additionalProperties": false
    }));
    spec
}

/// The host tools as mounted tools.
pub fn mounted() -> Vec<Arc<MountedTool>> {
    let info = Arc::new(ModuleInfo {
        name: MODULE.into(),
        version: env!("CARGO_PKG_VERSION").into(),
        description: "toolhost's own tools".into(),
        path: std::path::PathBuf::from(MODULE),
        limit: None,
        source: SourceKind::Module,
        process: None,
        watch: None,
    });
    [search_spec(), read_output_spec()]
        .into_iter()
        .map(|spec| {
            let name = spec.name.clone();
            Arc::new(MountedTool::new(spec, name, info.clone(), Box::new(InPipeline)))
        })
        .collect()
}
