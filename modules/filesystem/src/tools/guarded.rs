//! The read-before-write check shared by write_file and edit_file.

use rustix::fs::Stat;
use toolhost_core::{Status, ToolError};

use crate::guard::Stale;
use crate::policy::WriteTarget;
use crate::state::Shared;

/// Refuses replacing `target` (now in state `stat`) unless it was read in
/// this process in that very state.
pub fn require_read(
    state: &Shared,
    session: Option<&str>,
    target: &WriteTarget,
    stat: &Stat,
) -> Result<(), ToolError> {
    if !state.config.require_read_before_write {
        return Ok(());
    }
    let content = || crate::snapshot::read(target, stat);
    match state.reads.check(session, &target.key, stat, content) {
        Ok(()) => Ok(()),
        Err(Stale::NotRead) => Err(ToolError::with_status(
            Status::PolicyDenied,
            "read_before_write",
            format!(
                "{} already exists and has not been read in this session; call read_file on it first, then retry this change",
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
