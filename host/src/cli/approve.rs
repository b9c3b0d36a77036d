//! Approval on the command line: `--yes`, `--approve TOOL`, and a prompt on
//! the terminal when stdin is one.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::{Arc, Mutex};

use crate::pipeline::{ApprovalRequest, Approver, PreApproved};

/// Flags shared by `call` and `batch`.
#[derive(clap::Args, Debug, Default)]
pub(super) struct ApprovalArgs {
    /// Approve every call the policy says to ask about.
    #[arg(long)]
    yes: bool,
    /// Approve calls of this tool (repeatable).
    #[arg(long, value_name = "TOOL")]
    approve: Vec<String>,
}

impl ApprovalArgs {
    pub(super) fn pre_approved(&self) -> PreApproved {
        PreApproved {
            all: self.yes,
            tools: self.approve.iter().cloned().collect(),
        }
    }
}

/// A prompt on the terminal, when stdin is one (and free); otherwise none,
/// and `ask` answers `approval_required`.
pub(super) fn terminal_approver(stdin_free: bool) -> Option<Approver> {
    if !stdin_free || !std::io::stdin().is_terminal() {
        return None;
    }
    // One prompt at a time, even when a batch asks about several calls.
    let lock = Arc::new(Mutex::new(()));
    Some(Arc::new(move |request: ApprovalRequest| {
        let lock = lock.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let _one_at_a_time = lock.lock().unwrap_or_else(|e| e.into_inner());
                let input = serde_json::to_string_pretty(&request.input).unwrap_or_default();
                let mut err = std::io::stderr().lock();
                let _ = write!(
                    err,
                    "\n{} wants to run with:\n{input}\n(approval needed: {})\nAllow? [y/N] ",
                    request.tool, request.reason
                );
                let _ = err.flush();
                let mut line = String::new();
                match std::io::stdin().lock().read_line(&mut line) {
                    Ok(_) => matches!(line.trim().to_lowercase().as_str(), "y" | "yes"),
                    Err(_) => false,
                }
            })
            .await
            .unwrap_or(false)
        })
    }))
}
