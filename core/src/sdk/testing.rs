//! Calling a tool in-process, exactly as the host would, for module tests.
//!
//! ```ignore
//! let result = toolhost_core::testing::call(&MyTool, json!({"name": "x"}));
//! assert!(result.success, "{}", result.message());
//! ```

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::RStr;
use serde_json::Value;

use super::adapter::run_call;
use super::tool::Tool;
use crate::abi::{FfiContext, FfiContext_TO, NO_DEADLINE};
use crate::wire::{CallRequest, ToolResult};

/// A stand-in for the host's per-call context: a cancel flag and a deadline.
pub struct TestContext {
    cancelled: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
    deadline: Option<Instant>,
}

impl TestContext {
    /// A context with no deadline.
    pub fn new() -> Self {
        TestContext {
            cancelled: AtomicBool::new(false),
            lock: Mutex::new(()),
            wake: Condvar::new(),
            deadline: None,
        }
    }

    /// A context that reports the given time budget.
    pub fn with_deadline(budget: Duration) -> Self {
        TestContext {
            deadline: Some(Instant::now() + budget),
            ..TestContext::new()
        }
    }

    /// Cancels the call (from another thread, typically).
    pub fn cancel(&self) {
        let _held = self.lock.lock();
        self.cancelled.store(true, Ordering::SeqCst);
        self.wake.notify_all();
    }

    /// Runs `tool` on `input` with this context, through the SDK's adapter.
    ///
    /// `working_dir` is the folder the host would send as the call's working
    /// directory (`CallRequest.working_dir`, what [`Context::working_dir`]
    /// answers): the plan's `working_dir` in a real host. Tools that resolve
    /// relative paths resolve them against it, so a test of such a tool
    /// passes a temporary folder here; the free function [`call`] passes `.`.
    ///
    /// [`Context::working_dir`]: crate::Context::working_dir
    pub fn call<T: Tool>(&self, tool: &T, input: Value, working_dir: &Path) -> ToolResult {
        let name = tool.spec().name;
        let request = CallRequest::new("test", name.clone(), input, working_dir.to_string_lossy());
        let json = serde_json::to_string(&request).unwrap_or_default();
        let ffi = FfiContext_TO::from_ptr(abi_stable::sabi_types::RRef::new(self), TD_Opaque);
        run_call(tool, &name, &json, ffi)
    }
}

impl Default for TestContext {
    fn default() -> Self {
        Self::new()
    }
}

impl FfiContext for TestContext {
    fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    fn wait_cancelled(&self, timeout_ms: u64) -> bool {
        let end = Instant::now() + Duration::from_millis(timeout_ms);
        let Ok(mut held) = self.lock.lock() else {
            return self.is_cancelled();
        };
        while !self.is_cancelled() {
            let now = Instant::now();
            if now >= end {
                break;
            }
            match self.wake.wait_timeout(held, end - now) {
                Ok((h, _)) => held = h,
                Err(_) => break,
            }
        }
        self.is_cancelled()
    }

    fn remaining_ms(&self) -> u64 {
        match self.deadline {
            Some(d) => d.saturating_duration_since(Instant::now()).as_millis() as u64,
            None => NO_DEADLINE,
        }
    }

    fn progress(&self, _json: RStr<'_>) {}

    fn log(&self, _level: u8, _message: RStr<'_>) {}
}

/// Calls `tool` with `input` in the current folder, with no deadline.
pub fn call<T: Tool>(tool: &T, input: Value) -> ToolResult {
    TestContext::new().call(tool, input, Path::new("."))
}
