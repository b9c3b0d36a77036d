//! The read-before-write guard and the per-file locks, both per host process.
//!
//! A model that overwrites a file it never read (or that changed on disk
//! since it read it) destroys work it has not seen; the guard refuses that.
//! The locks serialize writers of one file inside the module, whatever the
//! host schedules, so concurrent edits lose no update.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rustix::fs::Stat;

/// What identifies a version of a file on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    dev: u64,
    ino: u64,
    size: i64,
    mtime: i64,
    mtime_nsec: i64,
}

impl Stamp {
    /// The stamp of a stat.
    pub fn of(stat: &Stat) -> Stamp {
        Stamp {
            dev: stat.st_dev,
            ino: stat.st_ino,
            size: stat.st_size,
            mtime: stat.st_mtime,
            mtime_nsec: stat.st_mtime_nsec as i64,
        }
    }
}

/// Files read, by session (the host's session id: an MCP session, a CLI
/// process) and real path: a file one session read does not let another
/// overwrite it.
#[derive(Default)]
pub struct ReadTracker {
    seen: Mutex<HashMap<(String, PathBuf), Stamp>>,
}

/// Why a write must read first.
pub enum Stale {
    /// Never read in this process.
    NotRead,
    /// Read, but the file changed since.
    Changed,
}

impl ReadTracker {
    /// Records that `session` read `path` in the state `stat`.
    pub fn record(&self, session: Option<&str>, path: &Path, stat: &Stat) {
        let stamp = Stamp::of(stat);
        self.lock().insert(
            (session.unwrap_or_default().to_owned(), path.to_path_buf()),
            stamp,
        );
    }

    /// Checks that `session` read `path`, now in state `stat`, in that state.
    pub fn check(&self, session: Option<&str>, path: &Path, stat: &Stat) -> Result<(), Stale> {
        let key = (session.unwrap_or_default().to_owned(), path.to_path_buf());
        match self.lock().get(&key) {
            None => Err(Stale::NotRead),
            Some(stamp) if *stamp != Stamp::of(stat) => Err(Stale::Changed),
            Some(_) => Ok(()),
        }
    }

    /// Forgets every file `session` read (the session ended); returns how
    /// many records went.
    pub fn forget_session(&self, session: &str) -> usize {
        let mut seen = self.lock();
        let before = seen.len();
        seen.retain(|(owner, _), _| owner != session);
        before - seen.len()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<(String, PathBuf), Stamp>> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One mutex per file path that has been written.
#[derive(Default)]
pub struct FileLocks {
    locks: Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>,
}

impl FileLocks {
    /// The lock of `path` (created on first use).
    pub fn of(&self, path: &Path) -> Arc<Mutex<()>> {
        let mut map = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        map.entry(path.to_path_buf()).or_default().clone()
    }
}

/// Holds a file's lock for a scope.
pub fn hold(lock: &Mutex<()>) -> MutexGuard<'_, ()> {
    lock.lock().unwrap_or_else(PoisonError::into_inner)
}
