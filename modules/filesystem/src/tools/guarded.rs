//! What the tools that change a file share: opening it for a change under
//! its per-file lock, finding the file that is there, removing it, and the
//! read-before-write check (write_file and edit_file).

use std::sync::{Arc, Mutex, MutexGuard};

use rustix::fs::{AtFlags, Stat};
use toolhost_core::{Context, Status, ToolError};

use crate::atomic::{self, Existing};
use crate::guard::{hold, Stale};
use crate::policy::WriteTarget;
use crate::state::Shared;

/// A path opened for a change, with the lock that serialises changes to
/// that file within this process (take it with [`Locked::hold`] before
/// looking at the file, keep it until the change is done).
pub struct Locked {
    /// Where the change goes.
    pub target: WriteTarget,
    lock: Arc<Mutex<()>>,
}

impl Locked {
    /// Holds the file's lock for the caller's scope.
    pub fn hold(&self) -> MutexGuard<'_, ()> {
        hold(&self.lock)
    }
}

/// Resolves `file_path` (the `file_path` field) under the write policy and
/// finds its lock; `create_parents` creates missing folders (write_file).
pub fn open_locked(
    state: &Shared,
    file_path: &str,
    ctx: &Context<'_>,
    create_parents: bool,
) -> Result<Locked, ToolError> {
    let target = state
        .policy
        .open_write("file_path", file_path, ctx.working_dir(), create_parents)?;
    let lock = state.locks.of(&target.key);
    Ok(Locked { target, lock })
}

/// The stat of the regular file at `target`; when there is none, the
/// tool's own answer, `missing(display)` (what a missing file means differs
/// per tool).
pub fn existing_file(
    target: &WriteTarget,
    missing: impl FnOnce(&str) -> ToolError,
) -> Result<Stat, ToolError> {
    match atomic::inspect(target)? {
        Existing::File(stat) => Ok(stat),
        Existing::Missing => Err(missing(&target.display)),
    }
}

/// Removes the file's name. Without `AT_REMOVEDIR` a folder swapped in
/// since the inspection is refused (EISDIR); a symlink swapped in is removed
/// as a name, its target untouched. `outcome` ends the error message (what
/// the caller should know was left).
pub fn remove(target: &WriteTarget, outcome: &str) -> Result<(), ToolError> {
    rustix::fs::unlinkat(&target.dir, target.name.as_os_str(), AtFlags::empty()).map_err(|e| {
        ToolError::new(
            "io_error",
            format!("cannot remove {}: {e}{outcome}", target.display),
        )
    })?;
    let _ = rustix::fs::fsync(&target.dir);
    Ok(())
}

/// Refuses replacing `target` (now in state `stat`) unless it was read in
/// this process in that very state.
pub fn require_read(
    state: &Shared,
    ctx: &toolhost_core::Context<'_>,
    target: &WriteTarget,
    stat: &Stat,
) -> Result<(), ToolError> {
    if !state.config.require_read_before_write {
        return Ok(());
    }
    let content = || crate::snapshot::read(target, stat);
    match crate::records::Records::new(state, ctx).check(&target.key, stat, content) {
        Ok(()) => Ok(()),
        Err(Stale::NotRead) => Err(ToolError::with_status(
            Status::PolicyDenied,
            "read_before_write",
            format!(
                "{} already exists and has not been read in this session (or, by a client without a session, by this principal); call read_file on it first, then retry this change",
                target.display
            ),
        )),
        Err(Stale::Unreadable(e)) => Err(e),
        Err(Stale::Unverifiable) => Err(ToolError::with_status(
            Status::PolicyDenied,
            "read_before_write",
            format!(
                "{} changed moments before you read it and is too large to fingerprint, so this change cannot be checked against what you saw; call read_file on it again in a few seconds, then retry",
                target.display
            ),
        )),
        Err(Stale::Changed) => Err(ToolError::with_status(
            Status::PolicyDenied,
            "read_before_write",
            format!(
                "{} changed on disk since you last read it; call read_file on it again, then retry this change against the current content",
                target.display
            ),
        )),
    }
}
