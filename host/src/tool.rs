//! A tool as mounted in the host: its spec under its public name, its module,
//! and its input validator, compiled once.

use std::sync::{Arc, OnceLock};

use abi_stable::std_types::RStr;
use toolhost_core::abi::{FfiContextRef, FfiToolBox};
use toolhost_core::ToolSpec;

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
}

/// One mounted tool.
pub struct MountedTool {
    /// The spec, with the public (prefixed) name and aliases.
    pub spec: ToolSpec,
    /// The name the module registered (what it expects in `CallRequest.name`).
    pub module_name: String,
    /// Its module.
    pub module: Arc<ModuleInfo>,
    ffi: FfiToolBox,
    validator: OnceLock<Result<jsonschema::Validator, String>>,
    output_validator: OnceLock<Option<Result<jsonschema::Validator, String>>>,
}

impl MountedTool {
    /// Wraps a registered tool object under its public spec.
    pub fn new(spec: ToolSpec, module_name: String, module: Arc<ModuleInfo>, ffi: FfiToolBox) -> Self {
        MountedTool {
            spec,
            module_name,
            module,
            ffi,
            validator: OnceLock::new(),
            output_validator: OnceLock::new(),
        }
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
    pub fn validator(&self) -> Result<&jsonschema::Validator, &str> {
        self.validator
            .get_or_init(|| {
                jsonschema::validator_for(&self.spec.input_schema)
                    .map_err(|e| format!("tool '{}' has an invalid input schema: {e}", self.spec.name))
            })
            .as_ref()
            .map_err(String::as_str)
    }

    /// The output validator, when the spec commits to an output schema.
    pub fn output_validator(&self) -> Option<Result<&jsonschema::Validator, &str>> {
        self.output_validator
            .get_or_init(|| {
                self.spec.output_schema.as_ref().map(|schema| {
                    jsonschema::validator_for(schema)
                        .map_err(|e| format!("tool '{}' has an invalid output schema: {e}", self.spec.name))
                })
            })
            .as_ref()
            .map(|r| r.as_ref().map_err(String::as_str))
    }

    /// Calls into the module. Blocking: run it on a blocking thread.
    pub fn execute_blocking(&self, call_json: &str, ctx: FfiContextRef<'_>) -> String {
        self.ffi.execute(RStr::from_str(call_json), ctx).into_string()
    }
}
