//! A stdio server's stderr, into the host's log: one record per line.
//!
//! The server's stderr is piped rather than shared with the host's, so
//! that what it writes cannot pose as the host's own log records (a
//! newline starts no new record) nor reach the terminal as escape
//! sequences: each line is redacted, escaped and logged at `warn` (shown
//! by default, as the server's own stderr was) under the server's label,
//! at most [`MAX_LINES_PER_SECOND`] a second.

use std::io::{BufRead, BufReader, Read};
use std::process::ChildStderr;

/// The longest line logged whole; the rest of a longer one is dropped.
const MAX_LINE_BYTES: u64 = 16 * 1024;

/// Lines logged in one second, at most; the rest are counted, and the
/// count is logged when the next second's first line comes (a server
/// writing to stderr in a loop cannot flood the host's log).
const MAX_LINES_PER_SECOND: u64 = 200;

/// Starts a thread that logs `stderr` line by line until it closes.
pub(super) fn forward(label: String, stderr: ChildStderr) -> std::io::Result<Forwarder> {
    std::thread::Builder::new()
        .name("toolhost-mcp-stderr".into())
        .spawn(move || {
            let mut reader = BufReader::new(stderr);
            let mut line = Vec::new();
            let mut second = std::time::Instant::now();
            let (mut logged, mut dropped) = (0u64, 0u64);
            loop {
                line.clear();
                match reader.by_ref().take(MAX_LINE_BYTES).read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => {
                        if dropped > 0 {
                            tracing::warn!(target: "toolhost::mcp", server = %label, "dropped {dropped} lines of the server's stderr past {MAX_LINES_PER_SECOND} a second");
                        }
                        return;
                    }
                    Ok(_) => {}
                }
                let cut = line.last() != Some(&b'\n');
                if cut && reader.skip_until(b'\n').is_err() {
                    return;
                }
                if second.elapsed() >= std::time::Duration::from_secs(1) {
                    if dropped > 0 {
                        tracing::warn!(target: "toolhost::mcp", server = %label, "dropped {dropped} lines of the server's stderr past {MAX_LINES_PER_SECOND} a second");
                    }
                    second = std::time::Instant::now();
                    (logged, dropped) = (0, 0);
                }
                if logged >= MAX_LINES_PER_SECOND {
                    dropped += 1;
                    continue;
                }
                logged += 1;
                let text = String::from_utf8_lossy(&line);
                let text = text.trim_end_matches(['\n', '\r']);
                let message = crate::governance::redact::log_message(text);
                let cut = if cut { " [line cut]" } else { "" };
                tracing::warn!(target: "toolhost::mcp", server = %label, "{message}{cut}");
            }
        })
        .map(Forwarder)
}

/// The thread logging a server's stderr.
pub(super) struct Forwarder(std::thread::JoinHandle<()>);

impl Forwarder {
    /// Waits (up to `limit`) until everything the server wrote is logged:
    /// when it failed to start, its last words explain why, and the host
    /// may be about to exit.
    pub(super) fn drain(self, limit: std::time::Duration) {
        let end = std::time::Instant::now() + limit;
        while !self.0.is_finished() && std::time::Instant::now() < end {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}
