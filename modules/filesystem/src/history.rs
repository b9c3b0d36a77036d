//! The per-session undo history behind undo_edit: the content a file had
//! before each write_file / edit_file of a session, newest last.
//!
//! Bounded three ways so an agent cannot grow the host without limit: at
//! most [`MAX_ENTRIES`] entries and [`MAX_BYTES`] of saved content per
//! session (the oldest entries go first), and at most [`MAX_SESSIONS`]
//! sessions (the one unused longest goes first). A content larger than
//! [`MAX_BYTES`] is not saved, and the older entries of that file are
//! dropped with it, so an undo never skips over a write it cannot restore.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::guard::Seen;

/// Entries kept per session.
pub const MAX_ENTRIES: usize = 100;
/// Bytes of saved content kept per session.
pub const MAX_BYTES: usize = 32 * 1024 * 1024;
/// Sessions with a history.
pub const MAX_SESSIONS: usize = 64;

/// One undoable change.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The file's real path.
    pub key: PathBuf,
    /// Its content before the change; `None` when the change created it.
    pub before: Option<Vec<u8>>,
    /// The file as the change left it: an undo refuses a file changed since.
    pub after: Seen,
}

impl Entry {
    fn weight(&self) -> usize {
        self.before.as_ref().map_or(0, Vec::len)
    }
}

#[derive(Default)]
struct Session {
    entries: VecDeque<Entry>,
    bytes: usize,
    used: u64,
}

impl Session {
    fn drop_file(&mut self, key: &Path) {
        self.entries.retain(|e| e.key != key);
        self.bytes = self.entries.iter().map(Entry::weight).sum();
    }
}

#[derive(Default)]
struct Inner {
    sessions: HashMap<String, Session>,
    clock: u64,
}

/// Every session's undo history in one mount.
#[derive(Default)]
pub struct History {
    inner: Mutex<Inner>,
}

/// What [`History::record`] did with a change.
#[derive(Debug, PartialEq, Eq)]
pub enum Recorded {
    /// Saved: an undo can restore it.
    Saved,
    /// Too large to save: the file's history in this session is cleared.
    TooLarge,
}

