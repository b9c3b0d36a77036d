//! The per-call context a tool receives: cancellation, deadline, progress,
//! logs and result metadata.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use abi_stable::std_types::RStr;
use serde::Serialize;
use serde_json::{json, Map, Value};

use super::error::ToolError;
use crate::abi::{level, FfiContextRef, NO_DEADLINE};
use crate::wire::ContentBlock;

/// Log severity for [`Context::log`] and [`crate::Coordinator::log`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// An error the operator should see.
    Error,
    /// Something unusual.
    Warn,
    /// Normal operational messages.
    Info,
    /// Diagnostics.
    Debug,
    /// Very chatty diagnostics.
    Trace,
}

impl Level {
    pub(crate) fn to_abi(self) -> u8 {
        match self {
            Level::Error => level::ERROR,
            Level::Warn => level::WARN,
            Level::Info => level::INFO,
            Level::Debug => level::DEBUG,
            Level::Trace => level::TRACE,
        }
    }
}

/// What a running tool can ask of the host.
///
/// Cancellation is cooperative: when the deadline passes or the caller
/// cancels, the host sets the token and the tool must stop promptly. A tool
/// that waits should wait on [`Context::wait_cancelled`] rather than sleep.
pub struct Context<'a> {
    ffi: FfiContextRef<'a>,
    tool_call_id: String,
    working_dir: PathBuf,
    metadata: Mutex<Map<String, Value>>,
    content: Mutex<Vec<ContentBlock>>,
    session_id: Option<String>,
    principal: Option<String>,
    request: crate::wire::RequestContext,
}

impl<'a> Context<'a> {
    pub(crate) fn new(ffi: FfiContextRef<'a>, tool_call_id: String, working_dir: PathBuf) -> Self {
        Context {
            ffi,
            tool_call_id,
            working_dir,
            metadata: Mutex::new(Map::new()),
            content: Mutex::new(Vec::new()),
            session_id: None,
            principal: None,
            request: crate::wire::RequestContext::default(),
        }
    }

    pub(crate) fn with_caller(
        mut self,
        principal: Option<String>,
        request: crate::wire::RequestContext,
    ) -> Self {
        self.principal = principal;
        self.request = request;
        self
    }

    /// Who the call runs for (a `[[principals]]` name, or the host's
    /// `[host] principal`), when the host names one. Authenticated only as
    /// far as the host's transport is (see the book's Governance chapter,
    /// `docs/src/governance.md`).
    pub fn principal(&self) -> Option<&str> {
        self.principal.as_deref()
    }

    /// The caller's run, thread, tenant, agent and correlation ids (the
    /// caller's claims, not authenticated).
    pub fn request_context(&self) -> &crate::wire::RequestContext {
        &self.request
    }

    pub(crate) fn with_session(mut self, session_id: Option<String>) -> Self {
        self.session_id = session_id;
        self
    }

    /// The session this call belongs to (an MCP session, or one CLI process
    /// or batch), when the host names one: key per-session state (files
    /// read, background jobs) by it, so one client cannot see or touch
    /// another's.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// The call's id (for logs and scratch-file names).
    pub fn tool_call_id(&self) -> &str {
        &self.tool_call_id
    }

    /// The folder relative paths in the input resolve against.
    pub fn working_dir(&self) -> &Path {
        &self.working_dir
    }

    /// Whether the call has been cancelled or timed out.
    pub fn is_cancelled(&self) -> bool {
        self.ffi.is_cancelled()
    }

    /// `Err(cancelled)` once the call is cancelled, for use with `?` in loops.
    pub fn check_cancelled(&self) -> Result<(), ToolError> {
        if self.is_cancelled() {
            Err(ToolError::cancelled())
        } else {
            Ok(())
        }
    }

