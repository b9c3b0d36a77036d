//! The module's handle on the host during and after `mount`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::RStr;
use serde_json::Value;

use super::adapter::ToolAdapter;
use super::context::Level;
use super::error::MountError;
use super::guard::guard;
use super::session::SessionHooks;
use super::tool::Tool;
use crate::abi::{FfiCleanup, FfiCleanupBox, FfiCleanup_TO, FfiCoordinatorBox, FfiToolBox, FfiTool_TO};
use crate::wire::HostInfo;

/// Registers tools, declares and emits events, and logs into the host.
///
/// It is cheap to clone; keep a clone in a tool to emit events or log outside
/// a call. Logs and events go through the host because a module's own copy
/// of `tracing` cannot see the host's subscriber.
#[derive(Clone)]
pub struct Coordinator {
    inner: Arc<Inner>,
}

struct Inner {
    ffi: FfiCoordinatorBox,
    module_name: String,
    module_version: String,
    working_dir: PathBuf,
    state_dir: Option<PathBuf>,
    host_version: String,
    session: SessionHooks,
    plan_file: Option<PathBuf>,
    protected: crate::protected::Protected,
}

impl Coordinator {
    pub(crate) fn new(
        ffi: FfiCoordinatorBox,
        module_name: &str,
        module_version: &str,
        host: HostInfo,
    ) -> Self {
        let non_empty = |s: String| (!s.is_empty()).then(|| PathBuf::from(s));
        Coordinator {
            inner: Arc::new(Inner {
                ffi,
                module_name: module_name.to_string(),
                module_version: module_version.to_string(),
                working_dir: non_empty(host.working_dir).unwrap_or_else(|| PathBuf::from(".")),
                state_dir: non_empty(host.state_dir),
                host_version: host.host_version,
                session: SessionHooks::default(),
                protected: crate::protected::Protected::new(&host.protected_paths),
                plan_file: non_empty(host.plan_file),
            }),
        }
    }

    /// Registers a tool. Its input schema is derived here, once; a spec that
    /// cannot be built (a panic in `spec`) fails the mount with a message.
    pub fn register<T: Tool>(&self, tool: T) -> Result<(), MountError> {
        let adapter = ToolAdapter::new(tool, &self.inner.module_version, self.inner.session.clone())?;
        let boxed: FfiToolBox = FfiTool_TO::from_value(adapter, TD_Opaque);
        self.inner
            .ffi
            .register_tool(boxed)
            .into_result()
            .map_err(|e| MountError::new(e.as_str()))
    }

    /// Declares the names of events this module may emit, so hooks and
    /// observers can subscribe to them.
    pub fn contribute_events(&self, names: &[&str]) {
        let json = serde_json::to_string(names).unwrap_or_else(|_| "[]".into());
        self.inner.ffi.contribute_events(RStr::from_str(&json));
    }

    /// Emits an event to the host's observers.
    pub fn emit(&self, event: &str, payload: &Value) {
        let json = payload.to_string();
        self.inner.ffi.emit(RStr::from_str(event), RStr::from_str(&json));
    }

    /// Writes a log line into the host's `tracing` output.
    pub fn log(&self, level: Level, message: impl AsRef<str>) {
        self.inner
            .ffi
            .log(level.to_abi(), RStr::from_str(message.as_ref()));
    }

    pub(crate) fn ffi_state(&self, request: RStr<'_>) -> abi_stable::std_types::RString {
        self.inner.ffi.state(request)
    }

    /// Runs `handler` with the session id whenever the host says a session
    /// ended (an MCP session closed or expired, a CLI process exiting):
    /// drop what the module keeps for that session. It runs on a host
    /// thread, under the panic guard, possibly while other sessions' calls
    /// run. See [`super::session`].
    pub fn on_session_end(&self, handler: impl Fn(&str) + Send + Sync + 'static) {
        self.inner.session.add(Box::new(handler));
    }

    /// The plan's working folder (absolute).
    pub fn working_dir(&self) -> &Path {
        &self.inner.working_dir
    }

    /// A folder for the module's state and scratch files, when the host has one.
    pub fn state_dir(&self) -> Option<&Path> {
        self.inner.state_dir.as_deref()
    }

    /// The plan file the host mounted this module from, when there is one
    /// (a module running commands hides it from them).
    pub fn plan_file(&self) -> Option<&Path> {
        self.inner.plan_file.as_deref()
    }

    /// The control plane this module must leave alone (see
    /// [`crate::protected`]): a module that writes, deletes or runs
    /// commands checks its paths against it.
    pub fn protected(&self) -> &crate::protected::Protected {
        &self.inner.protected
    }

    /// The module's name from its manifest.
    pub fn module_name(&self) -> &str {
        &self.inner.module_name
    }

    /// The host's version.
    pub fn host_version(&self) -> &str {
        &self.inner.host_version
    }
}

/// What the host runs after dropping the module's tools: stop runtimes, kill
/// children, flush files. Runs once, under the panic guard.
pub struct Cleanup {
    run: Option<Box<dyn FnOnce() + Send>>,
}

impl Cleanup {
    /// A cleanup that runs `f`.
    pub fn new(f: impl FnOnce() + Send + 'static) -> Self {
        Cleanup {
            run: Some(Box::new(f)),
        }
    }

    /// A module with nothing to undo.
    pub fn none() -> Self {
        Cleanup { run: None }
    }

    pub(crate) fn into_ffi(self, coordinator: Coordinator) -> FfiCleanupBox {
        FfiCleanup_TO::from_value(
            CleanupHandle {
                run: self.run,
                coordinator,
            },
            TD_Opaque,
        )
    }
}

struct CleanupHandle {
    run: Option<Box<dyn FnOnce() + Send>>,
    coordinator: Coordinator,
}

impl FfiCleanup for CleanupHandle {
    fn cleanup(&mut self) {
        if let Some(run) = self.run.take() {
            if let Err(panic) = guard(run) {
                self.coordinator
                    .log(Level::Error, format!("cleanup panicked: {panic}"));
            }
        }
    }
}

#[cfg(test)]
fn _assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<Coordinator>();
}
