//! The parent-death signal (`PR_SET_PDEATHSIG`), from either side.
//!
//! The kernel sends it when the *thread* that forked the child ends, which
//! is why every child is forked by [`crate::spawn`]'s long-lived thread.

use std::os::unix::process::CommandExt;
use std::process::Command;

use nix::sys::signal::Signal;
use nix::unistd::getppid;

/// Arms `signal` for the child `command` starts, between fork and exec, so
/// the child is signalled even if the host dies before the child's own
/// code runs.
pub fn on_parent_death(command: &mut Command, signal: Signal) {
    // SAFETY: prctl is async-signal-safe and touches no memory of the
    // parent; it runs in the child between fork and exec.
    unsafe {
        command.pre_exec(move || nix::sys::prctl::set_pdeathsig(signal).map_err(std::io::Error::from));
    }
}

/// Why a child could not tie its life to its parent's.
#[derive(Debug, thiserror::Error)]
pub enum ArmError {
    /// `prctl` refused.
    #[error("cannot set the parent-death signal: {0}")]
    Prctl(nix::errno::Errno),
    /// The parent died before the signal was armed: the process was
    /// re-parented and should exit now.
    #[error("the parent process {0} is gone")]
    Orphaned(u32),
}

/// Called by a helper process on itself (a worker, the reaper): arms
/// `signal` for when its parent dies, then checks that `parent` (the pid
/// the host passed) is still its parent, since the host may have died
/// before the signal was armed.
pub fn arm(parent: u32, signal: Signal) -> Result<(), ArmError> {
    nix::sys::prctl::set_pdeathsig(signal).map_err(ArmError::Prctl)?;
    if u32::try_from(getppid().as_raw()).ok() != Some(parent) {
        return Err(ArmError::Orphaned(parent));
    }
    Ok(())
}
