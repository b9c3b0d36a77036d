//! Routes each line of stdin: a plain `tools/call` runs *directly*, on the
//! reader thread that read it ([`Pipeline::call_here`]), and is answered
//! from there; every other line goes to rmcp, which handles it as usual
//! (initialize, tools/list, ping, calls that want progress or carry input
//! responses, answers to our elicitation requests, anything malformed).
//!
//! A direct call goes through the same pipeline as one through rmcp's
//! handler, built and answered by the same [`adapter`] (the same call from
//! the same request, the same approver through rmcp's peer, the same result
//! conversion), serialized as rmcp's own message types.
//! It only skips rmcp's per-request task and the hand-off to a blocking
//! thread, the two thread wake-ups that dominated a small call's cost.
//! Whatever rmcp would judge differently goes to rmcp
//! ([`adapter::rmcp_must_judge`]), as do a request id already in flight
//! (rmcp runs that one too: reusing an id is the client's fault), and
//! every call beyond [`MAX_DIRECT`] at once.
//!
//! Direct calls start once rmcp has finished the handshake. Their
//! `notifications/cancelled` are honoured here (and still passed on to
//! rmcp, which ignores ids it does not know): the tool stops, the call is
//! recorded, and, as rmcp does and the MCP spec asks, no response is sent
//! for a request its client cancelled.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CancelledNotificationParam, ErrorData, JsonRpcVersion2_0, RequestId,
    ServerJsonRpcMessage,
};
use rmcp::{Peer, RoleServer};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::runtime::Handle;
use toolhost_core::ToolResult;

use super::input::{Job, Lines};
use super::judge::{self, Verdict};
use super::output::{Output, RmcpIds};
use super::relay::RelaySender;
use crate::cancel::CancelToken;
use crate::mcp::adapter;
use crate::pipeline::Pipeline;

/// Set to `off` in the server's environment, every `tools/call` takes
/// rmcp's path: the differential test runs one transcript both ways, and an
/// operator who suspects the fast path can do without it.
pub const DIRECT_ENV: &str = "TOOLHOST_MCP_STDIO_DIRECT";

/// Direct calls at once; more concurrent calls go through rmcp (its tasks
/// and tokio's capped blocking pool), rather than a reader thread each.
pub const MAX_DIRECT: usize = 64;

/// The router the stdin readers hand their lines to.
pub struct Router {
    shared: Arc<Shared>,
}

struct Shared {
    pipeline: Arc<Pipeline>,
    runtime: Handle,
    output: Arc<Output>,
    /// rmcp's input; taken at the end of stdin.
    relay: Mutex<Option<RelaySender>>,
    /// rmcp's peer, once the session is initialized: direct calls start then.
    peer: OnceLock<Peer<RoleServer>>,
    /// The session is over: no new direct calls.
    closed: AtomicBool,
    /// Plain calls may run directly ([`DIRECT_ENV`] is not `off`).
    direct_calls: bool,
    /// Direct calls in flight, and answers being written.
    calls: Mutex<Calls>,
    /// Signalled when the last call in flight is answered, while someone
    /// [drains](Router::drain) (a notify is a system call even with
    /// nobody waiting).
    drained: Condvar,
    draining: AtomicBool,
    /// Fires when the client is gone (stdin closed).
    gone: CancelToken,
    /// Requests rmcp has yet to answer.
    rmcp_ids: RmcpIds,
    /// A line too long for the readers to hold, as it arrives.
    long: Mutex<LongLine>,
}

/// A line arriving in pieces ([`Lines::raw`]): held whole up to
/// [`judge::MAX_LINE`], beyond that only its start and its length.
#[derive(Default)]
struct LongLine {
    bytes: Vec<u8>,
    length: usize,
    over: bool,
}

/// The direct calls in flight, by request id, and how many answers are
/// being written: a call leaves `by_id` before its answer is written (so
/// the client may reuse its id as soon as it reads the answer), and
/// `writing` keeps [`Router::drain`] waiting until the answer is out (else
/// the process could exit between the two and the answer be lost).
#[derive(Default)]
struct Calls {
    by_id: HashMap<RequestId, InFlight>,
    writing: usize,
}

impl Calls {
    fn is_empty(&self) -> bool {
        self.by_id.is_empty() && self.writing == 0
    }
}

/// A direct call in flight.
struct InFlight {
    cancel: CancelToken,
    /// The client cancelled it: it gets no response.
    cancelled_by_client: bool,
}

/// The part of a JSON-RPC message that decides its route.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[allow(dead_code)] // checked by deserializing: "2.0" or not ours
    jsonrpc: JsonRpcVersion2_0,
    #[serde(default)]
    id: Option<RequestId>,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

