//! Mounting the module under test with a minimal host-side coordinator,
//! keeping the raw tool objects so checks see exactly what the module sent.

use std::path::Path;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RErr, ROk, RResult, RStr, RString};
use serde_json::Value;
use toolhost_core::abi::{FfiCleanupBox, FfiCoordinator, FfiCoordinator_TO, FfiToolBox, ModuleRef};
use toolhost_core::wire::{HostInfo, MountEnvelope};

/// A mounted module: its tools in registration order and its cleanup.
pub struct Mounted {
    /// The registered tools.
    pub tools: Vec<Arc<FfiToolBox>>,
    cleanup: Option<FfiCleanupBox>,
}

/// Collects registrations during `mount`; logs go to the host's `tracing`.
#[derive(Clone)]
struct Collector {
    module: Arc<str>,
    registered: Arc<Mutex<Option<Vec<FfiToolBox>>>>,
}

impl FfiCoordinator for Collector {
    fn register_tool(&self, tool: FfiToolBox) -> RResult<(), RString> {
        match self.registered.lock() {
            Ok(mut guard) => match guard.as_mut() {
                Some(tools) => {
                    tools.push(tool);
                    ROk(())
                }
                None => RErr(RString::from("tools can only be registered during mount")),
            },
            Err(_) => RErr(RString::from("registration lock poisoned")),
        }
    }

    fn contribute_events(&self, names_json: RStr<'_>) {
        if serde_json::from_str::<Vec<String>>(names_json.as_str()).is_err() {
            tracing::warn!(module = %self.module, "malformed event names: {}", names_json.as_str());
        }
    }

    fn emit(&self, _event: RStr<'_>, _payload_json: RStr<'_>) {}

    fn log(&self, level: u8, message: RStr<'_>) {
        toolhost::loader::log_line(&self.module, None, level, message.as_str());
    }
}

/// Mounts `module` with `config`, as toolhost would.
pub fn mount(module: ModuleRef, name: &str, config: &Value, work_dir: &Path) -> Result<Mounted, String> {
    let envelope = MountEnvelope {
        config: config.clone(),
        host: HostInfo {
            working_dir: work_dir.to_string_lossy().into_owned(),
            host_version: format!("xtask validate-module (toolhost {})", env!("CARGO_PKG_VERSION")),
            state_dir: work_dir.join(".state").to_string_lossy().into_owned(),
        },
    };
    let envelope = serde_json::to_string(&envelope).map_err(|e| e.to_string())?;
    let collector = Collector {
        module: Arc::from(name),
        registered: Arc::new(Mutex::new(Some(Vec::new()))),
    };
    let ffi = FfiCoordinator_TO::from_value(collector.clone(), TD_Opaque);
    let outcome = (module.mount())(ffi, RStr::from_str(&envelope));
    let tools: Vec<Arc<FfiToolBox>> = collector
        .registered
        .lock()
        .ok()
        .and_then(|mut r| r.take())
        .unwrap_or_default()
        .into_iter()
        .map(Arc::new)
        .collect();
    match outcome {
        ROk(cleanup) => Ok(Mounted {
            tools,
            cleanup: Some(cleanup),
        }),
        RErr(message) => Err(message.into_string()),
    }
}

impl Mounted {
    /// Drops the tools, then runs the cleanup on its own thread, waiting at
    /// most `bound`. Errors say what went wrong.
    pub fn cleanup(mut self, bound: Duration) -> Result<(), String> {
        self.tools.clear();
        let Some(mut cleanup) = self.cleanup.take() else {
            return Ok(());
        };
        let (done, finished) = mpsc::channel();
        std::thread::spawn(move || {
            cleanup.cleanup();
            let _ = done.send(());
        });
        finished
            .recv_timeout(bound)
            .map_err(|_| format!("the cleanup did not return within {} ms", bound.as_millis()))
    }

    /// Each tool's spec as JSON (a JSON string holding the raw text when the
    /// module sent something that is not JSON).
    pub fn specs(&self) -> Vec<Value> {
        self.tools
            .iter()
            .map(|tool| {
                let text = tool.spec().into_string();
                serde_json::from_str(&text).unwrap_or(Value::String(text))
            })
            .collect()
    }
}
