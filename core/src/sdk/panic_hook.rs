//! Routes panics inside a module into the host's log.
//!
//! A cdylib has its own copy of std and therefore its own panic hook, which
//! by default prints a backtrace to stderr beside the host's log. The SDK
//! replaces it (in the module's copy only) with one line through the
//! coordinator; the call's result carries the message anyway.

use std::cell::{Cell, RefCell};
use std::sync::OnceLock;

use super::context::Level;
use super::coordinator::Coordinator;

static HOOK_TARGET: OnceLock<Coordinator> = OnceLock::new();

thread_local! {
    /// Whether this thread is running a call's code under the adapter.
    static IN_CALL: Cell<bool> = const { Cell::new(false) };
    /// A panic line held back for the adapter, which logs it through the
    /// call's context so that it carries the call id.
    static PENDING: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Marks the current thread as running a call until dropped: a panic on it
/// is held for [`take_pending`] instead of being logged without a call id.
pub(crate) struct CallScope(());

impl CallScope {
    pub(crate) fn enter() -> CallScope {
        IN_CALL.with(|c| c.set(true));
        CallScope(())
    }
}

impl Drop for CallScope {
    fn drop(&mut self) {
        IN_CALL.with(|c| c.set(false));
        // A panic the tool caught itself was never handed to the adapter:
        // log it as the hook would have, without losing it.
        if let (Some(line), Some(coordinator)) = (take_pending(), HOOK_TARGET.get()) {
            coordinator.log(Level::Warn, line);
        }
    }
}

/// The panic line the hook held back on this thread, if any.
pub(crate) fn take_pending() -> Option<String> {
    PENDING.with(|p| p.borrow_mut().take())
}

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
        let line = format!("panic{location}: {message}");
        if IN_CALL.with(Cell::get) {
            PENDING.with(|p| *p.borrow_mut() = Some(line));
        } else if let Some(coordinator) = HOOK_TARGET.get() {
            coordinator.log(Level::Warn, line);
        }
    }));
}
