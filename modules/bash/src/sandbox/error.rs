//! What can go wrong building the sandbox, at mount (a configuration error)
//! or before one call (a resource the call needs). The probe branches on the
//! kind to drop the layer at fault; the messages are the user's.

use std::io;
use std::path::PathBuf;

use crate::process::reaper::{MAX_HIDDEN, MAX_READ_ONLY};

/// A sandbox that cannot be built as asked.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// A `writable_paths` entry is missing or not a folder.
    #[error("bash: writable_paths entry {0} is not an existing folder")]
    NotAFolder(PathBuf),
    /// A path the sandbox must name holds a NUL byte.
    #[error("bash: {what} {path} contains a NUL byte")]
    Nul {
        /// Which path: "hidden_paths entry", "the plan's path".
        what: &'static str,
        /// The path.
        path: PathBuf,
    },
    /// More hidden paths than the reaper takes.
    #[error("bash: at most {MAX_HIDDEN} hidden_paths may exist")]
    TooManyHidden,
    /// More control-plane files in a command's reach than the reaper binds
    /// read-only.
    #[error(
        "bash: more than {MAX_READ_ONLY} of toolhost's control-plane files (plan, hooks, modules, audit log) \
         lie in the working folder or a writable path; move some out of the workspace"
    )]
    TooManyReadOnly,
    /// The seccomp filter could not be compiled.
    #[error("{0}")]
    Seccomp(#[from] super::seccomp::SeccompError),
    /// The call's private temp folder could not be made.
    #[error("cannot create the private temp folder {path}: {source}")]
    TempFolder {
        /// The folder.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The call's Landlock ruleset could not be built.
    #[error("building the Landlock rules: {0}")]
    Landlock(#[from] landlock::RulesetError),
    /// Landlock was there at mount and is not now.
    #[error("Landlock disappeared since the mount")]
    LandlockGone,
    /// The call's pids cgroup could not be made.
    #[error(transparent)]
    Cgroup(#[from] CgroupError),
}

/// Why no pids cgroup can be made for a command.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    /// This process's cgroups could not be read.
    #[error("reading /proc/self/cgroup: {0}")]
    Own(io::Error),
    /// No pids controller (v1 hierarchy, or v2 delegated) for this process.
    #[error("no pids cgroup controller is mounted for this process")]
    NoController,
    /// A file of the cgroup could not be made, written or opened.
    #[error("cannot {what} {}: {source}", path.display())]
    Io {
        /// "create", "write", "open cgroup.procs in".
        what: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}
