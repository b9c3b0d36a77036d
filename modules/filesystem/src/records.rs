//! Where a call's read-before-write records and undo history live.
//!
//! A call that the host lends shared state (a call without a session, such
//! as an MCP 2026-07-28 request over HTTP, on a host with
//! `[host] state_url`; see `toolhost_core::state`) keeps them there, owned
//! by its principal, so the principal's next call may be served by any host
//! of a fleet: a file read through one host may be written through another,
//! and an edit made through one undone through another. Every other call
//! keeps them in this process's memory, keyed by its session, as before
//! ([`crate::guard::ReadTracker`], [`crate::history::History`]): a host
//! without a shared store answers `unsupported` at once, so that path costs
//! no round trip.
//!
//! In the shared store, a file's read record is the key `read:<real path>`
//! (the [`Seen`] the guard compares: device, inode, size, mtime, ctime and,
//! for a racy file, the content's SHA-256), and its undo history the key
//! `undo:<real path>` (its entries, newest last, the saved content in
//! base64). The store bounds each value ([`MAX_VALUE_BYTES`]): a history
//! drops its oldest entries to fit, and a change whose saved content alone
//! cannot fit is not undoable (its older entries go with it, as in memory).
//! The hosts must see the files alike (one filesystem, the same device and
//! inode numbers), or a record taken on one host does not match the file
//! on another and the write is refused, asking for a read.

use std::path::Path;

use base64::Engine as _;
use rustix::fs::Stat;
use serde::{Deserialize, Serialize};
use toolhost_core::state::{StateError, MAX_VALUE_BYTES};
use toolhost_core::{Context, Level, ToolError};

use crate::guard::{Seen, Stale};
use crate::history::{Entry, Recorded, MAX_ENTRIES};
use crate::state::Shared;

/// A call's records: in the host's shared state when it lends one, else in
/// memory by session.
pub struct Records<'a, 'c> {
    state: &'a Shared,
    ctx: &'a Context<'c>,
}

/// One undo entry as stored.
#[derive(Serialize, Deserialize)]
struct Stored {
    /// The content before the change, base64; `None`: the change created it.
    before: Option<String>,
    after: Seen,
}

#[derive(Serialize, Deserialize, Default)]
struct StoredHistory {
    entries: Vec<Stored>,
}

fn read_key(path: &Path) -> String {
    format!("read:{}", path.display())
}

fn undo_key(path: &Path) -> String {
    format!("undo:{}", path.display())
}

fn unavailable(message: String) -> ToolError {
    ToolError::new(
        "state_unavailable",
        format!("the host's shared state store cannot be reached ({message}); retry in a moment"),
    )
    .retryable(true)
}

impl<'a, 'c> Records<'a, 'c> {
    /// The records of the call `ctx`.
    pub fn new(state: &'a Shared, ctx: &'a Context<'c>) -> Records<'a, 'c> {
        Records { state, ctx }
    }

    fn session(&self) -> Option<&str> {
        self.ctx.session_id()
    }

    fn warn(&self, what: &str, e: &StateError) {
        self.ctx.log(
            Level::Warn,
            format!("filesystem: cannot {what} in the shared state: {e}"),
        );
    }

    /// Records that the call read `path`, open as `fd`, in state `stat`.
    pub fn record_read(&self, path: &Path, stat: &Stat, fd: impl std::os::fd::AsFd) {
        self.record(path, Seen::read(stat, fd));
    }

    /// Records that the call holds `path` as `seen`. A shared store that
    /// cannot be reached loses the record (logged): the next write of the
    /// file then asks for a read, which is safe.
    pub fn record(&self, path: &Path, seen: Seen) {
        let value = serde_json::to_string(&seen).unwrap_or_default();
        match self.ctx.state_put(&read_key(path), &value, None) {
            Ok(()) => {}
            Err(StateError::Unsupported) => self.state.reads.record(self.session(), path, seen),
            Err(e) => self.warn("record a read", &e),
        }
    }

    /// Checks that the call's owner read `path`, now in state `stat`, in
    /// that state.
    pub fn check(
        &self,
        path: &Path,
        stat: &Stat,
        content: impl FnOnce() -> Result<Vec<u8>, ToolError>,
    ) -> Result<(), Stale> {
        match self.ctx.state_get(&read_key(path)) {
            Err(StateError::Unsupported) => self.state.reads.check(self.session(), path, stat, content),
            Err(e) => Err(Stale::Unreadable(unavailable(e.to_string()))),
            Ok(None) => Err(Stale::NotRead),
            Ok(Some(text)) => match serde_json::from_str::<Seen>(&text) {
                Ok(seen) => seen.still(stat, content),
                // A record this version cannot read counts as no record.
                Err(_) => Err(Stale::NotRead),
            },
        }
    }

