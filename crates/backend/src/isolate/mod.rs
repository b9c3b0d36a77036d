//! `isolation = "process"`: a module's library runs in a worker process
//! (this executable, re-run as `toolhost __worker`), so that a crash, an
//! exit, a stray write to stdout or a tool that ignores cancellation costs
//! the calls in that worker, not the host.
//!
//! Each tool is mounted as an ordinary [`MountedTool`] whose FFI object
//! forwards to the worker, so every stage of the pipeline above execute is
//! the same for isolated and in-process modules.

pub mod bounds;
pub(crate) mod error;
mod frame;
pub(crate) mod supervisor;
pub mod worker;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use error::SupervisorError;
pub use supervisor::{crashed_result, set_worker_program, unavailable_result, Supervisor};
pub use toolhost_supervise::{describe, signal_name, Ended, Ledger, MAX_CRASHES, WINDOW};

use crate::context::CallContext;
use crate::events::EventBus;
use crate::loader::{self, MountedModule};
use crate::plan::{ModuleEntry, Plan};
use crate::tool::{ModuleInfo, MountedTool, ProcessControl, ProcessHandle, SourceKind, ToolBackend};

/// Mounts the library at `path` in a worker process.
pub fn mount(
    entry: &ModuleEntry,
    plan: &Plan,
    events: &Arc<EventBus>,
    path: &Path,
) -> Result<MountedModule, loader::ModuleError> {
    let supervisor = Supervisor::new(
        path.to_path_buf(),
        entry.label(),
        entry.memory_limit_mb,
        plan.host.worker_limits.clone(),
        events.clone(),
    );
    let started = Instant::now();
    let mounted = supervisor.first_start(|manifest| {
        loader::check_manifest(entry, manifest, path)?;
        loader::envelope(entry, plan, &manifest.name)
    })?;
    let mount_time = started.elapsed().saturating_sub(mounted.load_time);
    let info = Arc::new(ModuleInfo {
        name: mounted.manifest.name.clone(),
        version: mounted.manifest.version.clone(),
        description: mounted.manifest.description.clone(),
        path: path.to_path_buf(),
        limit: loader::concurrency_limit(entry),
        source: SourceKind::IsolatedModule,
        process: Some(ProcessHandle(Arc::new(Control(supervisor.clone())))),
        watch: None,
    });
    let mut tools = Vec::with_capacity(mounted.specs.len());
    for spec_text in mounted.specs {
        let (spec, module_name) = loader::public_spec(entry, plan, &spec_text)?;
        let backend = Box::new(WorkerTool {
            supervisor: supervisor.clone(),
            name: module_name.clone(),
        });
        tools.push(Arc::new(MountedTool::new(
            spec,
            module_name,
            info.clone(),
            backend,
        )));
    }
    let grace = Duration::from_millis(plan.host.cancel_grace_ms);
    let cleanup: loader::Cleanup = Box::new(move || supervisor.shutdown(grace));
    Ok(MountedModule::new(
        info,
        tools,
        mounted.load_time,
        mount_time,
        Some(cleanup),
    ))
}

/// A tool of an isolated module: a call goes to the worker, and the
/// caller waits for its answer.
struct WorkerTool {
    supervisor: Arc<Supervisor>,
    name: String,
}

impl ToolBackend for WorkerTool {
    fn call(&self, call_json: &str, ctx: &CallContext) -> String {
        self.supervisor.call(&self.name, call_json, ctx)
    }
}

struct Control(Arc<Supervisor>);

impl ProcessControl for Control {
    fn kill_stuck(&self) -> bool {
        self.0.kill_stuck()
    }

    fn is_running(&self) -> bool {
        self.0.is_live()
    }
}
