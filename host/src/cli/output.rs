//! Writing results to stdout, where a failed write is an error.
//!
//! `call` and `batch` exist to deliver results: when stdout is closed, full
//! (`/dev/full`) or a pipe nobody reads, the caller must learn that the
//! result was lost, so the process says so on stderr and exits non-zero
//! instead of reporting the call's own status. (`list` and `describe` keep
//! ignoring a closed pipe: `toolhost list | head` is normal use.)

use std::io::Write;
use std::process::ExitCode;

use super::EXIT_USAGE;

/// Writes `text` and a newline to stdout and flushes it.
pub(crate) fn write_line(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")?;
    out.flush()
}

/// Says on stderr that a result could not be written, and gives the exit
/// code for it (2: the environment, not the tool, failed).
pub(crate) fn lost(error: &std::io::Error) -> ExitCode {
    eprintln!(
        "error: cannot write the result to stdout: {error}; the call ran, but its result was lost \
         (is stdout closed or full?)"
    );
    ExitCode::from(EXIT_USAGE)
}
