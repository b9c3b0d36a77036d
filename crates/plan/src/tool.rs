//! A tool as mounted in the host: its spec under its public name, its module,
//! and its input validator, compiled once.

use std::sync::{Arc, OnceLock};

use toolhost_core::ToolSpec;

use crate::context::CallContext;

/// Facts about a mounted module that its tools and reports share.
#[derive(Debug)]
pub struct ModuleInfo {
    /// The manifest's name.
    pub name: String,
    /// The manifest's version.
    pub version: String,
    /// The manifest's description.
    pub description: String,
    /// The library file.
    pub path: std::path::PathBuf,
    /// Caps concurrent calls into the module, when the plan sets one.
    pub limit: Option<Arc<tokio::sync::Semaphore>>,
    /// Where its tools run, for `check`, `list` and the scheduler.
    pub source: SourceKind,
    /// The process its tools run in, when not the host's.
    pub process: Option<ProcessHandle>,
    /// For sources whose tool list can change while mounted (MCP servers).
    pub watch: Option<WatchHandle>,
}

/// Called with a source's new tool list.
pub type ToolsChanged = Arc<dyn Fn(Vec<Arc<MountedTool>>) + Send + Sync>;

/// A source whose tool list can change while it is mounted.
pub trait ToolWatch: Send + Sync {
    /// Sets what runs (with the new list) when the list changes.
    fn on_change(&self, callback: ToolsChanged);
}

/// A module's tool-list watch.
#[derive(Clone)]
pub struct WatchHandle(pub Arc<dyn ToolWatch>);

impl std::fmt::Debug for WatchHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WatchHandle")
    }
}

/// Where a module's tools run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// A library loaded into the host.
    Module,
    /// A library loaded into a worker process (`isolation = "process"`).
    IsolatedModule,
    /// A mounted MCP server (`[tools.mcp]`).
    Mcp,
}

impl SourceKind {
    /// The name `check` and `list` show.
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Module => "module",
            SourceKind::IsolatedModule => "isolated module",
            SourceKind::Mcp => "mcp",
        }
    }
}

/// What the pipeline may do to the process a module's tools run in.
pub trait ProcessControl: Send + Sync {
    /// Ends the process because a call in it ignored cancellation past the
    /// grace period, so that the call's thread is not abandoned; every call
    /// in flight on it is answered. Returns whether there was one to end.
    fn kill_stuck(&self) -> bool;

    /// Whether the process is running now (asking never starts it).
    fn is_running(&self) -> bool {
        true
    }
}

/// A module's process, shared by its tools.
#[derive(Clone)]
pub struct ProcessHandle(pub Arc<dyn ProcessControl>);

impl std::fmt::Debug for ProcessHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProcessHandle")
    }
}

/// Where a tool's calls run: a source of tools as the pipeline's execute
/// stage sees it. Three sources implement it: a library loaded into the
/// host (through its FFI object), a library in a worker process, and a
/// mounted MCP server. The host's own interface, so that only the
/// in-process source speaks the module ABI.
pub trait ToolBackend: Send + Sync {
    /// Runs one call (`call_json`, a `CallRequest`) and answers its
    /// `ToolResult` as JSON text. Blocking: run it on a blocking thread.
    /// `ctx` carries the call's cancel token, deadline and progress sink.
    fn call(&self, call_json: &str, ctx: &CallContext) -> String;
}

/// A tool's input or output schema that does not compile; the pipeline
/// answers `internal` (input) or `invalid_output` (output) with it. A
/// single struct: both callers only print it, and which schema it was is
/// already told by the method that returned it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool '{tool}' has an invalid {which} schema: {detail}")]
pub struct SchemaError {
    /// The tool's public name.
    pub tool: String,
    /// `input` or `output`.
    pub which: &'static str,
    /// What the JSON Schema compiler said (its error borrows the schema,
    /// so it is kept as text).
    pub detail: String,
}

/// One mounted tool.
pub struct MountedTool {
    /// The spec, with the public (prefixed) name and aliases.
    pub spec: ToolSpec,
    /// The name the module registered (what it expects in `CallRequest.name`).
    pub module_name: String,
    /// Its module.
    pub module: Arc<ModuleInfo>,
    backend: Box<dyn ToolBackend>,
    validator: OnceLock<Result<jsonschema::Validator, SchemaError>>,
    output_validator: OnceLock<Option<Result<jsonschema::Validator, SchemaError>>>,
    /// A foreign tool's fingerprint and whether `toolhost.lock` holds it back.
    pin: OnceLock<crate::fingerprint::Pin>,
}

impl MountedTool {
    /// A tool of `module` under its public spec, run by `backend`.
    pub fn new(
        spec: ToolSpec,
        module_name: String,
        module: Arc<ModuleInfo>,
        backend: Box<dyn ToolBackend>,
    ) -> Self {
        MountedTool {
            spec,
            module_name,
            module,
            backend,
            validator: OnceLock::new(),
            output_validator: OnceLock::new(),
            pin: OnceLock::new(),
        }
    }

    /// Records the tool's pin (once, from its source's list walk).
    pub fn set_pin(&self, pin: crate::fingerprint::Pin) {
        let _ = self.pin.set(pin);
    }

    /// Its pin, when it is a foreign (MCP) tool.
    pub fn pin(&self) -> Option<&crate::fingerprint::Pin> {
        self.pin.get()
    }

    /// Why `toolhost.lock` holds it back, if it does.
    pub fn held(&self) -> Option<&str> {
        self.pin.get().and_then(|p| p.held.as_deref())
    }

    /// The public name.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// The public name, then every alias: what plan rules and approvals may
    /// name the tool by.
    pub fn names(&self) -> impl Iterator<Item = &String> {
        std::iter::once(&self.spec.name).chain(&self.spec.aliases)
    }

    /// The input validator, compiled on first use and kept.
    pub fn validator(&self) -> Result<&jsonschema::Validator, &SchemaError> {
        self.validator
            .get_or_init(|| self.compile(&self.spec.input_schema, "input"))
            .as_ref()
    }

    /// The output validator, when the spec commits to an output schema.
    pub fn output_validator(&self) -> Option<Result<&jsonschema::Validator, &SchemaError>> {
        self.output_validator
            .get_or_init(|| {
                self.spec
                    .output_schema
                    .as_ref()
                    .map(|schema| self.compile(schema, "output"))
            })
            .as_ref()
            .map(Result::as_ref)
    }

    fn compile(
        &self,
        schema: &serde_json::Value,
        which: &'static str,
    ) -> Result<jsonschema::Validator, SchemaError> {
        jsonschema::validator_for(schema).map_err(|e| SchemaError {
            tool: self.spec.name.clone(),
            which,
            detail: e.to_string(),
        })
    }

    /// Runs one call in the tool's source. Blocking: run it on a blocking
    /// thread.
    pub fn execute_blocking(&self, call_json: &str, ctx: &CallContext) -> String {
        self.backend.call(call_json, ctx)
    }
}
