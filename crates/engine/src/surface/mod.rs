//! What a caller sees of the mounted tools, and how much of its context
//! that costs:
//!
//! - [`convert`]: tools and results in MCP's form, as `tools/list` and
//!   `tools/call` answer them;
//! - [`pin`]: `toolhost.lock` holds back a foreign tool whose definition
//!   changed since it was reviewed (`tool_changed`);
//! - [`toolsets`]: named subsets, selected per server, client or grant
//!   (`not_in_toolset`);
//! - [`search`] and [`host_tools`]: with `[host] tool_discovery =
//!   "search"`, `tools/list` shows `tool_search` and the `always_on` tools,
//!   and every tool stays callable by name;
//! - [`outputs`]: over-limit results kept whole and read back by reference
//!   (`read_output`, `resources/read`; `expired_handle`).
//!
//! A tool a principal's grants do not cover is never listed, found or
//! callable, whatever the toolset or discovery mode.

pub mod convert;
pub use toolhost_plan::fingerprint;
pub mod host_tools;
pub mod outputs;
pub use toolhost_plan::pin;
pub mod search;
pub use toolhost_plan::toolsets;

use std::sync::{Arc, Mutex, PoisonError};

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde_json::{json, Value};
use toolhost_core::{Status, ToolResult};

use crate::host::Host;
use crate::plan::{Plan, ToolDiscovery};
use crate::tool::MountedTool;
use toolsets::Toolset;

/// The surface state a pipeline keeps: its host tools, the search index
/// (rebuilt when the tool list changes), the kept outputs.
pub struct Surface {
    host_tools: Vec<Arc<MountedTool>>,
    always_on: GlobSet,
    index: Mutex<Option<(Vec<usize>, Arc<search::Index>)>>,
    /// Over-limit outputs, kept for reading back.
    pub outputs: outputs::OutputStore,
}

/// Who is looking, through which toolsets: what listing, searching and
/// calling filter by.
pub struct Viewer<'a> {
    /// The calling principal.
    pub principal: &'a str,
    /// Every selected toolset (the server's, the client's): a tool must be
    /// in all of them.
    pub toolsets: Vec<&'a Toolset>,
}

impl Surface {
    /// The surface of a plan.
    pub fn new(plan: &Plan) -> Surface {
        let mut always_on = GlobSetBuilder::new();
        for pattern in &plan.host.always_on {
            // Checked when the plan was loaded.
            if let Ok(glob) = Glob::new(pattern) {
                always_on.add(glob);
            }
        }
        Surface {
            host_tools: host_tools::mounted(),
            always_on: always_on.build().unwrap_or_else(|_| GlobSet::empty()),
            index: Mutex::new(None),
            outputs: outputs::OutputStore::new(plan),
        }
    }

    /// The host tool called `name`, when the plan serves it: `read_output`
    /// always, `tool_search` under `tool_discovery = "search"`. A mounted
    /// tool of the same name wins.
    pub fn host_tool(&self, host: &Host, name: &str) -> Option<Arc<MountedTool>> {
        if host.resolve(name).is_some() {
            return None;
        }
        self.host_tools
            .iter()
            .find(|t| t.name() == name)
            .filter(|t| t.name() != host_tools::TOOL_SEARCH || searching(&host.plan))
            .cloned()
    }

    /// Whether `tool` is one of the host's own tools.
    pub fn is_host_tool(&self, tool: &MountedTool) -> bool {
        self.host_tools.iter().any(|t| std::ptr::eq(&**t, tool))
    }

