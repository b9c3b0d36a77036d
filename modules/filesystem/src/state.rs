//! What every tool of one mount shares.

use std::sync::Arc;

use crate::config::Config;
use crate::guard::{FileLocks, ReadTracker};
use crate::policy::Policy;

/// The policy, limits, guard and locks of one mount.
pub struct Shared {
    /// The path policy.
    pub policy: Policy,
    /// Limits and switches.
    pub config: Config,
    /// Files read in this process.
    pub reads: ReadTracker,
    /// Per-file writer locks.
    pub locks: FileLocks,
    /// Markers of temp files being written (for the cleanup after a crash).
    pub pending: crate::pending::Pending,
    /// What undo_edit restores, per session.
    pub history: crate::history::History,
}

/// Cheap to clone into each tool.
pub type State = Arc<Shared>;
