//! Stage 6, execute: the module's `execute` on a blocking thread, under the
//! deadline, with the cancel token set on timeout, client cancel or
//! shutdown.
//!
//! One engine, two ways to find the thread:
//! - [`Engine::run`], for async callers: the [`handoff`](super::handoff)
//!   lends a blocking thread and the caller awaits it;
//! - [`Engine::run_here`], for a caller that is a thread allowed to block
//!   (the MCP stdio reader, [`super::inline`]): the tool runs right there.
//!
//! Everything else is one code path: [`Engine::arm`] takes the module's
//! concurrency permit, encodes the request and puts the call under the
//! [`watchdog`](super::watchdog), which keeps every rule: cancel at the
//! deadline, cancel at shutdown (or from the client), and, once a cancelled
//! tool has had its grace period and still runs, *abandon* it: the caller is
//! answered without it (an isolated module's worker is killed instead, see
//! [`crate::isolate::ended_stuck`]). A tool that ignores its token cannot be
//! pre-empted in-process; its thread runs on and its late result is dropped.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::runtime::Handle;
use tokio::sync::{oneshot, OwnedSemaphorePermit};
use toolhost_core::wire::codes;
use toolhost_core::{CallRequest, Status, ToolResult};

use crate::cancel::{CancelToken, OnCancel};
use crate::context::{CallContext, ProgressSink};
use crate::tool::MountedTool;

use super::deadline::{Bounds, CallClock};
use super::handoff::{Handoff, JobError};
use super::watchdog::{Ended, Watch, Watchdog};

/// How one call is to run.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Time the tool gets (see [`super::deadline`]).
    pub bounds: Bounds,
    /// Time a cancelled tool gets to stop and answer.
    pub grace: Duration,
}

/// One call as stage 6 takes it.
pub(crate) struct Stage6 {
    pub tool: Arc<MountedTool>,
    pub request: CallRequest,
    pub limits: Limits,
    pub cancel: CancelToken,
    pub progress: Option<ProgressSink>,
    pub ask: Option<crate::ask::Asker>,
    /// The state store lent to the call, if any (see `lent_state`).
    pub state: Option<Arc<dyn crate::context::LentState>>,
}

/// Receives the host's answer for a call run on its caller's thread whose
/// tool was abandoned (from the watchdog's thread).
pub(crate) type Abandoned = Box<dyn FnOnce(ToolResult) + Send>;

/// Runs calls; one per pipeline.
pub(crate) struct Engine {
    /// Lends blocking threads to async callers.
    handoff: Arc<Handoff>,
    /// Keeps every call's deadline and grace period.
    watchdog: Watchdog,
    /// Cancels every call in flight.
    shutdown: CancelToken,
}

/// A call under watch, ready to run on whichever thread.
struct Armed {
    /// Runs the tool; a panic becomes [`JobError::Panicked`].
    job: Box<dyn FnOnce() -> Result<String, JobError> + Send>,
    watch: Watch,
    /// Cancels the call at shutdown, for as long as it runs.
    _shutdown: OnCancel,
}

impl Engine {
    /// An engine whose calls are all cancelled by `shutdown`.
    pub fn new(shutdown: CancelToken) -> Self {
        Engine {
            handoff: Arc::default(),
            watchdog: Watchdog::default(),
            shutdown,
        }
    }

    /// The token that cancels every call at shutdown (a keyed call waiting
    /// for another's result stops waiting with it).
    pub fn shutdown(&self) -> &CancelToken {
        &self.shutdown
    }

    /// Runs the call on a lent blocking thread and returns the tool's
    /// result (or the host's, when the tool was abandoned).
    pub async fn run(&self, call: Stage6) -> ToolResult {
        let id = call.request.tool_call_id.clone();
        let (tool, limits) = (call.tool.clone(), call.limits);
        let permit = match permit(&tool, &id).await {
            Ok(permit) => permit,
            Err(refused) => return refused,
        };
        let (abandon_tx, mut abandoned) = oneshot::channel();
        let abandon = Box::new(move |why: Status| {
            drop(permit);
            let _ = abandon_tx.send(why);
        });
        let clock = Arc::new(CallClock::start(limits.bounds));
        let armed = match self.arm(call, clock.clone(), abandon) {
            Ok(armed) => armed,
            Err(failed) => return failed,
        };
        let task = self.handoff.run(armed.job);
        let returned = tokio::select! {
            biased;
            joined = task => Ok(joined.and_then(|r| r)),
            why = &mut abandoned => Err(why),
        };
        let why = match returned {
            Ok(joined) => match conclude(armed.watch, &tool, &clock, parse(joined, &id)) {
                Some(result) => return result,
                // Abandoned just before it returned: the abandonment stands.
                None => abandoned.await,
            },
            Err(why) => why,
        };
        // The sender goes only with the watch's entry, which abandonment
        // takes: an error here cannot happen; answer `cancelled` if it does.
        abandoned_answer(&tool, &id, why.unwrap_or(Status::Cancelled), &limits, &clock)
    }