    /// Blocks until the call is cancelled or `timeout` passes; returns whether
    /// it was cancelled. Use it instead of `sleep` so cancellation is prompt.
    pub fn wait_cancelled(&self, timeout: Duration) -> bool {
        let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX - 1);
        self.ffi.wait_cancelled(ms)
    }

    /// Time left before the host's deadline, if there is one.
    pub fn remaining(&self) -> Option<Duration> {
        match self.ffi.remaining_ms() {
            NO_DEADLINE => None,
            ms => Some(Duration::from_millis(ms)),
        }
    }

    /// Reports progress to the caller (MCP progress notifications).
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let mut body = json!({ "progress": progress });
        if let Some(total) = total {
            body["total"] = json!(total);
        }
        if let Some(message) = message {
            body["message"] = json!(message);
        }
        self.ffi.progress(RStr::from_str(&body.to_string()));
    }

    /// Writes a log line into the host's log, attributed to this call.
    pub fn log(&self, level: Level, message: impl AsRef<str>) {
        self.ffi.log(level.to_abi(), RStr::from_str(message.as_ref()));
    }

    /// The value of `key` in the state the host lends this call (see
    /// [`crate::state`]), if set and not expired. `Err(Unsupported)` when
    /// the host lends none: keep the state in memory instead.
    pub fn state_get(&self, key: &str) -> Result<Option<String>, crate::state::StateError> {
        self.state_call(&crate::state::Request::Get { key: key.to_string() })
    }

    /// Sets `key` to `value` in the lent state for `ttl` (the host's default
    /// when `None`; see [`crate::state`] for the bounds).
    pub fn state_put(
        &self,
        key: &str,
        value: &str,
        ttl: Option<Duration>,
    ) -> Result<(), crate::state::StateError> {
        let ttl_ms = ttl.map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX));
        self.state_call(&crate::state::Request::Put {
            key: key.to_string(),
            value: value.to_string(),
            ttl_ms,
        })
        .map(|_| ())
    }

    /// Removes `key` from the lent state.
    pub fn state_delete(&self, key: &str) -> Result<(), crate::state::StateError> {
        self.state_call(&crate::state::Request::Delete { key: key.to_string() })
            .map(|_| ())
    }

    /// A grant to reach this call's state after the call, for `ttl` (the
    /// host's default, a day, when `None`): hand it to
    /// [`crate::GrantedState::new`]. `Err(Unsupported)` when the
    /// host lends this call no state.
    pub fn state_grant(&self, ttl: Option<Duration>) -> Result<String, crate::state::StateError> {
        let ttl_ms = ttl.map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX));
        self.state_call(&crate::state::Request::Grant { ttl_ms })?
            .ok_or_else(|| crate::state::StateError::Unavailable("the host granted no token".into()))
    }

    fn state_call(
        &self,
        request: &crate::state::Request,
    ) -> Result<Option<String>, crate::state::StateError> {
        let text = serde_json::to_string(request)
            .map_err(|e| crate::state::StateError::BadRequest(e.to_string()))?;
        let answer = self.ffi.state(RStr::from_str(&text));
        crate::state::parse_answer(answer.as_str())
    }

    /// Adds a fact to the result's metadata (`trust`, `final_url`, sizes…).
    pub fn set_metadata(&self, key: impl Into<String>, value: impl Serialize) {
        if let (Ok(mut map), Ok(value)) = (self.metadata.lock(), serde_json::to_value(value)) {
            map.insert(key.into(), value);
        }
    }

    /// Adds a content block (an image, a text) to the result, beside the
    /// tool's typed output: what a client shows a model directly, such as
    /// the pixels of an image read_file opened. Blocks keep the order they
    /// were added in; the output stays the structured answer. Blocks added
    /// by a call that fails are dropped with the rest of its result.
    pub fn add_content(&self, block: ContentBlock) {
        if let Ok(mut content) = self.content.lock() {
            content.push(block);
        }
    }

    pub(crate) fn take_content(&self) -> Vec<ContentBlock> {
        self.content
            .lock()
            .map(|mut c| std::mem::take(&mut *c))
            .unwrap_or_default()
    }

    pub(crate) fn take_metadata(&self) -> Map<String, Value> {
        self.metadata
            .lock()
            .map(|mut m| std::mem::take(&mut *m))
            .unwrap_or_default()
    }
}
