//! `[tools.mcp]`: an MCP server mounted as a tool source.
//!
//! Each of the server's tools becomes an ordinary [`MountedTool`] whose FFI
//! object forwards calls to the server, so every stage of the pipeline
//! (validation, policy, approval, hooks, timeouts, bounding, audit,
//! idempotency) applies to it exactly as to a native tool.

mod blocks;
pub mod bounds;
mod convert;
pub(crate) mod error;
pub mod input;
mod list_filter;
mod probe;
mod runtime;
mod server;
mod stderr;
mod upstream;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

pub use error::{HandshakeError, RuntimeError, SourceError};
pub use server::Server;

use crate::context::CallContext;
use crate::events::EventBus;
use crate::loader::{self, MountedModule};
use crate::plan::{McpSource, ModuleEntry, Plan};
use crate::tool::{ModuleInfo, MountedTool, SourceKind, ToolBackend, ToolWatch, ToolsChanged, WatchHandle};

/// Connects to the server and mounts its tools.
pub fn mount(
    entry: &ModuleEntry,
    mcp: &McpSource,
    plan: &Plan,
    events: &Arc<EventBus>,
) -> Result<MountedModule, SourceError> {
    let started = Instant::now();
    let label = entry.label();
    let server = Server::new(label.clone(), mcp.clone(), plan.host.mcp_limits.clone());
    let listed = server.connect()?;
    let load_time = started.elapsed();
    report_list(events, &label, &server);
    let watch = Arc::new(Watch {
        server: server.clone(),
        entry: entry.clone(),
        plan: plan.clone(),
        info: std::sync::OnceLock::new(),
    });
    let info = Arc::new(ModuleInfo {
        name: label.clone(),
        version: String::new(),
        description: format!("MCP server {label}"),
        path: PathBuf::from(mcp.url.clone().unwrap_or_else(|| mcp.command.join(" "))),
        limit: loader::concurrency_limit(entry),
        source: SourceKind::Mcp,
        process: None,
        watch: Some(WatchHandle(watch.clone())),
    });
    let _ = watch.info.set(Arc::downgrade(&info));
    let tools = tools_of(entry, plan, &server, &info, &listed);
    let cleanup: loader::Cleanup = Box::new(move || server.shutdown());
    Ok(MountedModule::new(
        info,
        tools,
        load_time,
        started.elapsed() - load_time,
        Some(cleanup),
    ))
}

/// Keeps the tool list's counts against its caps, and the tools refused
/// for their names, for `toolhost check` (as a module's own report).
fn report_list(events: &EventBus, label: &str, server: &Server) {
    let (walked, refused) = server.walked();
    let mut items = vec![serde_json::json!({"name": "tools/list", "state": "bounded", "detail": walked})];
    if let Some(protocol) = server.protocol() {
        items.push(serde_json::json!({"name": "protocol", "state": "negotiated", "detail": protocol}));
    }
    items.extend(
        refused
            .into_iter()
            .map(|why| serde_json::json!({"name": "tool", "state": "refused", "detail": why})),
    );
    events.record_report(label, &serde_json::json!({"title": "tool list", "items": items}));
}

/// The server's tools as mounted tools (public names, plan effects).
fn tools_of(
    entry: &ModuleEntry,
    plan: &Plan,
    server: &Arc<Server>,
    info: &Arc<ModuleInfo>,
    listed: &[rmcp::model::Tool],
) -> Vec<Arc<MountedTool>> {
    let lock = toolhost_plan::pin::lock_for(plan);
    listed
        .iter()
        .map(|tool| {
            let spec = convert::spec(tool);
            let (public, name) = loader::prefixed(entry, plan, spec);
            let backend = Box::new(ServerTool {
                server: server.clone(),
                name: name.clone(),
            });
            let mounted = MountedTool::new(public, name, info.clone(), backend);
            let fingerprint = toolhost_plan::pin::Fingerprint::of(tool);
            toolhost_plan::pin::mark(
                server.source(),
                &info.name,
                &tool.name,
                fingerprint,
                &mounted,
                &lock,
            );
            Arc::new(mounted)
        })
        .collect()
}

/// Re-reads the server's tools when it sends `tools/list_changed`.
struct Watch {
    server: Arc<Server>,
    entry: ModuleEntry,
    plan: Plan,
    info: std::sync::OnceLock<std::sync::Weak<ModuleInfo>>,
}

impl ToolWatch for Watch {
    fn on_change(&self, callback: ToolsChanged) {
        let (server, entry, plan) = (
            Arc::downgrade(&self.server),
            self.entry.clone(),
            self.plan.clone(),
        );
        let info = self.info.get().cloned().unwrap_or_default();
        self.server.set_on_change(Arc::new(move || {
            let (Some(server), Some(info)) = (server.upgrade(), info.upgrade()) else {
                return;
            };
            match server.tools() {
                Ok(listed) => {
                    tracing::info!(server = %server.label(), tools = listed.len(), "the MCP server's tool list changed; refreshed");
                    callback(tools_of(&entry, &plan, &server, &info, &listed));
                }
                Err(e) => tracing::error!(
                    server = %server.label(),
                    "tool list changed, but re-reading it failed: {}",
                    crate::escape::escape_line(&e.to_string())
                ),
            }
        }));
    }
}

/// A tool of a mounted server: a call goes to the server as `tools/call`.
struct ServerTool {
    server: Arc<Server>,
    name: String,
}

impl ToolBackend for ServerTool {
    fn call(&self, call_json: &str, ctx: &CallContext) -> String {
        let result = self.server.call(&self.name, call_json, ctx);
        serde_json::to_string(&result).unwrap_or_else(|_| "{}".into())
    }
}
