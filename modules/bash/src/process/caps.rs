//! Dropping every capability before the shell starts.
//!
//! The sandbox's walls hold for uid 0 only if uid 0 holds no capability:
//! with `CAP_SYS_ADMIN`, `CAP_DAC_OVERRIDE` or `CAP_SYS_RAWIO` root could
//! step around them. An `execve` by uid 0 refills the permitted set from
//! the *bounding* set, so the bounding set is emptied first, then the
//! ambient, effective, permitted and inheritable sets. Run by the reaper
//! (a process of its own, never the host) after its privileged setup, so
//! the shell and everything it starts inherit nothing.

use rustix::thread::{
    clear_ambient_capability_set, remove_capability_from_bounding_set, set_capabilities, CapabilitySet,
    CapabilitySets,
};

/// Drops every capability of the calling thread, bounding set included.
/// Returns whether all of it held (a capability this kernel does not know
/// is skipped).
pub fn drop_all() -> bool {
    for cap in CapabilitySet::all().iter() {
        match remove_capability_from_bounding_set(cap) {
            Ok(()) => {}
            // Newer than this kernel: it cannot be held either.
            Err(rustix::io::Errno::INVAL) => {}
            Err(_) => return false,
        }
    }
    if clear_ambient_capability_set().is_err() {
        return false;
    }
    let none = CapabilitySets {
        effective: CapabilitySet::empty(),
        permitted: CapabilitySet::empty(),
        inheritable: CapabilitySet::empty(),
    };
    set_capabilities(None, none).is_ok()
}