impl History {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records that `session` changed `key` from `before` (None: created) to
    /// the version `after`.
    pub fn record(
        &self,
        session: Option<&str>,
        key: &Path,
        before: Option<Vec<u8>>,
        after: Seen,
    ) -> Recorded {
        let mut inner = self.lock();
        inner.clock += 1;
        let now = inner.clock;
        let name = session.unwrap_or_default();
        if !inner.sessions.contains_key(name) && inner.sessions.len() >= MAX_SESSIONS {
            let oldest = inner
                .sessions
                .iter()
                .min_by_key(|(_, s)| s.used)
                .map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                inner.sessions.remove(&oldest);
            }
        }
        let history = inner.sessions.entry(name.to_owned()).or_default();
        history.used = now;
        let entry = Entry {
            key: key.to_path_buf(),
            before,
            after,
        };
        if entry.weight() > MAX_BYTES {
            history.drop_file(key);
            return Recorded::TooLarge;
        }
        history.bytes += entry.weight();
        history.entries.push_back(entry);
        while history.entries.len() > MAX_ENTRIES || history.bytes > MAX_BYTES {
            match history.entries.pop_front() {
                Some(old) => history.bytes -= old.weight(),
                None => break,
            }
        }
        Recorded::Saved
    }

    /// The newest entry of `key` in `session`, without removing it.
    pub fn last(&self, session: Option<&str>, key: &Path) -> Option<Entry> {
        let inner = self.lock();
        let history = inner.sessions.get(session.unwrap_or_default())?;
        history.entries.iter().rev().find(|e| e.key == key).cloned()
    }

    /// Removes the newest entry of `key` (after an undo restored it) and
    /// stamps the one before it with the restored file's version, so a
    /// second undo can step further back. Returns how many entries of the
    /// file are left.
    pub fn pop(&self, session: Option<&str>, key: &Path, restored: Option<Seen>) -> usize {
        let mut inner = self.lock();
        inner.clock += 1;
        let now = inner.clock;
        let Some(history) = inner.sessions.get_mut(session.unwrap_or_default()) else {
            return 0;
        };
        history.used = now;
        if let Some(at) = history.entries.iter().rposition(|e| e.key == key) {
            if let Some(old) = history.entries.remove(at) {
                history.bytes -= old.weight();
            }
        }
        let mut left = 0;
        let mut stamped = false;
        for entry in history.entries.iter_mut().rev().filter(|e| e.key == key) {
            left += 1;
            if !stamped {
                stamped = true;
                match restored {
                    Some(seen) => entry.after = seen,
                    // The file is gone (an undone create): nothing older can
                    // be restored over it safely.
                    None => left = 0,
                }
            }
        }
        if restored.is_none() {
            history.drop_file(key);
        }
        left
    }

    /// Forgets `key` in one session (a change to it could not be saved).
    pub fn forget_file_in(&self, session: Option<&str>, key: &Path) {
        if let Some(history) = self.lock().sessions.get_mut(session.unwrap_or_default()) {
            history.drop_file(key);
        }
    }

    /// Forgets `key` in every session (the file was deleted).
    pub fn forget_file(&self, key: &Path) {
        for history in self.lock().sessions.values_mut() {
            history.drop_file(key);
        }
    }

    /// Forgets a session's history (its session ended); returns how many
    /// entries went.
    pub fn forget_session(&self, session: &str) -> usize {
        self.lock()
            .sessions
            .remove(session)
            .map_or(0, |s| s.entries.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat_of(path: &Path) -> Seen {
        let stat = rustix::fs::stat(path).unwrap_or_else(|e| panic!("{e}"));
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{e}"));
        Seen::written(&stat, &bytes)
    }

    #[test]
    fn an_undo_restamps_the_change_before_it() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (a, b, c) = (dir.path().join("a"), dir.path().join("b"), dir.path().join("c"));
        for (path, text) in [(&a, "1"), (&b, "22"), (&c, "333")] {
            std::fs::write(path, text).unwrap_or_else(|e| panic!("{e}"));
        }
        let h = History::default();
        let key = Path::new("/k");
        h.record(None, key, Some(b"v0".to_vec()), stat_of(&a));
        h.record(None, key, Some(b"v1".to_vec()), stat_of(&b));
        assert_eq!(h.pop(None, key, Some(stat_of(&c))), 1);
        let left = h.last(None, key).unwrap_or_else(|| panic!("one entry is left"));
        assert_eq!(
            left.after,
            stat_of(&c),
            "a second undo must accept the restored file"
        );
        assert_eq!(left.before.as_deref(), Some(&b"v0"[..]));
        // An undone create leaves nothing older to restore over the gap.
        h.record(None, key, None, stat_of(&a));
        assert_eq!(h.pop(None, key, None), 0);
        assert!(h.last(None, key).is_none());
    }

    #[test]
    fn bounded_by_entries_bytes_and_sessions() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap_or_else(|e| panic!("{e}"));
        let stat = stat_of(&file);
        let h = History::default();
        for i in 0..MAX_ENTRIES + 5 {
            h.record(Some("a"), &file, Some(vec![i as u8]), stat);
        }
        let count = |h: &History, s: &str| h.lock().sessions.get(s).map_or(0, |s| s.entries.len());
        assert_eq!(count(&h, "a"), MAX_ENTRIES);
        // Bytes: two entries of 20 MiB do not fit in 32 MiB.
        h.record(Some("b"), &file, Some(vec![0; 20 << 20]), stat);
        h.record(Some("b"), &file, Some(vec![1; 20 << 20]), stat);
        assert_eq!(count(&h, "b"), 1);
        assert_eq!(
            h.last(Some("b"), &file).and_then(|e| e.before).map(|b| b[0]),
            Some(1)
        );
        // Too large: not saved, and the file's older entries dropped.
        assert_eq!(
            h.record(Some("b"), &file, Some(vec![0; MAX_BYTES + 1]), stat),
            Recorded::TooLarge
        );
        assert!(h.last(Some("b"), &file).is_none());
        // Sessions: the least recently used one goes.
        for i in 0..MAX_SESSIONS + 3 {
            h.record(Some(&format!("s{i}")), &file, None, stat);
        }
        assert!(h.lock().sessions.len() <= MAX_SESSIONS);
        assert!(
            h.last(Some("a"), &file).is_none(),
            "the oldest session was evicted"
        );
        assert!(h.last(Some(&format!("s{}", MAX_SESSIONS + 2)), &file).is_some());
    }
}
