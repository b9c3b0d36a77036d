//! How a worker or server process ended, in words and as JSON details.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use serde_json::{json, Value};

/// A process's end: a sentence for the error message and details for
/// `error.details`.
#[derive(Debug, Clone)]
pub struct Ended {
    /// "killed by SIGSEGV", "exited with status 0", …
    pub why: String,
    /// `{"signal": "SIGSEGV"}` or `{"exit_code": 0}`.
    pub details: Value,
}

/// Describes `status`; `None` (the status could not be read) is "ended".
pub fn describe(status: Option<ExitStatus>) -> Ended {
    match status {
        Some(status) => {
            match (status.signal(), status.code()) {
                (Some(sig), _) => {
                    let name = signal_name(sig);
                    let hint = match sig {
                    libc::SIGKILL => " (by the host, or by the kernel's out-of-memory killer)",
                    libc::SIGABRT => " (an abort: a panic that could not unwind, a failed allocation, a stack overflow)",
                    libc::SIGSEGV | libc::SIGBUS => " (an invalid memory access)",
                    _ => "",
                };
                    Ended {
                        why: format!("killed by {name}{hint}"),
                        details: json!({ "signal": name }),
                    }
                }
                (None, Some(code)) => Ended {
                    why: format!("exited with status {code}"),
                    details: json!({ "exit_code": code }),
                },
                (None, None) => unknown(),
            }
        }
        None => unknown(),
    }
}

fn unknown() -> Ended {
    Ended {
        why: "ended".into(),
        details: json!({}),
    }
}

/// `SIGSEGV` for 11, … (nix's names); `signal N` for a number with none.
pub fn signal_name(sig: i32) -> String {
    nix::sys::signal::Signal::try_from(sig)
        .map(|signal| signal.as_str().to_string())
        .unwrap_or_else(|_| format!("signal {sig}"))
}
