//! Every stage for one call, on the caller's own thread.
//!
//! [`Pipeline::call`] hands stage 6 to a blocking thread and awaits it: two
//! thread wake-ups per call, which on a virtual machine cost more than a
//! small tool does. A front end that reads requests on threads of its own
//! (the MCP stdio server) has a blocking thread already: the one that read
//! the request. [`Pipeline::call_here`] runs the whole pipeline there, the
//! tool included; the async stages (approval, hooks) are driven on that
//! thread too, with the runtime's drivers.
//!
//! Nothing else changes: the [`watchdog`](super::watchdog) keeps the
//! deadline (cancel at the deadline; at a cancel from anyone, a grace
//! period) and, when a tool ignores its token, answers the caller without it
//! from another thread, exactly as stage 6 does for async callers.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use serde_json::Value;
use tokio::runtime::Handle;
use tokio::sync::OwnedSemaphorePermit;
use toolhost_core::{Status, ToolResult};

use super::record::Pending;
use super::watchdog::Ended;
use super::{execute, Call, Launch, Pipeline};
use crate::tool::MountedTool;

/// Receives a call's finished (recorded) result, exactly once.
pub type Answer = Box<dyn FnOnce(ToolResult) + Send>;

/// What finishing a call needs, held by whoever finishes it first: the
/// thread that ran the tool, or the watchdog that abandoned it.
struct Tail {
    pending: Pending,
    tool: Arc<MountedTool>,
    input: Value,
    answer: Answer,
    /// The module's concurrency permit: given back once the tool returned
    /// or was abandoned, as stage 6 does for async callers.
    permit: Option<OwnedSemaphorePermit>,
}

type SharedTail = Arc<Mutex<Option<Tail>>>;

fn take(tail: &SharedTail) -> Option<Tail> {
    tail.lock().unwrap_or_else(PoisonError::into_inner).take()
}

impl Pipeline {
    /// Runs `call` through every stage on this thread and hands the result
    /// to `answer`. This thread must be one that may block for as long as
    /// the tool runs (never an async worker); `runtime` drives the async
    /// stages (approval, hooks) and finishes abandoned calls.
    ///
    /// `answer` runs on this thread, except when the tool ignores its
    /// cancellation past the grace period: then the host's answer comes
    /// from the watchdog's side and the tool's late result is dropped.
    pub fn call_here(self: &Arc<Self>, runtime: &Handle, call: Call, answer: Answer) {
        let mut pending = self.begin(&call);
        let id = pending.id.clone();
        let span = pending.span.clone();
        let _entered = span.enter();
        let prepared = match runtime.block_on(self.prepare(&id, call, &mut pending.trace)) {
            Ok(prepared) => prepared,
            Err(refusal) => return answer(self.finish(pending, refusal)),
        };
        let Launch {
            tool,
            request,
            limits,
            cancel,
            progress,
            input,
        } = self.launch(prepared);

        // The module's concurrency cap, waited for here.
        let permit = match &tool.module.limit {
            None => None,
            Some(limit) => match limit.clone().try_acquire_owned() {
                Ok(permit) => Some(permit),
                Err(_) => match runtime.block_on(limit.clone().acquire_owned()) {
                    Ok(permit) => Some(permit),
                    Err(_) => return answer(self.finish(pending, execute::shutting_down(&id))),
                },
            },
        };

        let tail: SharedTail = Arc::new(Mutex::new(Some(Tail {
            pending,
            tool: tool.clone(),
            input,
            answer,
            permit,
        })));
        let abandon = {
            let (me, runtime, tail, tool, id) = (
                self.clone(),
                runtime.clone(),
                tail.clone(),
                tool.clone(),
                id.clone(),
            );
            Box::new(move |why: Status| {
                if let Some(tail) = take(&tail) {
                    let result = execute::abandoned(&tool, &id, why, &limits);
                    let span = tail.pending.span.clone();
                    let _entered = span.enter();
                    // Post hooks may take a while: not on the watchdog thread.
                    runtime.spawn(async move { me.complete(tail, result).await });
                }
            })
        };
        let deadline = Instant::now() + limits.timeout;
        let watch = self.watchdog.watch(deadline, limits.grace, &cancel, abandon);
        let _shutdown = {
            let cancel = cancel.clone();
            self.shutdown.on_cancel(move || cancel.cancel())
        };

        // 6. execute, here.
        let result = execute::here(&tool, &request, deadline, &cancel, progress);
        match watch.finish() {
            Ended::Answerable(why) => {
                if let Some(tail) = take(&tail) {
                    let result = execute::settle(result, why, &tool, &limits);
                    runtime.block_on(self.complete(tail, result));
                }
            }
            Ended::Abandoned => tracing::info!(
                status = %result.status,
                "the abandoned tool returned at last; its result is dropped"
            ),
        }
    }

    /// Stages 7 and 8 for a call run here, then the answer.
    async fn complete(&self, tail: Tail, result: ToolResult) {
        let Tail {
            pending,
            tool,
            input,
            answer,
            permit,
        } = tail;
        drop(permit);
        let result = self.after(&tool, &input, &pending.trace, result).await;
        answer(self.finish(pending, result));
    }
}