    /// Runs the call on this thread, which must be one that may block (never
    /// an async worker; `runtime` waits for the module's concurrency cap).
    /// Returns the tool's result, or `None` when the tool was abandoned:
    /// then the host's answer went to `on_abandoned`, from the watchdog's
    /// thread, while this one still ran the tool.
    pub fn run_here(&self, runtime: &Handle, call: Stage6, on_abandoned: Abandoned) -> Option<ToolResult> {
        let id = call.request.tool_call_id.clone();
        let (tool, limits) = (call.tool.clone(), call.limits);
        let permit = match &tool.module.limit {
            None => Ok(None),
            Some(limit) => match limit.clone().try_acquire_owned() {
                Ok(permit) => Ok(Some(permit)),
                Err(_) => runtime.block_on(permit(&tool, &id)),
            },
        };
        let permit = match permit {
            Ok(permit) => permit,
            Err(refused) => return Some(refused),
        };
        let clock = Arc::new(CallClock::start(limits.bounds));
        let abandon = {
            let (tool, id, clock) = (tool.clone(), id.clone(), clock.clone());
            Box::new(move |why: Status| {
                drop(permit);
                on_abandoned(abandoned_answer(&tool, &id, why, &limits, &clock));
            })
        };
        let armed = match self.arm(call, clock.clone(), abandon) {
            Ok(armed) => armed,
            Err(failed) => return Some(failed),
        };
        let returned = (armed.job)();
        conclude(armed.watch, &tool, &clock, parse(returned, &id))
    }

    /// What both ways share: the request encoded, the call context, the
    /// clock (which the call's progress moves), the watch (which owns
    /// `abandon`, and with it the module's permit, until the call ends
    /// either way) and the shutdown hook.
    fn arm(
        &self,
        call: Stage6,
        clock: Arc<CallClock>,
        abandon: super::watchdog::Abandon,
    ) -> Result<Armed, ToolResult> {
        let Stage6 {
            tool,
            request,
            limits,
            cancel,
            progress,
            ask,
            state,
        } = call;
        let call_json = serde_json::to_string(&request).map_err(|e| {
            ToolResult::failure(
                &request.tool_call_id,
                Status::Error,
                codes::INTERNAL,
                e.to_string(),
            )
        })?;
        let id = request.tool_call_id;
        let watch = self.watchdog.watch(clock.clone(), limits.grace, &cancel, abandon);
        let shutdown = {
            let cancel = cancel.clone();
            self.shutdown.on_cancel(move || cancel.cancel())
        };
        let ctx = CallContext {
            cancel,
            deadline: None,
            clock: Some(clock),
            progress,
            ask,
            module: tool.module.name.clone(),
            call_id: id,
            state,
        };
        let job = Box::new(move || {
            catch_unwind(AssertUnwindSafe(|| tool.execute_blocking(&call_json, &ctx)))
                .map_err(|payload| JobError::Panicked(toolhost_core::panic_message(&*payload)))
        });
        Ok(Armed {
            job,
            watch,
            _shutdown: shutdown,
        })
    }
}

/// Waits for the module's concurrency cap, when it has one.
async fn permit(tool: &MountedTool, id: &str) -> Result<Option<OwnedSemaphorePermit>, ToolResult> {
    match &tool.module.limit {
        None => Ok(None),
        Some(limit) => limit
            .clone()
            .acquire_owned()
            .await
            .map(Some)
            .map_err(|_| shutting_down(id)),
    }
}

/// Ends the watch of a call whose tool returned `result`: the result,
/// settled (see [`settle`]), or `None` when the call was abandoned and
/// answered already.
fn conclude(watch: Watch, tool: &MountedTool, clock: &CallClock, result: ToolResult) -> Option<ToolResult> {
    match watch.finish() {
        Ended::Answerable(why) => Some(settle(result, why, tool, clock)),
        Ended::Abandoned => {
            tracing::info!(
                status = %result.status,
                "the abandoned tool returned at last; its result is dropped"
            );
            None
        }
    }
}

/// The answer for a call that waited for its module's concurrency cap while
/// the host shut down.
fn shutting_down(id: &str) -> ToolResult {
    ToolResult::failure(
        id,
        Status::Cancelled,
        codes::CANCELLED,
        "the host is shutting down",
    )
}

