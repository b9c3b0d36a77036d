//! Where finished audit records go: the local JSONL file by default, or a
//! shared store (PostgreSQL, `[host] state_url`) for a fleet.
//!
//! The split exists so the chain stays one thing: the audit log computes each
//! record's link (the SHA-256 of the previous record) and serializes it once,
//! under its own lock; a sink only stores whole lines in the order it is given
//! them and says whether it did. A sink that fails makes the log refuse
//! side-effecting calls, so a sink must never report success for a line it
//! did not store.

use thiserror::Error;

/// Why a sink could not store or read a record.
#[derive(Debug, Error)]
pub enum AuditSinkError {
    /// The local file could not be written, reopened or read.
    #[error("the audit log {path} cannot be written: {source}")]
    Io {
        /// The log's path.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A shared store (PostgreSQL) did not take the record; retrying later
    /// may succeed.
    #[error("the audit store is unreachable: {0}")]
    Unavailable(String),
    /// Nothing was written: the log ends in a torn fragment (a writer was
    /// killed mid-line), and the next line must be the restart record that
    /// names it ([`AuditSink::close_torn`]), never a record glued to it.
    #[error("the audit log ends in a torn line of {} bytes", .0.bytes)]
    TornTail(Torn),
}

/// A fragment a killed writer left at the end of the log: not a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Torn {
    /// SHA-256 (hex) of the fragment's bytes.
    pub sha256: String,
    /// Its length in bytes.
    pub bytes: u64,
}

/// Stores audit records in order. One sink per host process; the chain it
/// holds is this host's (in a fleet each host keeps its own chain, keyed by
/// its host id).
pub trait AuditSink: Send + Sync {
    /// Appends one whole record: its JSON text, without a trailing newline.
    /// `Ok` only once the record is stored (written to the file, or
    /// committed).
    fn append(&self, line: &str) -> Result<(), AuditSinkError>;

    /// Ends the torn fragment `torn` with a newline and appends `line` (the
    /// restart record naming it) in one write, so a torn line is always the
    /// last line of the file or followed by its restart record. `Ok(false)`,
    /// with nothing written, when the log no longer ends in `torn` (it was
    /// rotated meanwhile): the caller appends its record again. Sinks that
    /// store whole records (PostgreSQL rows) never tear and never get here.
    fn close_torn(&self, torn: &Torn, line: &str) -> Result<bool, AuditSinkError> {
        let _ = (torn, line);
        Ok(false)
    }

    /// The last record stored by this host, so a restarted host continues its
    /// chain instead of starting a new one. `None` for an empty log.
    fn last(&self) -> Result<Option<String>, AuditSinkError>;
}
