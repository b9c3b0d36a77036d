//! Mounting the module under test with the host's own coordinator, keeping
//! the raw tool objects so checks see exactly what the module sent.

use std::path::Path;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RErr, ROk, RStr};
use serde_json::Value;
use toolhost::events::EventBus;
use toolhost::loader::HostCoordinator;
use toolhost_core::abi::{FfiCleanupBox, FfiCoordinator_TO, FfiToolBox, ModuleRef};
use toolhost_core::wire::{HostInfo, MountEnvelope};

/// A mounted module: its tools in registration order and its cleanup.
pub struct Mounted {
    /// The registered tools.
    pub tools: Vec<Arc<FfiToolBox>>,
    cleanup: Option<FfiCleanupBox>,
}

/// Why a mount failed; the checks judge a panic and a refusal differently
/// (a refused bad config is right, a panic never is).
#[derive(Debug, thiserror::Error)]
pub enum MountError {
    /// `mount` panicked (the SDK caught it and answered with its message).
    #[error("{0}")]
    Panicked(String),
    /// The module refused, with this message (which may be empty).
    #[error("{0}")]
    Refused(String),
    /// The envelope could not be encoded (a bug here, not in the module).
    #[error("cannot encode the mount envelope: {0}")]
    Envelope(#[from] serde_json::Error),
}

impl MountError {
    /// Sorts a module's error message: the SDK says "mount panicked: …";
    /// a module built otherwise may still say "panicked" somewhere. The
    /// ABI's `mount` answers a refusal and a caught panic alike, as an
    /// `RString`, so the text is the only signal there is; a structured
    /// kind would need an ABI change (and every published module rebuilt).
    fn from_module(message: String) -> MountError {
        if message.contains("panicked") {
            MountError::Panicked(message)
        } else {
            MountError::Refused(message)
        }
    }
}

/// Mounts `module` with `config`, as toolhost would.
pub fn mount(module: ModuleRef, name: &str, config: &Value, work_dir: &Path) -> Result<Mounted, MountError> {
    let envelope = MountEnvelope::new(
        config.clone(),
        HostInfo::new(
            work_dir.to_string_lossy(),
            format!("xtask validate-module (toolhost {})", env!("CARGO_PKG_VERSION")),
            work_dir.join(".state").to_string_lossy(),
        ),
    );
    let envelope = serde_json::to_string(&envelope)?;
    // The host's own coordinator, so the module meets exactly what toolhost
    // gives it; its events go to a bus nobody observes.
    let coordinator = HostCoordinator::new(name, EventBus::new());
    let ffi = FfiCoordinator_TO::from_value(coordinator.clone(), TD_Opaque);
    let outcome = (module.mount())(ffi, RStr::from_str(&envelope));
    let tools: Vec<Arc<FfiToolBox>> = coordinator.close().into_iter().map(Arc::new).collect();
    match outcome {
        ROk(cleanup) => Ok(Mounted {
            tools,
            cleanup: Some(cleanup),
        }),
        RErr(message) => Err(MountError::from_module(message.into_string())),
    }
}

/// A module's cleanup that did not return in time (it may still be
/// running on its thread). A single struct: it is the only way the cleanup
/// check fails here; a cleanup that panics is found in the logs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the cleanup did not return within {} ms", .bound.as_millis())]
pub struct CleanupTimedOut {
    /// The time allowed.
    pub bound: Duration,
}

impl Mounted {
    /// Drops the tools, then runs the cleanup on its own thread, waiting at
    /// most `bound`.
    pub fn cleanup(mut self, bound: Duration) -> Result<(), CleanupTimedOut> {
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
            .map_err(|_| CleanupTimedOut { bound })
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
