//! Loading one `[[tools]]` entry: find the library, check its ABI and
//! version, mount it, and collect its tools under their public names.

mod coordinator;
pub(crate) mod error;
mod in_process;
mod inspect;
pub(crate) mod library;
pub(crate) mod locate;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RResult, RStr};
use toolhost_core::abi::FfiCoordinator_TO;
use toolhost_core::wire::{HostInfo, MountEnvelope};
use toolhost_core::ToolSpec;

pub use crate::context::log_line;
pub use coordinator::HostCoordinator;
pub use error::ModuleError;
pub use in_process::InProcess;
pub use inspect::{exports_root_module, ROOT_MODULE_SYMBOL};
pub use library::{first_lines, open_root};

use crate::events::EventBus;
use crate::plan::{ModuleEntry, ModuleSource, Plan};
use crate::tool::{ModuleInfo, MountedTool, SourceKind};

/// What unmounting a module owes, run once after its tools are dropped: a
/// library's cleanup, a worker's or a server's shutdown.
pub type Cleanup = Box<dyn FnOnce() + Send>;

/// A module that mounted: its tools, and the cleanup still owed.
pub struct MountedModule {
    /// Facts about the module.
    pub info: Arc<ModuleInfo>,
    /// Its tools, under their public names.
    pub tools: Vec<Arc<MountedTool>>,
    /// Time to open and check the library.
    pub load_time: Duration,
    /// Time spent in the module's `mount`.
    pub mount_time: Duration,
    cleanup: Option<Cleanup>,
}

impl MountedModule {
    /// A mounted module from its parts (for sources other than an
    /// in-process library: isolated workers, MCP servers).
    pub(crate) fn new(
        info: Arc<ModuleInfo>,
        tools: Vec<Arc<MountedTool>>,
        load_time: Duration,
        mount_time: Duration,
        cleanup: Option<Cleanup>,
    ) -> Self {
        MountedModule {
            info,
            tools,
            load_time,
            mount_time,
            cleanup,
        }
    }

    /// Drops the module's tools, then runs its cleanup (once).
    pub fn cleanup(&mut self) {
        self.tools.clear();
        if let Some(cleanup) = self.cleanup.take() {
            tracing::debug!(module = %self.info.name, "running cleanup");
            cleanup();
        }
    }
}

impl Drop for MountedModule {
    fn drop(&mut self) {
        self.cleanup();
    }
}

/// Loads the library at `path` (found for `entry` since `started`) into
/// the host and mounts it.
pub fn mount_library(
    entry: &ModuleEntry,
    plan: &Plan,
    events: &Arc<EventBus>,
    path: &Path,
    started: Instant,
) -> Result<MountedModule, ModuleError> {
    let label = entry.label();
    let path = path.to_path_buf();
    let library = library::open(&path, &label)?;
    let manifest = library.manifest;
    check_manifest(entry, &manifest, &path)?;
    let load_time = started.elapsed();

    let info = Arc::new(ModuleInfo {
        name: manifest.name.clone(),
        version: manifest.version.clone(),
        description: manifest.description.clone(),
        path: path.clone(),
        limit: concurrency_limit(entry),
        source: SourceKind::Module,
        process: None,
        watch: None,
    });
    let envelope = envelope(entry, plan, &manifest.name)?;
    let host_side = coordinator::HostCoordinator::new(&manifest.name, events.clone());
    let ffi = FfiCoordinator_TO::from_value(host_side.clone(), TD_Opaque);

    let mount_started = Instant::now();
    let outcome = (library.module.mount())(ffi, RStr::from_str(&envelope));
    let registered = host_side.close();
    let mut module = MountedModule {
        info: info.clone(),
        tools: Vec::new(),
        load_time,
        mount_time: mount_started.elapsed(),
        cleanup: None,
    };
    match outcome {
        RResult::ROk(cleanup) => module.cleanup = Some(in_process::cleanup(cleanup)),
        RResult::RErr(message) => {
            return Err(ModuleError::Mount {
                label,
                detail: format!("mount failed: {message}"),
            });
        }
    }

    for ffi_tool in registered {
        let spec_text = ffi_tool.spec();
        let (spec, module_name) = public_spec(entry, plan, spec_text.as_str())?;
        module.tools.push(Arc::new(MountedTool::new(
            spec,
            module_name,
            info.clone(),
            Box::new(InProcess(ffi_tool)),
        )));
    }
    Ok(module)
}

