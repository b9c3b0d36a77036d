//! Writing results to stdout, where a failed write is an error.
//!
//! Every command exists to deliver what it prints: when stdout is closed,
//! full (`/dev/full`) or a pipe nobody reads, the caller must learn that
//! the output was lost, so the process says so on stderr and exits 2 (the
//! environment, not the tool, failed) instead of reporting success.
//! `call` and `batch` say so at once ([`lost`]); the other commands print
//! through [`print_line`], which stops at the first failure and has
//! [`finish`] turn it into the exit code.
//!
//! A descriptor 0–2 that was closed when the process started is opened on
//! `/dev/null` before anything else runs (the binary's start-up hook, which
//! reports it through [`standard_fds_were_closed`]), so no file the host
//! opens later can take its number. Results are never written to such a
//! stdout: that is the same loss as a full disk.

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, PoisonError};

use super::EXIT_USAGE;

/// Bit `n` set: descriptor `n` was closed at start (and is `/dev/null` now).
static CLOSED_AT_START: AtomicU8 = AtomicU8::new(0);

/// The first failed write of [`print_line`], if any.
static FAILED: Mutex<Option<String>> = Mutex::new(None);

/// Records which standard descriptors (bit `n` for descriptor `n`) were
/// closed when the process started. Called by the binary before `main`.
pub fn standard_fds_were_closed(mask: u8) {
    CLOSED_AT_START.store(mask & 0b111, Ordering::SeqCst);
}

/// Whether stdout was closed when the process started.
pub(crate) fn stdout_was_closed() -> bool {
    CLOSED_AT_START.load(Ordering::SeqCst) & 0b010 != 0
}

/// Writes `text` and a newline to stdout and flushes it.
pub(crate) fn write_line(text: &str) -> std::io::Result<()> {
    if stdout_was_closed() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::BrokenPipe,
            "stdout was closed when toolhost started",
        ));
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")?;
    out.flush()
}

/// Prints a line of a command's output; after a failed write nothing more
/// is written, and [`finish`] reports the failure.
pub(crate) fn print_line(text: &str) {
    let mut failed = FAILED.lock().unwrap_or_else(PoisonError::into_inner);
    if failed.is_some() {
        return;
    }
    if let Err(e) = write_line(text) {
        *failed = Some(e.to_string());
    }
}

/// The exit code of a command whose output went through [`print_line`]:
/// `code` if all of it was written, else 2 with the reason on stderr.
pub fn finish(code: ExitCode) -> ExitCode {
    let failed = FAILED.lock().unwrap_or_else(PoisonError::into_inner).take();
    match failed {
        None => code,
        Some(error) => {
            eprintln!(
                "error: cannot write the output to stdout: {error}; the output is incomplete \
                 (is stdout closed, full, or a pipe whose reader has gone?)"
            );
            ExitCode::from(EXIT_USAGE)
        }
    }
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
