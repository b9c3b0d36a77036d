//! Session ids: what a call's module keys per-session state by (files read
//! before a write, background jobs). An MCP HTTP session is its own
//! session; everything else a process serves (one `toolhost call`, one
//! `batch`, one stdio MCP client) is one session: this process's.
//!
//! When a session ends (HTTP DELETE, idle expiry, this process exiting)
//! every module is told ([`end`]), so it drops that session's state: bash
//! ends its background jobs, the filesystem forgets what it read.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::cancel::CancelToken;
use crate::context::CallContext;
use crate::host::Host;
use crate::tool::{MountedTool, SourceKind};

/// How long one module may take to drop a session's state (an isolated
/// module's worker honours it as a deadline).
const END_BUDGET: Duration = Duration::from_secs(30);

/// Whether a call ran in this process's session (so it has one to end).
static PROCESS_USED: AtomicBool = AtomicBool::new(false);

/// This process's session id: `proc-<pid>-<random>`, made once. The random
/// part keeps ids unique when pids are reused.
pub fn process() -> &'static str {
    PROCESS_USED.store(true, Ordering::Relaxed);
    process_id()
}

/// [`process`] without counting as a use of the session.
fn process_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let mut bytes = [0u8; 8];
        // Without randomness the pid alone still separates live processes.
        let _ = getrandom::fill(&mut bytes);
        let random: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        format!("proc-{}-{random}", std::process::id())
    })
}

/// The session id of an MCP HTTP session.
pub fn http(mcp_session_id: &str) -> String {
    format!("http-{mcp_session_id}")
}

/// Tells every module of `host` that `session` ended, and waits for them.
/// Blocking (run it off the async workers). Modules loaded in the host and
/// isolated ones (through their worker, the ordinary call path) are told;
/// mounted MCP servers are not (MCP has no such message: their sessions
/// are their own). A module built on an SDK without session-end support
/// answers that the request is malformed and runs nothing: ignored.
pub fn end(host: &Host, session: &str) {
    let request = toolhost_core::session::end_request(session);
    let modules = one_tool_per_module(host);
    for tool in &modules {
        let ctx = CallContext {
            cancel: CancelToken::new(),
            deadline: Some(Instant::now() + END_BUDGET),
            clock: None,
            progress: None,
            ask: None,
            module: tool.module.name.clone(),
            call_id: format!("session-end:{session}"),
            state: None,
        };
        let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            tool.execute_blocking(&request, &ctx)
        }));
        let taken =
            |text: &str| serde_json::from_str::<toolhost_core::ToolResult>(text).is_ok_and(|r| r.success);
        match answer {
            Ok(text) if taken(&text) => {
                tracing::debug!(module = %tool.module.name, session, "told the module its session ended")
            }
            Ok(text) => tracing::debug!(
                module = %tool.module.name,
                session,
                answer = %text,
                "the module did not take the session end (an older SDK, or a handler failed)"
            ),
            Err(panic) => tracing::warn!(
                module = %tool.module.name,
                session,
                "session end panicked: {}",
                toolhost_core::panic_message(&*panic)
            ),
        }
    }
    tracing::info!(
        session,
        modules = modules.len(),
        "session ended: its modules were told"
    );
}

/// Ends this process's session, when a call ran in it: what the host does
/// before its modules' cleanup (a CLI process, a batch, a stdio client).
pub fn end_process(host: &Host) {
    if PROCESS_USED.swap(false, Ordering::Relaxed) {
        end(host, process_id());
    }
}

/// The first tool of each module that can take the notification.
fn one_tool_per_module(host: &Host) -> Vec<Arc<MountedTool>> {
    let mut chosen: Vec<Arc<MountedTool>> = Vec::new();
    for tool in host.tools() {
        if tool.module.source == SourceKind::Mcp {
            continue;
        }
        // A worker that is not running holds no session's state: it is not
        // started (after a crash, with backoff) just to be told.
        if tool.module.process.as_ref().is_some_and(|p| !p.0.is_running()) {
            continue;
        }
        if !chosen.iter().any(|c| Arc::ptr_eq(&c.module, &tool.module)) {
            chosen.push(tool);
        }
    }
    chosen
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_process_session_is_stable_and_named() {
        assert_eq!(super::process(), super::process());
        assert!(super::process().starts_with(&format!("proc-{}-", std::process::id())));
        assert_eq!(super::http("abc"), "http-abc");
    }
}