/// The result of a call that returned after it was cancelled for `why`: a
/// tool stopped by its deadline reports `cancelled`, which becomes
/// `timeout` with a message saying which bound fired and when (also in
/// `error.details`, for the audit record).
fn settle(mut result: ToolResult, why: Option<Status>, tool: &MountedTool, clock: &CallClock) -> ToolResult {
    if why == Some(Status::Timeout) && result.status == Status::Cancelled {
        result.status = Status::Timeout;
        let fired = clock.fired();
        let mut error = toolhost_core::ErrorInfo::new(
            codes::TIMEOUT,
            format!(
                "'{}' {} and was stopped; partial output is kept. \
                 Retry with a smaller task or a longer timeout",
                tool.name(),
                timed_out(clock)
            ),
        )
        .retryable(true);
        error.details = fired.map(|f| f.details());
        result.error = Some(error);
    }
    result
}

/// What a timed-out call's answer says happened.
fn timed_out(clock: &CallClock) -> String {
    match clock.fired() {
        Some(fired) => fired.describe(),
        None => "timed out".into(),
    }
}

/// Adds the fired bound to a timeout answer's details.
fn with_bound(mut result: ToolResult, clock: &CallClock) -> ToolResult {
    if result.status == Status::Timeout {
        if let (Some(error), Some(fired)) = (result.error.as_mut(), clock.fired()) {
            error.details = Some(fired.details());
        }
    }
    result
}

/// The answer for a call whose isolated tool ignored cancellation past the
/// grace period: its worker is killed (so nothing is left running), and the
/// call is answered `timeout` or `cancelled` saying so. `None` for a tool
/// that runs in the host, which can only be abandoned.
fn ended_stuck(
    tool: &MountedTool,
    id: &str,
    why: toolhost_core::Status,
    limits: &Limits,
    clock: &CallClock,
) -> Option<toolhost_core::ToolResult> {
    use toolhost_core::wire::codes;
    let process = tool.module.process.as_ref()?;
    if !process.0.kill_stuck() {
        return None;
    }
    tracing::warn!(tool = tool.name(), call = %id, "tool ignored cancellation; killed its worker");
    let (code, what) = match why {
        toolhost_core::Status::Timeout => (codes::TIMEOUT, timed_out(clock)),
        _ => (codes::CANCELLED, "was cancelled".to_string()),
    };
    let mut result = toolhost_core::ToolResult::failure(
        id,
        why,
        code,
        format!(
            "'{}' {what} and did not stop within {:.1}s, so its worker process was killed; \
             the module restarts on the next call",
            tool.name(),
            limits.grace.as_secs_f64()
        ),
    );
    result
        .metadata
        .extra
        .insert("worker_killed".into(), serde_json::json!(true));
    Some(with_bound(result, clock))
}

/// The host's answer for a call whose tool ignored cancellation (for `why`)
/// past the grace period.
fn abandoned_answer(
    tool: &MountedTool,
    id: &str,
    why: Status,
    limits: &Limits,
    clock: &CallClock,
) -> ToolResult {
    if let Some(result) = ended_stuck(tool, id, why, limits, clock) {
        return result;
    }
    tracing::warn!(tool = tool.name(), call = %id, "tool ignored cancellation; abandoning its thread");
    let (code, what) = match why {
        Status::Timeout => (codes::TIMEOUT, timed_out(clock)),
        _ => (codes::CANCELLED, "was cancelled".to_string()),
    };
    let mut result = ToolResult::failure(
        id,
        why,
        code,
        format!(
            "'{}' {what} and did not stop within {:.1}s; its result is abandoned",
            tool.name(),
            limits.grace.as_secs_f64()
        ),
    );
    result.metadata.extra.insert("abandoned".into(), json!(true));
    with_bound(result, clock)
}

/// The tool's JSON result, checked; a malformed one becomes an error.
fn parse(joined: Result<String, JobError>, id: &str) -> ToolResult {
    let text = match joined {
        Ok(text) => text,
        Err(e) => {
            return ToolResult::failure(
                id,
                Status::Error,
                codes::INTERNAL,
                format!("the call's thread failed: {e}"),
            )
        }
    };
    match serde_json::from_str::<ToolResult>(&text) {
        Ok(mut result) => {
            result.tool_call_id = id.to_string();
            result.success = result.status == Status::Success;
            if !result.success && result.error.is_none() {
                result.error = Some(toolhost_core::ErrorInfo::new(
                    codes::INVALID_OUTPUT,
                    format!("the tool reported {} without an error message", result.status),
                ));
            }
            result
        }
        Err(e) => ToolResult::failure(
            id,
            Status::Error,
            codes::INVALID_OUTPUT,
            format!("the tool answered with a malformed result: {e}"),
        ),
    }
}
