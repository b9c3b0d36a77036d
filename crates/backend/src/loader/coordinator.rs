//! The host's side of the coordinator a module receives in `mount`.

use std::sync::{Arc, Mutex};

use abi_stable::std_types::{RErr, ROk, RResult, RStr, RString};
use toolhost_core::abi::{FfiCoordinator, FfiToolBox};

use crate::context::log_line;
use crate::events::EventBus;

/// Collects a module's registrations during `mount`, and afterwards carries
/// its logs and events into the host.
#[derive(Clone)]
pub struct HostCoordinator {
    module: Arc<str>,
    registered: Arc<Mutex<Option<Vec<FfiToolBox>>>>,
    events: Arc<EventBus>,
}

impl HostCoordinator {
    /// A coordinator for the module `module`, open for registration.
    pub fn new(module: &str, events: Arc<EventBus>) -> Self {
        HostCoordinator {
            module: Arc::from(module),
            registered: Arc::new(Mutex::new(Some(Vec::new()))),
            events,
        }
    }

    /// Ends registration and returns the tools registered so far.
    pub fn close(&self) -> Vec<FfiToolBox> {
        self.registered
            .lock()
            .ok()
            .and_then(|mut r| r.take())
            .unwrap_or_default()
    }
}

impl FfiCoordinator for HostCoordinator {
    fn register_tool(&self, tool: FfiToolBox) -> RResult<(), RString> {
        match self.registered.lock() {
            Ok(mut guard) => match guard.as_mut() {
                Some(tools) => {
                    tools.push(tool);
                    ROk(())
                }
                None => RErr(RString::from(
                    "tools can only be registered during mount; this module tried after mount returned",
                )),
            },
            Err(_) => RErr(RString::from("the host's registration lock is poisoned")),
        }
    }

    fn contribute_events(&self, names_json: RStr<'_>) {
        match serde_json::from_str::<Vec<String>>(names_json.as_str()) {
            Ok(names) => self.events.contribute(names),
            Err(e) => tracing::warn!(module = %self.module, "ignored malformed event names: {e}"),
        }
    }

    fn emit(&self, event: RStr<'_>, payload_json: RStr<'_>) {
        let payload = serde_json::from_str(payload_json.as_str())
            .unwrap_or_else(|_| serde_json::Value::String(payload_json.as_str().to_string()));
        if event.as_str() == crate::events::MODULE_REPORT {
            self.events.record_report(&self.module, &payload);
        }
        self.events.emit(event.as_str(), &payload);
    }

    fn log(&self, level: u8, message: RStr<'_>) {
        log_line(&self.module, None, level, message.as_str());
    }

    fn state(&self, request: RStr<'_>) -> RString {
        RString::from(toolhost_plan::grants::answer(&self.module, request.as_str()))
    }
}