impl Router {
    /// A router feeding rmcp through `relay`; `gone` fires at the end of
    /// stdin.
    pub fn new(
        pipeline: Arc<Pipeline>,
        runtime: Handle,
        output: Arc<Output>,
        relay: RelaySender,
        gone: CancelToken,
        rmcp_ids: RmcpIds,
    ) -> Router {
        Router {
            shared: Arc::new(Shared {
                pipeline,
                runtime,
                output,
                relay: Mutex::new(Some(relay)),
                peer: OnceLock::new(),
                closed: AtomicBool::new(false),
                direct_calls: std::env::var_os(DIRECT_ENV).is_none_or(|v| v != "off"),
                calls: Mutex::new(Calls::default()),
                drained: Condvar::new(),
                draining: AtomicBool::new(false),
                gone,
                rmcp_ids,
                long: Mutex::new(LongLine::default()),
            }),
        }
    }

    /// The session is initialized: calls may run directly from now on.
    pub fn start_direct_calls(&self, peer: Peer<RoleServer>) {
        let _ = self.shared.peer.set(peer);
    }

    /// The session is over (the client is gone, rmcp ended it, the host is
    /// shutting down): no new direct calls, and those in flight are
    /// cancelled.
    pub fn close(&self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        self.cancel_all();
    }

    /// Cancels every direct call in flight.
    fn cancel_all(&self) {
        let tokens: Vec<CancelToken> = self
            .shared
            .lock_calls()
            .by_id
            .values()
            .map(|c| c.cancel.clone())
            .collect();
        for token in tokens {
            token.cancel();
        }
    }

