//! Child processes the host starts, and how it makes sure none outlives
//! what it was started for.
//!
//! Three kinds of children use this crate: an isolated module's worker, a
//! stdio MCP server, and a plan's hooks. What each guarantees:
//! - [`spawn`]: every child is forked from one long-lived thread, so a
//!   parent-death signal ([`death`]) fires when the host dies, not when
//!   the (possibly short-lived) thread that asked for the child ends.
//! - [`Process`]: a child's pid is signalled only while it is unreaped, so
//!   a kill can never reach an unrelated process that reused the pid.
//! - [`reaper`]: a small subreaper the server or hook runs under; when the
//!   command ends, is stopped, or the host dies, it kills every process
//!   the command started, including those that left its process group or
//!   session (`setsid`, a daemonising double fork), and ends the way the
//!   command did.
//! - [`Restarts`]: the live process of a supervised source, restarted on
//!   demand after a backoff, given up on after repeated crashes.
//! - [`describe`]: how a process ended, in words and as JSON details.
//!
//! What it does not catch: a descendant adopted by another subreaper below
//! the reaper, or one that escapes into another PID namespace.

pub mod death;
mod exit;
mod ledger;
mod process;
pub mod program;
pub mod reaper;
mod restart;
mod spawn;
mod tree;

pub use exit::{describe, signal_name, Ended};
pub use ledger::{Ledger, MAX_CRASHES, WINDOW};
pub use process::Process;
pub use restart::{Restarts, Unavailable};
pub use spawn::spawn;
pub use tree::children_of;
