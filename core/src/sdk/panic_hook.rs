//! Routes panics inside a module into the host's log.
//!
//! A cdylib has its own copy of std and therefore its own panic hook, which
//! by default prints a backtrace to stderr beside the host's log. The SDK
//! replaces it (in the module's copy only) with one line through the
//! coordinator; the call's result carries the message anyway.

use std::sync::OnceLock;

use super::context::Level;
use super::coordinator::Coordinator;

static HOOK_TARGET: OnceLock<Coordinator> = OnceLock::new();

/// Installs the hook on the first mount of this library.
pub(crate) fn install(coordinator: &Coordinator) {
    if HOOK_TARGET.set(coordinator.clone()).is_err() {
        return;
    }
    std::panic::set_hook(Box::new(|info| {
        let message = super::guard::panic_message(info.payload());
        let location = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        if let Some(coordinator) = HOOK_TARGET.get() {
            coordinator.log(Level::Warn, format!("panic{location}: {message}"));
        }
    }));
}
