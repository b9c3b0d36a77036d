//! `isolation = "process"`: a module's library runs in a worker process
//! (this executable, re-run as `toolhost __worker`), so that a crash, an
//! exit, a stray write to stdout or a tool that ignores cancellation costs
//! the calls in that worker, not the host.
//!
//! Each tool is mounted as an ordinary [`MountedTool`] whose FFI object
//! forwards to the worker, so every stage of the pipeline above execute is
//! the same for isolated and in-process modules.

pub mod bounds;
mod error;
mod frame;
pub(crate) mod supervisor;
pub mod worker;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RStr, RString};
use toolhost_core::abi::{FfiCleanup, FfiCleanup_TO, FfiContextRef, FfiTool, FfiTool_TO};

pub use error::SupervisorError;
pub use supervisor::{crashed_result, set_worker_program, unavailable_result, Supervisor};
pub use toolhost_supervise::{describe, signal_name, Ended, Ledger, MAX_CRASHES, WINDOW};

use crate::events::EventBus;
use crate::loader::{self, MountedModule};
use crate::plan::{ModuleEntry, Plan};
use crate::tool::{ModuleInfo, MountedTool, ProcessControl, ProcessHandle, SourceKind};

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
        let ffi = FfiTool_TO::from_value(
            WorkerTool {
                supervisor: supervisor.clone(),
                name: module_name.clone(),
                spec: spec_text,
            },
            TD_Opaque,
        );
        tools.push(Arc::new(MountedTool::new(spec, module_name, info.clone(), ffi)));
    }
    let grace = Duration::from_millis(plan.host.cancel_grace_ms);
    let cleanup = FfiCleanup_TO::from_value(WorkerCleanup { supervisor, grace }, TD_Opaque);
    Ok(MountedModule::new(
        info,
        tools,
        mounted.load_time,
        mount_time,
        Some(cleanup),
    ))
}

/// A tool of an isolated module, as the host's FFI object: `execute`
/// forwards the call to the worker and waits for its answer.
struct WorkerTool {
    supervisor: Arc<Supervisor>,
    name: String,
    spec: String,
}

impl FfiTool for WorkerTool {
    fn spec(&self) -> RString {
        RString::from(self.spec.as_str())
    }

    fn execute(&self, call: RStr<'_>, ctx: FfiContextRef<'_>) -> RString {
        RString::from(self.supervisor.call(&self.name, call.as_str(), &ctx))
    }
}

/// Ends the worker when the host unmounts the module.
struct WorkerCleanup {
    supervisor: Arc<Supervisor>,
    grace: Duration,
}

impl FfiCleanup for WorkerCleanup {
    fn cleanup(&mut self) {
        self.supervisor.shutdown(self.grace);
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

/// The answer for a call whose isolated tool ignored cancellation past the
/// grace period: its worker is killed (so nothing is left running), and the
/// call is answered `timeout` or `cancelled` saying so. `None` for a tool
/// that runs in the host, which can only be abandoned.
pub fn ended_stuck(
    tool: &MountedTool,
    id: &str,
    why: toolhost_core::Status,
    limits: &crate::pipeline::execute::Limits,
) -> Option<toolhost_core::ToolResult> {
    use toolhost_core::wire::codes;
    let process = tool.module.process.as_ref()?;
    if !process.0.kill_stuck() {
        return None;
    }
    tracing::warn!(tool = tool.name(), call = %id, "tool ignored cancellation; killed its worker");
    let (code, what) = match why {
        toolhost_core::Status::Timeout => (
            codes::TIMEOUT,
            format!("timed out after {}s", limits.timeout.as_secs_f64()),
        ),
        _ => (codes::CANCELLED, "was cancelled".to_string()),
    };
    let mut result = toolhost_core::ToolResult::failure(
        id,
        why,
        code,
        format!(
            "'{}' {what} and did not stop within {:.1}s, so its worker process was killed; \
             the module restarts on the next call",
            tool.name(),
            limits.grace.as_secs_f64()
        ),
    );
    result
        .metadata
        .extra
        .insert("worker_killed".into(), serde_json::json!(true));
    Some(result)
}