    /// The stored history of `path`: `Err(None)` when the history is in
    /// memory, `Err(Some(e))` when the store failed.
    fn load(&self, path: &Path) -> Result<StoredHistory, Option<ToolError>> {
        match self.ctx.state_get(&undo_key(path)) {
            Err(StateError::Unsupported) => Err(None),
            Err(e) => Err(Some(unavailable(e.to_string()))),
            Ok(None) => Ok(StoredHistory::default()),
            Ok(Some(text)) => Ok(serde_json::from_str(&text).unwrap_or_default()),
        }
    }

    /// Writes `history` back (deletes the key when it is empty), dropping
    /// its oldest entries until it fits the store's bound.
    fn save(&self, path: &Path, mut history: StoredHistory) -> Result<(), ToolError> {
        while history.entries.len() > MAX_ENTRIES {
            history.entries.remove(0);
        }
        loop {
            if history.entries.is_empty() {
                return self
                    .ctx
                    .state_delete(&undo_key(path))
                    .map_err(|e| unavailable(e.to_string()));
            }
            let text = serde_json::to_string(&history).unwrap_or_default();
            if text.len() <= MAX_VALUE_BYTES {
                return self
                    .ctx
                    .state_put(&undo_key(path), &text, None)
                    .map_err(|e| unavailable(e.to_string()));
            }
            history.entries.remove(0);
        }
    }

    /// Records that the call changed `path` from `before` (None: created)
    /// to `after`.
    pub fn history_record(&self, path: &Path, before: Option<Vec<u8>>, after: Seen) -> Recorded {
        let mut history = match self.load(path) {
            Err(None) => return self.state.history.record(self.session(), path, before, after),
            Err(Some(e)) => {
                self.ctx.log(Level::Warn, format!("filesystem: {}", e.message()));
                return Recorded::TooLarge;
            }
            Ok(history) => history,
        };
        let before = before.map(|b| base64::engine::general_purpose::STANDARD.encode(b));
        // A saved content that cannot fit the store's bound even alone.
        if before.as_ref().is_some_and(|b| b.len() + 1024 > MAX_VALUE_BYTES) {
            let _ = self.ctx.state_delete(&undo_key(path));
            return Recorded::TooLarge;
        }
        history.entries.push(Stored { before, after });
        match self.save(path, history) {
            Ok(()) => Recorded::Saved,
            Err(e) => {
                self.ctx.log(Level::Warn, format!("filesystem: {}", e.message()));
                Recorded::TooLarge
            }
        }
    }

    /// The newest entry of `path`, without removing it.
    pub fn history_last(&self, path: &Path) -> Result<Option<Entry>, ToolError> {
        let history = match self.load(path) {
            Err(None) => return Ok(self.state.history.last(self.session(), path)),
            Err(Some(e)) => return Err(e),
            Ok(history) => history,
        };
        let Some(newest) = history.entries.last() else {
            return Ok(None);
        };
        let before = match &newest.before {
            None => None,
            Some(b) => Some(base64::engine::general_purpose::STANDARD.decode(b).map_err(|e| {
                ToolError::new(
                    "state_corrupt",
                    format!("a saved undo entry does not decode: {e}"),
                )
            })?),
        };
        Ok(Some(Entry {
            key: path.to_path_buf(),
            before,
            after: newest.after,
        }))
    }

    /// Removes the newest entry of `path` after an undo and stamps the one
    /// before it with the restored version (`None`: the file is gone, and
    /// nothing older may be restored over it). Returns the entries left.
    pub fn history_pop(&self, path: &Path, restored: Option<Seen>) -> Result<usize, ToolError> {
        let mut history = match self.load(path) {
            Err(None) => return Ok(self.state.history.pop(self.session(), path, restored)),
            Err(Some(e)) => return Err(e),
            Ok(history) => history,
        };
        history.entries.pop();
        match (restored, history.entries.last_mut()) {
            (Some(seen), Some(previous)) => previous.after = seen,
            (None, _) => history.entries.clear(),
            (Some(_), None) => {}
        }
        let left = history.entries.len();
        self.save(path, history)?;
        Ok(left)
    }

    /// Forgets `path` in the caller's history (a change to it could not be
    /// saved).
    pub fn history_forget_file_in(&self, path: &Path) {
        match self.ctx.state_delete(&undo_key(path)) {
            Ok(()) => {}
            Err(StateError::Unsupported) => self.state.history.forget_file_in(self.session(), path),
            Err(e) => self.warn("forget an undo history", &e),
        }
    }

    /// Forgets `path` everywhere this host can reach (the file was deleted):
    /// every session's memory, and the caller's shared history. Another
    /// principal's shared history of it stays until it expires; an undo
    /// from it is refused, as the file no longer matches.
    pub fn history_forget_file(&self, path: &Path) {
        self.state.history.forget_file(path);
        match self.ctx.state_delete(&undo_key(path)) {
            Ok(()) | Err(StateError::Unsupported) => {}
            Err(e) => self.warn("forget an undo history", &e),
        }
    }
}