    /// The selected toolsets of a call or listing (the server's, then the
    /// client's), or `unknown_toolset`.
    pub fn viewer<'a>(
        plan: &'a Plan,
        principal: &'a str,
        selected: [Option<&str>; 2],
        id: &str,
    ) -> Result<Viewer<'a>, ToolResult> {
        let mut toolsets = Vec::new();
        for name in selected.into_iter().flatten() {
            toolsets.push(toolsets::find(&plan.toolsets, name, id)?);
        }
        Ok(Viewer { principal, toolsets })
    }

    /// Stage 1's surface check for a resolved tool called as `name`: in
    /// every selected toolset, and not held back by `toolhost.lock`.
    pub fn gate(viewer: &Viewer<'_>, tool: &MountedTool, name: &str, id: &str) -> Result<(), ToolResult> {
        if let Some(outside) = viewer.toolsets.iter().find(|t| !t.covers(tool)) {
            return Err(toolsets::outside(outside, name, id));
        }
        if let Some(why) = tool.held() {
            let pin = tool.pin();
            return Err(
                ToolResult::failure(id, Status::Error, pin::TOOL_CHANGED, why).with_details(json!({
                    "server": pin.map(|p| p.source.clone()),
                    "tool": pin.map(|p| p.tool.clone()),
                    "lock": pin::LOCK_FILE,
                })),
            );
        }
        Ok(())
    }

    /// Whether `viewer` may find and call `tool` (grants, toolsets, pins).
    pub fn offers(host: &Host, viewer: &Viewer<'_>, tool: &MountedTool) -> bool {
        tool.held().is_none()
            && viewer.toolsets.iter().all(|t| t.covers(tool))
            && crate::governance::grants::visible(&host.plan.governance.grants, viewer.principal, tool)
    }

    /// What `tools/list` shows `viewer`: every tool it is offered, or,
    /// under `tool_discovery = "search"`, `tool_search` and the offered
    /// `always_on` tools.
    pub fn listed(&self, host: &Host, viewer: &Viewer<'_>) -> Vec<rmcp::model::Tool> {
        let searching = searching(&host.plan);
        let mut listed: Vec<rmcp::model::Tool> = Vec::new();
        if searching {
            if let Some(tool) = self.host_tool(host, host_tools::TOOL_SEARCH) {
                listed.push(convert::tool(&tool.spec));
            }
        }
        listed.extend(
            convert::tools(host)
                .into_iter()
                .filter(|t| !searching || self.always_on.is_match(t.name.as_ref()))
                .filter(|t| {
                    host.resolve(&t.name)
                        .is_none_or(|r| Self::offers(host, viewer, &r.tool))
                }),
        );
        listed
    }

    /// The tools best matching `query` that `viewer` is offered.
    pub fn search(
        &self,
        host: &Host,
        viewer: &Viewer<'_>,
        query: &str,
        limit: usize,
    ) -> Vec<Arc<MountedTool>> {
        let index = self.index(host);
        index
            .search(query, limit, |tool| Self::offers(host, viewer, tool))
            .into_iter()
            .map(|(tool, _)| tool)
            .collect()
    }

    /// The index over the host's tools now, rebuilt when the list changed.
    fn index(&self, host: &Host) -> Arc<search::Index> {
        let tools = host.tools();
        let key: Vec<usize> = tools.iter().map(|t| Arc::as_ptr(t) as usize).collect();
        let mut slot = self.index.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((k, index)) = slot.as_ref() {
            if *k == key {
                return index.clone();
            }
        }
        let index = Arc::new(search::Index::build(&tools));
        *slot = Some((key, index.clone()));
        index
    }

    /// Runs a host tool; `None` when `tool` is not one.
    pub fn run(
        &self,
        host: &Host,
        viewer: &Viewer<'_>,
        tool: &MountedTool,
        id: &str,
        input: &Value,
    ) -> Option<ToolResult> {
        if !self.is_host_tool(tool) {
            return None;
        }
        Some(match tool.name() {
            host_tools::TOOL_SEARCH => {
                let query = input["query"].as_str().unwrap_or_default();
                let limit = input["limit"]
                    .as_u64()
                    .unwrap_or(host_tools::DEFAULT_LIMIT)
                    .min(host_tools::MAX_LIMIT) as usize;
                let found = self.search(host, viewer, query, limit);
                let tools: Vec<Value> = found
                    .iter()
                    .map(|t| serde_json::to_value(convert::tool(&t.spec)).unwrap_or(Value::Null))
                    .collect();
                ToolResult::success(id, json!({ "total": tools.len(), "tools": tools }))
            }
            _ => {
                let uri = input["uri"].as_str().unwrap_or_default();
                let offset = input["offset"].as_u64().map(|n| n as usize);
                let length = input["length"].as_u64().map(|n| n as usize);
                match self.outputs.read(viewer.principal, uri, offset, length) {
                    Ok(chunk) => ToolResult::success(
                        id,
                        json!({
                            "uri": chunk.uri,
                            "offset": chunk.offset,
                            "text": chunk.text,
                            "total": chunk.total,
                            "next_offset": chunk.next_offset,
                        }),
                    ),
                    Err(e) => e.into_result(id),
                }
            }
        })
    }
}

/// Whether the plan lists tools through search.
pub fn searching(plan: &Plan) -> bool {
    plan.host.tool_discovery == ToolDiscovery::Search
}
