//! Why an isolated module's worker could not be started, as a kind.
//!
//! The loader wraps it in [`crate::loader::ModuleError`]; the restart path
//! turns it into a `module_crashed` answer. Each variant knows whether it
//! already names the module (the worker's own report does, because the
//! worker prefixes its open and mount errors), so no caller has to look at
//! the message to decide whether to prefix it.

use crate::loader::error::ModuleError;

use super::frame::ReadError;

/// One failed start of a worker: spawn, handshake (open, manifest, mount),
/// or the worker ending before it mounted.
#[derive(Debug, thiserror::Error)]
pub enum SupervisorError {
    /// The executable to re-run as the worker could not be found.
    #[error("module '{label}': cannot find the toolhost executable to run its worker: {error}")]
    Program {
        /// The plan entry's label.
        label: String,
        /// What `current_exe` said.
        error: std::io::Error,
    },
    /// The worker process could not be spawned.
    #[error("module '{label}': cannot start its worker process: {error}")]
    Spawn {
        /// The plan entry's label.
        label: String,
        /// What the spawn said.
        error: std::io::Error,
    },
    /// The spawned worker has no stdin or stdout pipe.
    #[error("module '{label}': its worker has no pipes")]
    Pipes {
        /// The plan entry's label.
        label: String,
    },
    /// A thread the start needs (its watchdog, or the reader that stays
    /// with the worker) could not be started.
    #[error("module '{label}': cannot {what}: {error}")]
    Thread {
        /// The plan entry's label.
        label: String,
        /// Which thread, as a verb phrase ("watch its worker's start").
        what: &'static str,
        /// What the spawn said.
        error: std::io::Error,
    },
    /// Open and mount did not finish within the start limit; the worker
    /// was killed.
    #[error(
        "module '{label}': its worker did not finish opening and mounting the library within \
         {limit_ms} ms, so the host killed it"
    )]
    TimedOut {
        /// The plan entry's label.
        label: String,
        /// The limit, in milliseconds.
        limit_ms: u128,
    },
    /// The worker ended before it mounted.
    #[error("module '{label}': its worker process {why} before mounting")]
    Exited {
        /// The plan entry's label.
        label: String,
        /// How it ended ("exited with status 3", "was killed by SIGSEGV").
        why: String,
    },
    /// Writing to the worker failed.
    #[error("module '{label}': cannot talk to its worker: {error}")]
    Talk {
        /// The plan entry's label.
        label: String,
        /// The write error.
        error: std::io::Error,
    },
    /// The worker broke the frame protocol.
    #[error("module '{label}': its worker {error}")]
    Protocol {
        /// The plan entry's label.
        label: String,
        /// What was wrong with what it sent.
        error: ReadError,
    },
    /// The worker's manifest frame is not a manifest.
    #[error("module '{label}': its worker sent a malformed manifest: {error}")]
    Manifest {
        /// The plan entry's label.
        label: String,
        /// The JSON error.
        error: serde_json::Error,
    },
    /// A restarted worker's library declared another module name than at
    /// mount (a library may write any frame, so this is checked).
    #[error(
        "module '{label}': its restarted worker named the module '{named}', not '{expected}' as at mount"
    )]
    Renamed {
        /// The plan entry's label.
        label: String,
        /// The name it gave now.
        named: String,
        /// The name checked at mount.
        expected: String,
    },
    /// The worker reported that open or mount failed; its message already
    /// names the module.
    #[error("{0}")]
    Worker(String),
    /// The host refused the manifest against the plan, or could not build
    /// the mount envelope; the message names the module.
    #[error(transparent)]
    Refused(Box<ModuleError>),
}

/// Why a handshake step failed, before the entry's label is attached
/// (the handshake runs in a closure that does not carry it).
#[derive(Debug)]
pub(super) enum Step {
    /// The worker's stdout ended.
    Eof,
    /// Writing failed.
    Talk(std::io::Error),
    /// A frame could not be read.
    Protocol(ReadError),
    /// The manifest did not parse.
    Manifest(serde_json::Error),
    /// The restarted worker renamed the module.
    Renamed { named: String, expected: String },
    /// The worker's own error frame.
    Worker(String),
    /// The plan check or the envelope failed.
    Refused(ModuleError),
}

impl Step {
    /// The start error for the entry `label`; `why` says how the worker
    /// ended, asked only when its stdout ended first.
    pub(super) fn into_error(self, label: &str, why: impl FnOnce() -> String) -> SupervisorError {
        let label = label.to_string();
        match self {
            Step::Eof => SupervisorError::Exited { label, why: why() },
            Step::Talk(error) => SupervisorError::Talk { label, error },
            Step::Protocol(error) => SupervisorError::Protocol { label, error },
            Step::Manifest(error) => SupervisorError::Manifest { label, error },
            Step::Renamed { named, expected } => SupervisorError::Renamed {
                label,
                named,
                expected,
            },
            Step::Worker(message) => SupervisorError::Worker(message),
            Step::Refused(error) => SupervisorError::Refused(Box::new(error)),
        }
    }
}