    /// Waits up to `timeout` for the direct calls in flight to be answered
    /// (their answers written); returns how many are still running.
    pub fn drain(&self, timeout: Duration) -> usize {
        let end = Instant::now() + timeout;
        let mut calls = self.shared.lock_calls();
        self.shared.draining.store(true, Ordering::SeqCst);
        while !calls.is_empty() {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            calls = match self.shared.drained.wait_timeout(calls, left) {
                Ok((calls, _)) => calls,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        calls.by_id.len() + calls.writing
    }

    /// A job for a `tools/call` request when it may run directly.
    fn direct(&self, peer: &Peer<RoleServer>, envelope: Envelope<'_>) -> Option<Job> {
        if self.shared.closed.load(Ordering::SeqCst) {
            return None;
        }
        let id = envelope.id?;
        let params: CallToolRequestParams = serde_json::from_str(envelope.params?.get()).ok()?;
        if adapter::rmcp_must_judge(&params) {
            return None;
        }
        let cancel = CancelToken::new();
        {
            let mut calls = self.shared.lock_calls();
            if calls.by_id.len() >= MAX_DIRECT
                || calls.by_id.contains_key(&id)
                || self.shared.rmcp_ids.contains(&id)
            {
                return None;
            }
            calls.by_id.insert(
                id.clone(),
                InFlight {
                    cancel: cancel.clone(),
                    cancelled_by_client: false,
                },
            );
        }
        let call = adapter::direct_call(params, peer, cancel);
        // Made before the job, so a job dropped unrun still answers.
        let reply = Reply {
            shared: self.shared.clone(),
            id: Some(id),
        };
        let shared = self.shared.clone();
        Some(Box::new(move || {
            let answer = Box::new(move |result| reply.send(result));
            shared.pipeline.call_here(&shared.runtime, call, answer);
        }))
    }

    /// `notifications/cancelled` for a direct call cancels it.
    fn cancelled(&self, params: Option<&RawValue>) {
        let Some(params) = params else { return };
        let Ok(params) = serde_json::from_str::<CancelledNotificationParam>(params.get()) else {
            return;
        };
        let Some(id) = params.request_id else { return };
        // rmcp does not answer a request its client cancelled.
        self.shared.rmcp_ids.forget(&id);
        let token = self.shared.lock_calls().by_id.get_mut(&id).map(|call| {
            call.cancelled_by_client = true;
            call.cancel.clone()
        });
        if let Some(token) = token {
            tracing::info!(%id, reason = params.reason, "cancelled");
            token.cancel();
        }
    }

    /// A line for rmcp, unless rmcp could not answer it (see [`judge`]): then
    /// it is answered here, once, with its id when it has one.
    fn judge_and_forward(&self, line: &[u8]) {
        match judge::judge(trim(line)) {
            Verdict::Rmcp(Some(id)) => {
                if self.in_flight(&id) {
                    let error = ErrorData::invalid_request(
                        format!("Invalid request: the id {id} is already used by a request in flight; use a new id"),
                        None,
                    );
                    self.answer(error, Some(id));
                    return;
                }
                self.shared.rmcp_ids.insert(id);
                self.forward(line);
            }
            Verdict::Rmcp(None) => self.forward(line),
            Verdict::Answer(error, id) => self.answer(error, id),
            Verdict::Drop => {}
        }
    }

    /// Whether a request with `id` is running (directly or in rmcp).
    fn in_flight(&self, id: &RequestId) -> bool {
        self.shared.lock_calls().by_id.contains_key(id) || self.shared.rmcp_ids.contains(id)
    }

    fn answer(&self, error: ErrorData, id: Option<RequestId>) {
        tracing::info!(id = ?id, "answering a message rmcp cannot take: {}", error.message);
        self.shared.output.send(&ServerJsonRpcMessage::error(error, id));
    }

    /// Relays bytes to rmcp, waiting while its queue is full (only the
    /// reader that owns stdin forwards, so stdin waits with it).
    fn forward(&self, bytes: &[u8]) {
        let relay = self
            .shared
            .relay
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(relay) = relay {
            // rmcp's end is gone only when its session is over.
            let _ = relay.blocking_send(bytes.to_vec());
        }
    }
}

impl Shared {
    fn lock_calls(&self) -> std::sync::MutexGuard<'_, Calls> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// An answer has been written (or given up): a drain may end now.
    fn written(&self) {
        let mut calls = self.lock_calls();
        calls.writing -= 1;
        if calls.is_empty() && self.draining.load(Ordering::SeqCst) {
            self.drained.notify_all();
        }
    }
}

/// The answer owed to one direct call: sent once, with the result, or, if
/// the call was dropped unanswered (a panic in the host), with an error, so
/// no client ever waits forever.
struct Reply {
    shared: Arc<Shared>,
    id: Option<RequestId>,
}

impl Reply {
    /// Answers the call, as rmcp would have.
    fn send(mut self, result: ToolResult) {
        let Some(id) = self.id.take() else { return };
        let cancelled_by_client = {
            let mut calls = self.shared.lock_calls();
            let call = calls.by_id.remove(&id);
            // Counted until written: a drain must not let the process exit
            // with this answer still unwritten.
            calls.writing += 1;
            call.is_some_and(|c| c.cancelled_by_client)
        };
        if cancelled_by_client {
            tracing::debug!(%id, "dropping the response to a request its client cancelled");
        } else {
            self.shared
                .output
                .send(&ServerJsonRpcMessage::response(adapter::answer(result), id));
        }
        self.shared.written();
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if let Some(id) = &self.id {
            tracing::error!(%id, "a direct call ended without a result");
            let failed = ToolResult::failure(
                id.to_string(),
                toolhost_core::Status::Error,
                toolhost_core::wire::codes::INTERNAL,
                "the host failed while running this call; see its log",
            );
            let reply = Reply {
                shared: self.shared.clone(),
                id: self.id.take(),
            };
            reply.send(failed);
        }
    }
}

impl Lines for Router {
    fn line(&self, line: &[u8], last: bool) -> Option<Job> {
        // Before the handshake is over, everything is rmcp's.
        if let Some(peer) = self.shared.peer.get() {
            if let Ok(envelope) = serde_json::from_slice::<Envelope<'_>>(trim(line)) {
                match envelope.method.as_ref() {
                    // Honoured wherever it stands in a read, and passed on.
                    "notifications/cancelled" => self.cancelled(envelope.params),
                    // Only the last line of a read may hold its reader.
                    "tools/call" if last && self.shared.direct_calls => {
                        if let Some(job) = self.direct(peer, envelope) {
                            return Some(job);
                        }
                    }
                    _ => {}
                }
            }
        }
        self.judge_and_forward(line);
        None
    }

    fn raw(&self, bytes: &[u8]) {
        let mut long = self.shared.long.lock().unwrap_or_else(PoisonError::into_inner);
        long.length += bytes.len();
        if !long.over {
            long.bytes.extend_from_slice(bytes);
            if long.length > judge::MAX_LINE + 1 {
                // Too long to serve: keep its start to find its id.
                long.over = true;
                long.bytes.truncate(judge::PREFIX);
                long.bytes.shrink_to_fit();
            }
        }
        if bytes.last() == Some(&b'\n') {
            let line = std::mem::take(&mut *long);
            drop(long);
            self.long_line(line);
        }
    }

    fn end(&self) {
        // An unterminated last line is still a message (rmcp reads it so).
        let tail = std::mem::take(&mut *self.shared.long.lock().unwrap_or_else(PoisonError::into_inner));
        if tail.length > 0 {
            self.long_line(tail);
        }
        tracing::info!("stdin closed: the client is gone; cancelling its calls");
        self.shared.gone.cancel();
        self.close();
        // rmcp answers what it took (cancelled calls answer within the
        // grace) before it sees the end of its input: at that end it waits
        // only 5 s for answers, and a plan's grace may be longer.
        let grace = Duration::from_millis(self.shared.pipeline.host().plan.host.cancel_grace_ms);
        if !self.shared.rmcp_ids.wait_empty(grace + super::DRAIN_MARGIN) {
            tracing::warn!(
                "requests rmcp took are still unanswered past the cancel grace; ending the session"
            );
        }
        // rmcp sees the end of its input and ends the session.
        drop(
            self.shared
                .relay
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
    }
}

impl Router {
    fn long_line(&self, line: LongLine) {
        if line.over {
            match judge::oversize(&line.bytes, line.length) {
                Verdict::Answer(error, id) => self.answer(error, id),
                _ => tracing::info!(bytes = line.length, "dropped a notification over the line limit"),
            }
        } else {
            self.judge_and_forward(&line.bytes);
        }
    }
}

/// A line without its newline, carriage return or byte-order mark.
fn trim(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line)
}
