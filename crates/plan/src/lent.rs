//! The state a host lends a call (see `toolhost_core::state`), as the
//! host's code sees it: apart from the context that answers a tool's
//! requests and the grants that outlive the call, which both use it.

/// A state store lent to one call (see `toolhost_core::state`): the host
/// has fixed the owner and mount, and checked the request's bounds.
/// Blocking: the tool's `execute` runs on a blocking thread.
pub trait LentState: Send + Sync {
    /// Performs one operation (`get`, `put`, `delete`).
    fn perform(&self, request: &toolhost_core::state::Request) -> toolhost_core::state::Answer;

    /// The module mount the state is scoped to: a grant of it is usable by
    /// that mount's coordinator only.
    fn scope(&self) -> &str;
}

/// Performs `request` on `lent` for a module's call into the host: a panic
/// in the store would unwind into the module's frames and abort the
/// process, so it is answered `unavailable` instead.
pub fn perform_guarded(
    lent: &dyn LentState,
    request: &toolhost_core::state::Request,
) -> toolhost_core::state::Answer {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| lent.perform(request))).unwrap_or_else(|_| {
        toolhost_core::state::Answer::failed("unavailable", "the host's state store panicked")
    })
}
