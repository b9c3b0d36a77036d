//! What the validator and its worker processes say to each other.
//!
//! The parent writes a [`Job`] as JSON to a file and runs
//! `xtask __validate-worker <job file>`; the worker appends one [`Event`]
//! per line to the job's report file (never stdout, which the module under
//! test may write to), flushing each line, so a worker that aborts halfway
//! still leaves behind what it finished and what it had begun.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::check::CheckResult;

/// Which group of checks a worker runs.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case", tag = "group")]
pub enum Group {
    /// Open the library: ABI and manifest checks.
    Load,
    /// Mount, bad config, cleanup, remount, and mount in the real host.
    Mount,
    /// The static checks on every tool's spec.
    Spec,
    /// One behaviour check on one tool.
    Behaviour {
        /// The check's name (one of `names::BEHAVIOUR`).
        check: String,
        /// The tool's position in registration order.
        index: usize,
        /// The tool's name, for messages.
        tool: String,
    },
}

/// Everything a worker needs.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Job {
    /// The library under test.
    pub library: PathBuf,
    /// The config handed to `mount`.
    pub config: Value,
    /// The checks to run.
    pub group: Group,
    /// The working folder for calls (a fresh, empty folder).
    pub work_dir: PathBuf,
    /// Where events go, one JSON line each.
    pub report: PathBuf,
    /// Deadline of an ordinary behaviour call, in milliseconds.
    pub call_timeout_ms: u64,
    /// How soon a cancelled call must return, in milliseconds.
    pub cancel_bound_ms: u64,
}

/// One line of a worker's report.
#[derive(Serialize, Deserialize, Clone, Debug)]
#[serde(rename_all = "snake_case", tag = "event")]
pub enum Event {
    /// A check (and the case within it) is starting; if the process dies
    /// before the matching result, this check is the one that killed it.
    Begin {
        /// The check's name.
        check: String,
        /// The tool, when the check is about one.
        #[serde(default)]
        tool: Option<String>,
        /// What is being tried (an input, a step).
        case: String,
    },
    /// A finished check.
    Check {
        /// Its result.
        result: CheckResult,
    },
    /// The module's manifest (from the load group).
    Manifest {
        /// The manifest as the library gave it.
        manifest: Value,
    },
    /// The tools the first mount registered, in order.
    Tools {
        /// Each tool's spec as JSON (a string when it was not JSON).
        specs: Vec<Value>,
    },
}
