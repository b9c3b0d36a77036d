//! The host's side of the per-call context a running tool receives.

use std::sync::Arc;
use std::time::{Duration, Instant};

use abi_stable::std_types::{RStr, RString};
use serde_json::Value;
use toolhost_core::abi::{level, FfiContext, NO_DEADLINE};

use crate::cancel::CancelToken;
use crate::deadline::CallClock;
pub use crate::progress::ProgressSink;

/// Cancel token, deadline and callbacks for one call.
pub struct CallContext {
    /// Set on timeout, client cancel or shutdown.
    pub cancel: CancelToken,
    /// When the host stops waiting, for a call without a clock.
    pub deadline: Option<Instant>,
    /// The call's clock: its deadline, which progress may move (see
    /// [`crate::deadline`]); supersedes `deadline`.
    pub clock: Option<Arc<CallClock>>,
    /// Progress destination, if the caller asked for progress.
    pub progress: Option<ProgressSink>,
    /// Who answers the backend's requests for input, if the caller can.
    pub ask: Option<crate::ask::Asker>,
    /// Module name, for logs.
    pub module: String,
    /// Call id, for logs.
    pub call_id: String,
    /// The state store lent to this call, scoped to its owner and module
    /// mount by the host (`None`: the module keeps its state in memory).
    pub state: Option<Arc<dyn LentState>>,
}

pub use crate::lent::LentState;

/// The answer to one `state` request of a tool: parsed, bounded, performed
/// by `lent` (or `unsupported` without one). Shared by the in-process
/// context and an isolated worker's host side.
pub fn answer_state(lent: Option<&Arc<dyn LentState>>, request: &str) -> String {
    use toolhost_core::state::{check, Answer, Request, UNSUPPORTED_ANSWER};
    let Some(lent) = lent else {
        return UNSUPPORTED_ANSWER.to_string();
    };
    let request: Request = match serde_json::from_str(request) {
        Ok(r) => r,
        Err(e) => return Answer::failed("bad_request", format!("not a state request: {e}")).to_json(),
    };
    if let Err(refused) = check(&request) {
        return refused.to_json();
    }
    match request {
        Request::Grant { ttl_ms } => return crate::grants::issue(lent.clone(), ttl_ms).to_json(),
        Request::Release => {
            return Answer::failed("bad_request", "release a grant through the coordinator").to_json()
        }
        _ => {}
    }
    crate::lent::perform_guarded(lent.as_ref(), &request).to_json()
}

impl FfiContext for CallContext {
    fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    fn wait_cancelled(&self, timeout_ms: u64) -> bool {
        self.cancel.wait_blocking(Duration::from_millis(timeout_ms))
    }

    fn remaining_ms(&self) -> u64 {
        match &self.clock {
            Some(clock) => remaining_ms(clock.deadline().map(|(at, _)| at)),
            None => remaining_ms(self.deadline),
        }
    }

    /// Every report counts as activity (whether or not the caller asked to
    /// hear it), then goes to the caller's sink, if any.
    fn progress(&self, json: RStr<'_>) {
        if let Some(clock) = &self.clock {
            clock.touch();
        }
        if let Some(sink) = &self.progress {
            let value = serde_json::from_str(json.as_str()).unwrap_or(Value::Null);
            // A panic here would unwind into the module's frames and abort.
            let run = std::panic::AssertUnwindSafe(|| sink(value));
            if std::panic::catch_unwind(run).is_err() {
                tracing::error!(call = %self.call_id, "a progress sink panicked");
            }
        }
    }

    fn log(&self, level: u8, message: RStr<'_>) {
        log_line(&self.module, Some(&self.call_id), level, message.as_str());
    }

    fn state(&self, request: RStr<'_>) -> RString {
        RString::from(answer_state(self.state.as_ref(), request.as_str()))
    }
}

/// Milliseconds left before `deadline`, as the ABI's `remaining_ms` answers
/// it: `NO_DEADLINE` when there is none, never `NO_DEADLINE` when there is.
/// Shared by the in-process context and an isolated worker's.
pub fn remaining_ms(deadline: Option<Instant>) -> u64 {
    match deadline {
        Some(d) => {
            u64::try_from(d.saturating_duration_since(Instant::now()).as_millis()).unwrap_or(NO_DEADLINE - 1)
        }
        None => NO_DEADLINE,
    }
}

/// Writes one module log line into `tracing`, attributed to the module (and
/// the call, when there is one), redacted and escaped to one line.
pub fn log_line(module: &str, call: Option<&str>, lvl: u8, message: &str) {
    let call = call.unwrap_or("");
    let message = crate::redact::log_message(message);
    match lvl {
        level::ERROR => tracing::error!(target: "toolhost::module", module, call, "{message}"),
        level::WARN => tracing::warn!(target: "toolhost::module", module, call, "{message}"),
        level::INFO => tracing::info!(target: "toolhost::module", module, call, "{message}"),
        level::DEBUG => tracing::debug!(target: "toolhost::module", module, call, "{message}"),
        _ => tracing::trace!(target: "toolhost::module", module, call, "{message}"),
    }
}
