//! The program re-executed for helper processes (an isolated module's
//! worker, the [`crate::reaper`]): the current executable, unless a program
//! that embeds the host library names the `toolhost` binary instead (its
//! own executable has no helper subcommands).

use std::path::PathBuf;
use std::sync::OnceLock;

static PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// Names the program to re-execute for helpers; only the first call counts.
pub fn set(path: PathBuf) {
    let _ = PROGRAM.set(path);
}

/// The program to re-execute for helpers.
pub fn get() -> std::io::Result<PathBuf> {
    match PROGRAM.get() {
        Some(path) => Ok(path.clone()),
        None => std::env::current_exe(),
    }
}
