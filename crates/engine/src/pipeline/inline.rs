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
//! Stage 6 is the same engine as for async callers
//! ([`Engine::run_here`](super::execute::Engine::run_here)): same deadline,
//! cancel, grace and abandonment. The one difference is who answers an
//! abandoned call: the watchdog's side, through the call's [`Tail`], since
//! this thread is still inside the tool.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tokio::runtime::Handle;
use toolhost_core::ToolResult;

use super::record::Pending;
use super::{Call, Launch, Pipeline};
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
        if let Some(result) = self.run_host_tool(&prepared) {
            let tail = Tail {
                pending,
                tool: prepared.tool.clone(),
                input: prepared.input.clone(),
                answer,
            };
            return runtime.block_on(self.complete(tail, result));
        }
        let Launch { stage6, input } = self.launch(prepared);
        let tail: SharedTail = Arc::new(Mutex::new(Some(Tail {
            pending,
            tool: stage6.tool.clone(),
            input,
            answer,
        })));
        let on_abandoned = {
            let (me, runtime, tail) = (self.clone(), runtime.clone(), tail.clone());
            Box::new(move |result: ToolResult| {
                if let Some(tail) = take(&tail) {
                    // Post hooks may take a while: not on the watchdog thread.
                    runtime.spawn(async move { me.complete(tail, result).await });
                }
            })
        };
        // 6. execute, here.
        if let Some(result) = self.engine.run_here(runtime, stage6, on_abandoned) {
            if let Some(tail) = take(&tail) {
                runtime.block_on(self.complete(tail, result));
            }
        }
    }

    /// Stages 7 and 8 for a call run here, then the answer.
    async fn complete(&self, tail: Tail, result: ToolResult) {
        let Tail {
            mut pending,
            tool,
            input,
            answer,
        } = tail;
        let span = pending.span.clone();
        let _entered = span.enter();
        pending.trace.stage("execute");
        let result = self.after(&tool, &input, &mut pending.trace, result).await;
        answer(self.finish(pending, result));
    }
}
