//! Loading one `[[tools]]` entry: find the library, check its ABI and
//! version, mount it, and collect its tools under their public names.

mod coordinator;
mod error;
mod inspect;
mod library;
mod locate;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RResult, RStr};
use toolhost_core::abi::{FfiCleanupBox, FfiCoordinator_TO};
use toolhost_core::wire::{HostInfo, MountEnvelope};
use toolhost_core::ToolSpec;

pub use coordinator::{log_line, HostCoordinator};
pub use error::ModuleError;
pub use inspect::{exports_root_module, ROOT_MODULE_SYMBOL};
pub use library::{first_lines, open_root};

use crate::events::EventBus;
use crate::plan::{ModuleEntry, ModuleSource, Plan};
use crate::tool::{ModuleInfo, MountedTool};

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
    cleanup: Option<FfiCleanupBox>,
}

impl MountedModule {
    /// Drops the module's tools, then runs its cleanup (once).
    pub fn cleanup(&mut self) {
        self.tools.clear();
        if let Some(mut cleanup) = self.cleanup.take() {
            tracing::debug!(module = %self.info.name, "running cleanup");
            cleanup.cleanup();
        }
    }
}

impl Drop for MountedModule {
    fn drop(&mut self) {
        self.cleanup();
    }
}

/// Loads and mounts one plan entry.
pub fn mount(entry: &ModuleEntry, plan: &Plan, events: &Arc<EventBus>) -> Result<MountedModule, ModuleError> {
    let started = Instant::now();
    let label = entry.label();
    let path: PathBuf = match &entry.source {
        ModuleSource::Name(name) => locate::find(name, &plan.module_path)?,
        ModuleSource::Path(path) => {
            locate::exists(path)?;
            path.clone()
        }
    };
    let library = library::open(&path, &label)?;
    let manifest = library.manifest;
    let manifest_error = |detail: String| ModuleError::Manifest {
        label: label.clone(),
        path: path.clone(),
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
    let load_time = started.elapsed();

    let info = Arc::new(ModuleInfo {
        name: manifest.name.clone(),
        version: manifest.version.clone(),
        description: manifest.description.clone(),
        path: path.clone(),
        limit: entry
            .max_concurrent
            .map(|n| Arc::new(tokio::sync::Semaphore::new(n))),
    });
    let envelope = MountEnvelope::new(
        entry.config.clone(),
        HostInfo::new(
            plan.working_dir.to_string_lossy(),
            env!("CARGO_PKG_VERSION"),
            plan.state_dir()
                .join("modules")
                .join(&manifest.name)
                .to_string_lossy(),
        ),
    );
    let envelope = serde_json::to_string(&envelope).map_err(|e| ModuleError::Mount {
        label: label.clone(),
        detail: e.to_string(),
    })?;
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
        RResult::ROk(cleanup) => module.cleanup = Some(cleanup),
        RResult::RErr(message) => {
            return Err(ModuleError::Mount {
                label,
                detail: format!("mount failed: {message}"),
            });
        }
    }

    for ffi_tool in registered {
        let spec_text = ffi_tool.spec();
        let mut spec: ToolSpec =
            serde_json::from_str(spec_text.as_str()).map_err(|e| ModuleError::Mount {
                label: label.clone(),
                detail: format!("a tool's spec is not a valid ToolSpec: {e}"),
            })?;
        let module_name = spec.name.clone();
        if !entry.prefix.is_empty() {
            spec.name = format!("{}{}", entry.prefix, spec.name);
            for alias in &mut spec.aliases {
                *alias = format!("{}{}", entry.prefix, alias);
            }
        }
        module.tools.push(Arc::new(MountedTool::new(
            spec,
            module_name,
            info.clone(),
            ffi_tool,
        )));
    }
    Ok(module)
}
