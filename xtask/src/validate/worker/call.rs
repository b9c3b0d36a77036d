//! One call into a tool on its own thread, under a deadline: at the
//! deadline the cancel token is set, and the tool has a bounded time to
//! return before it counts as hung.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::sabi_types::RRef;
use abi_stable::std_types::RStr;
use serde_json::{json, Value};
use toolhost::cancel::CancelToken;
use toolhost::context::CallContext;
use toolhost_core::abi::{FfiContext_TO, FfiToolBox};

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// How one call went.
#[derive(Debug)]
pub enum Outcome {
    /// The tool returned this text.
    Returned {
        /// The result text, as the tool sent it.
        text: String,
        /// The id the call was sent with.
        call_id: String,
        /// Time from the call to its return.
        elapsed: Duration,
        /// Time from the cancel to the return, when the deadline passed.
        after_cancel: Option<Duration>,
    },
    /// The tool did not return within `bound` after the cancel.
    Hung {
        /// The deadline at which the token was set.
        deadline: Duration,
        /// How long it was then given.
        bound: Duration,
    },
}

/// Calls `tool` with `input`: cancels at `deadline`, gives up `bound` later.
pub fn call(
    tool: &Arc<FfiToolBox>,
    name: &str,
    input: &Value,
    work_dir: &Path,
    deadline: Duration,
    bound: Duration,
) -> Outcome {
    let call_id = format!("validate-{}", NEXT_ID.fetch_add(1, Ordering::Relaxed));
    let request = json!({
        "tool_call_id": call_id,
        "name": name,
        "input": input,
        "deadline_ms": u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX),
        "working_dir": work_dir.to_string_lossy(),
    })
    .to_string();
    let cancel = CancelToken::new();
    let context = CallContext {
        cancel: cancel.clone(),
        deadline: Some(Instant::now() + deadline),
        clock: None,
        progress: None,
        ask: None,
        module: "validate".into(),
        call_id: call_id.clone(),
        state: None,
    };
    let started = Instant::now();
    let (done, returned) = mpsc::channel();
    let tool = tool.clone();
    std::thread::spawn(move || {
        let ffi = FfiContext_TO::from_ptr(RRef::new(&context), TD_Opaque);
        let text = tool.execute(RStr::from_str(&request), ffi).into_string();
        let _ = done.send(text);
    });
    if let Ok(text) = returned.recv_timeout(deadline) {
        return Outcome::Returned {
            text,
            call_id,
            elapsed: started.elapsed(),
            after_cancel: None,
        };
    }
    cancel.cancel();
    let cancelled = Instant::now();
    match returned.recv_timeout(bound) {
        Ok(text) => Outcome::Returned {
            text,
            call_id,
            elapsed: started.elapsed(),
            after_cancel: Some(cancelled.elapsed()),
        },
        Err(_) => Outcome::Hung { deadline, bound },
    }
}
