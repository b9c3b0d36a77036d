//! Stage 6, execute: the module's `execute` on a blocking thread, under the
//! deadline, with the cancel token set on timeout, client cancel or
//! shutdown. The thread is either one the [`handoff`](super::handoff) lends
//! ([`run`], for async callers) or the caller's own, when the caller is a
//! thread that may block ([`here`], kept by the
//! [`watchdog`](super::watchdog)).
//!
//! A tool that ignores the token cannot be pre-empted in-process: after a
//! grace period the host answers without it and the thread is abandoned.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::sabi_types::RRef;
use serde_json::json;
use toolhost_core::abi::FfiContext_TO;
use toolhost_core::wire::codes;
use toolhost_core::{CallRequest, Status, ToolResult};

use crate::cancel::CancelToken;
use crate::context::{CallContext, ProgressSink};
use crate::tool::MountedTool;

use super::handoff::Handoff;

/// How one call is to run.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Time the tool gets.
    pub timeout: Duration,
    /// Time a cancelled tool gets to stop and answer.
    pub grace: Duration,
}

/// Runs the call and returns the tool's result (or the host's, on timeout).
pub async fn run(
    handoff: &Arc<Handoff>,
    tool: Arc<MountedTool>,
    request: CallRequest,
    limits: Limits,
    cancel: CancelToken,
    shutdown: &CancelToken,
    progress: Option<ProgressSink>,
) -> ToolResult {
    let id = request.tool_call_id.clone();
    let _permit = match &tool.module.limit {
        Some(limit) => match limit.clone().acquire_owned().await {
            Ok(permit) => Some(permit),
            Err(_) => return shutting_down(&id),
        },
        None => None,
    };
    let deadline = Instant::now() + limits.timeout;
    let (ctx, call_json) = match crossing(&tool, &request, deadline, &cancel, progress) {
        Ok(crossing) => crossing,
        Err(failed) => return failed,
    };
    let ctx = Arc::new(ctx);
    let mut task = {
        let tool = tool.clone();
        let ctx = ctx.clone();
        handoff.run(move || {
            let ffi = FfiContext_TO::from_ptr(RRef::new(&*ctx), TD_Opaque);
            tool.execute_blocking(&call_json, ffi)
        })
    };

    let why = tokio::select! {
        biased;
        joined = &mut task => return parse(joined, &id),
        _ = tokio::time::sleep_until(deadline.into()) => Status::Timeout,
        _ = cancel.cancelled() => Status::Cancelled,
        _ = shutdown.cancelled() => Status::Cancelled,
    };
    cancel.cancel();
    match tokio::time::timeout(limits.grace, &mut task).await {
        Ok(joined) => settle(parse(joined, &id), Some(why), &tool, &limits),
        Err(_) => abandoned(&tool, &id, why, &limits),
    }
}

/// The answer for a call that waited for its module's concurrency cap while
/// the host shut down.
pub fn shutting_down(id: &str) -> ToolResult {
    ToolResult::failure(
        id,
        Status::Cancelled,
        codes::CANCELLED,
        "the host is shutting down",
    )
}

/// Runs the call on this thread, which must be one that may block (never an
/// async worker), and returns the tool's result. The deadline is the
/// caller's to keep: it cancels `cancel` when time is up.
pub fn here(
    tool: &MountedTool,
    request: &CallRequest,
    deadline: Instant,
    cancel: &CancelToken,
    progress: Option<ProgressSink>,
) -> ToolResult {
    let (ctx, call_json) = match crossing(tool, request, deadline, cancel, progress) {
        Ok(crossing) => crossing,
        Err(failed) => return failed,
    };
    let ffi = FfiContext_TO::from_ptr(RRef::new(&ctx), TD_Opaque);
    let joined = catch_unwind(AssertUnwindSafe(|| tool.execute_blocking(&call_json, ffi)))
        .map_err(|payload| toolhost_core::panic_message(&*payload));
    parse(joined, &request.tool_call_id)
}

/// What crosses into the module: the call's context and its request as
/// JSON text (a request that cannot be encoded is an internal error).
fn crossing(
    tool: &MountedTool,
    request: &CallRequest,
    deadline: Instant,
    cancel: &CancelToken,
    progress: Option<ProgressSink>,
) -> Result<(CallContext, String), ToolResult> {
    let id = &request.tool_call_id;
    let call_json = serde_json::to_string(request)
        .map_err(|e| ToolResult::failure(id, Status::Error, codes::INTERNAL, e.to_string()))?;
    let ctx = CallContext {
        cancel: cancel.clone(),
        deadline: Some(deadline),
        progress,
        module: tool.module.name.clone(),
        call_id: id.clone(),
    };
    Ok((ctx, call_json))
}

/// The result of a call that returned after it was cancelled for `why`: a
/// tool stopped by its deadline reports `cancelled`, which becomes
/// `timeout` with a message saying so.
pub fn settle(
    mut result: ToolResult,
    why: Option<Status>,
    tool: &MountedTool,
    limits: &Limits,
) -> ToolResult {
    if why == Some(Status::Timeout) && result.status == Status::Cancelled {
        result.status = Status::Timeout;
        result.error = Some(
            toolhost_core::ErrorInfo::new(
                codes::TIMEOUT,
                format!(
                    "'{}' timed out after {}s and was stopped; partial output is kept. \
                     Retry with a smaller task or a longer timeout",
                    tool.name(),
                    limits.timeout.as_secs_f64()
                ),
            )
            .retryable(true),
        );
    }
    result
}

/// The host's answer for a call whose tool ignored cancellation (for `why`)
/// past the grace period.
pub fn abandoned(tool: &MountedTool, id: &str, why: Status, limits: &Limits) -> ToolResult {
    if let Some(result) = crate::isolate::ended_stuck(tool, id, why, limits) {
        return result;
    }
    tracing::warn!(tool = tool.name(), call = %id, "tool ignored cancellation; abandoning its thread");
    let (code, what) = match why {
        Status::Timeout => (
            codes::TIMEOUT,
            format!("timed out after {}s", limits.timeout.as_secs_f64()),
        ),
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
    result
}

/// The tool's JSON result, checked; a malformed one becomes an error.
fn parse(joined: Result<String, String>, id: &str) -> ToolResult {
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
