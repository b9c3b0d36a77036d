//! The module's own tokio runtime, made on first use (so mount stays fast)
//! and shut down by the module's cleanup; and the bridge from a blocking
//! `execute` to async code, raced against the host's cancel token.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use toolhost_core::{Context, ToolError};

/// A lazily built runtime that can be shut down once.
#[derive(Default)]
pub struct Runtime {
    slot: Mutex<Slot>,
}

#[derive(Default)]
struct Slot {
    runtime: Option<Arc<tokio::runtime::Runtime>>,
    closed: bool,
}

/// How often a running call looks at the host's cancel token.
const CANCEL_POLL: Duration = Duration::from_millis(10);

impl Runtime {
    /// The runtime, built on first call.
    pub fn get(&self) -> Result<Arc<tokio::runtime::Runtime>, ToolError> {
        let mut slot = self
            .slot
            .lock()
            .map_err(|_| ToolError::new("internal", "the web module's runtime lock is poisoned"))?;
        if slot.closed {
            return Err(ToolError::new("shut_down", "the web module has been shut down"));
        }
        if let Some(rt) = &slot.runtime {
            return Ok(rt.clone());
        }
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("toolhost-web")
            .enable_all()
            .build()
            .map_err(|e| {
                ToolError::new(
                    "runtime",
                    format!("could not start the web module's runtime: {e}"),
                )
            })?;
        let rt = Arc::new(rt);
        slot.runtime = Some(rt.clone());
        Ok(rt)
    }

    /// Runs `future` to completion on the calling thread, giving up when the
    /// host cancels the call (→ `cancelled`) or `budget` passes (→ the error
    /// `on_timeout` makes). The budget is cut to the host's deadline.
    pub fn run<T, F>(
        &self,
        ctx: &Context<'_>,
        budget: Duration,
        on_timeout: impl FnOnce(Duration) -> ToolError,
        future: F,
    ) -> Result<T, ToolError>
    where
        F: Future<Output = Result<T, ToolError>>,
    {
        ctx.check_cancelled()?;
        let budget = ctx.remaining().map_or(budget, |left| left.min(budget));
        let rt = self.get()?;
        rt.block_on(async {
            let cancelled = async {
                while !ctx.is_cancelled() {
                    tokio::time::sleep(CANCEL_POLL).await;
                }
            };
            tokio::select! {
                outcome = tokio::time::timeout(budget, future) => outcome.unwrap_or_else(|_| Err(on_timeout(budget))),
                () = cancelled => Err(ToolError::cancelled()),
            }
        })
    }

    /// Runs `f` inside the runtime's context (for building clients).
    pub fn enter<T>(&self, f: impl FnOnce() -> T) -> Result<T, ToolError> {
        let rt = self.get()?;
        let _guard = rt.enter();
        Ok(f())
    }

    /// Stops the runtime; later calls fail with `shut_down`.
    pub fn shutdown(&self) {
        let taken = match self.slot.lock() {
            Ok(mut slot) => {
                slot.closed = true;
                slot.runtime.take()
            }
            Err(_) => None,
        };
        if let Some(rt) = taken {
            match Arc::try_unwrap(rt) {
                Ok(rt) => rt.shutdown_timeout(Duration::from_millis(500)),
                // A call still holds it: it stops when that call's Arc drops.
                Err(_still_used) => {}
            }
        }
    }
}