/// The module's concurrency cap, from the plan.
pub(crate) fn concurrency_limit(entry: &ModuleEntry) -> Option<Arc<tokio::sync::Semaphore>> {
    entry
        .max_concurrent
        .map(|n| Arc::new(tokio::sync::Semaphore::new(n)))
}

/// Checks a library's manifest against the plan entry: the name it was
/// looked up by, and the version requirement.
pub(crate) fn check_manifest(
    entry: &ModuleEntry,
    manifest: &toolhost_core::Manifest,
    path: &std::path::Path,
) -> Result<(), ModuleError> {
    let manifest_error = |detail: String| ModuleError::Manifest {
        label: entry.label(),
        path: path.to_path_buf(),
        detail,
    };
    if let ModuleSource::Name(name) = &entry.source {
        if manifest.name.replace('-', "_") != name.replace('-', "_") {
            return Err(manifest_error(format!(
                "declares itself as '{}'; fix the plan's `module` or the file",
                manifest.name
            )));
        }
    }
    if let Some(req) = &entry.version {
        let version = semver::Version::parse(&manifest.version)
            .map_err(|e| manifest_error(format!("version '{}' is not semver: {e}", manifest.version)))?;
        if !req.matches(&version) {
            return Err(manifest_error(format!(
                "is version {version}, which does not satisfy the plan's requirement \"{req}\"; \
                 install a matching version or change `version` in the plan"
            )));
        }
    }
    Ok(())
}

/// The mount envelope (config and host facts) as JSON text.
pub(crate) fn envelope(entry: &ModuleEntry, plan: &Plan, module_name: &str) -> Result<String, ModuleError> {
    let envelope = MountEnvelope::new(
        entry.config.clone(),
        HostInfo::new(
            plan.working_dir.to_string_lossy(),
            env!("CARGO_PKG_VERSION"),
            plan.state_dir()
                .join("modules")
                .join(module_name)
                .to_string_lossy(),
        )
        .with_plan_file(plan_file(plan))
        .with_protected_paths(crate::plan::control_plane::protected_paths(plan)),
    );
    serde_json::to_string(&envelope).map_err(|e| ModuleError::Mount {
        label: entry.label(),
        detail: e.to_string(),
    })
}

/// The plan's file, absolute, if it is a real file (not the built-in plan).
fn plan_file(plan: &Plan) -> String {
    let path = std::path::absolute(&plan.file).unwrap_or_else(|_| plan.file.clone());
    if path.is_file() {
        path.to_string_lossy().into_owned()
    } else {
        String::new()
    }
}

/// A registered tool's spec under its public (prefixed) names, with the
/// plan's `[policy.tools.NAME] effect` applied; and the name the source
/// knows it by.
pub(crate) fn public_spec(
    entry: &ModuleEntry,
    plan: &Plan,
    spec_text: &str,
) -> Result<(ToolSpec, String), ModuleError> {
    let spec: ToolSpec = serde_json::from_str(spec_text).map_err(|e| ModuleError::Mount {
        label: entry.label(),
        detail: format!("a tool's spec is not a valid ToolSpec: {e}"),
    })?;
    // The rule a mounted MCP server's tools are held to, for the same
    // reasons (names are shown to people and told apart by clients).
    let (public, module_name) = prefixed(entry, plan, spec);
    crate::source::mcp::bounds::check_name(&public.name).map_err(|why| ModuleError::Mount {
        label: entry.label(),
        detail: format!(
            "tool name '{}' is not a valid MCP tool name: {why}",
            crate::escape::escape_line(&public.name)
        ),
    })?;
    Ok((public, module_name))
}

/// `spec` under its public names, with the plan's effect override applied.
pub(crate) fn prefixed(entry: &ModuleEntry, plan: &Plan, mut spec: ToolSpec) -> (ToolSpec, String) {
    let module_name = spec.name.clone();
    if !entry.prefix.is_empty() {
        spec.name = format!("{}{}", entry.prefix, spec.name);
        for alias in &mut spec.aliases {
            *alias = format!("{}{}", entry.prefix, alias);
        }
    }
    if let Some(effect) = plan.policy.tools.get(&spec.name).and_then(|rule| rule.effect) {
        spec.effect = effect;
        spec.annotations = effect.default_annotations();
    }
    (spec, module_name)
}
