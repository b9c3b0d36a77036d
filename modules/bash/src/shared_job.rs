//! Background jobs a fleet shares: a job started by a call without a
//! session (MCP 2026-07-28 over HTTP, with `[host] state_url`) belongs to
//! the caller's principal and to the handle `bash` returns, and any host of
//! the fleet answers `bash_output` and `bash_kill` for it.
//!
//! The process runs where it started: only its output and its end travel.
//! The host that runs it spools them into the state the call was lent
//! (see `toolhost_core::state`), through a grant the job keeps after the
//! call returned; a reader on any host takes them from there:
//!
//! - `<handle>`: the status: command, start, how many output chunks were
//!   written, the last report, and once it ended, how (exit code, signal,
//!   who stopped it).
//! - `<handle>/<n>`: output chunk `n`, written every [`SPOOL_EVERY`] while
//!   there is new output. Each is written once and deleted by the reader
//!   that returns it; the writer stops adding chunks while
//!   [`MAX_UNREAD_CHUNKS`] wait unread (output keeps gathering in memory,
//!   head and tail, as for a job nobody shares), so a job nobody reads
//!   holds a bounded number of keys.
//! - `<handle>/read`: how many chunks readers have taken.
//! - `<handle>/kill`: set by `bash_kill` on any host; the running host
//!   sees it within a spool tick and ends the job.
//!
//! Every read goes through the store, on the running host too (it first
//! writes what it holds), so output is returned once whichever host is
//! asked. A reader on another host sees output up to a spool tick late.
//! Two reads of one job at the same instant may return the same chunk
//! twice: the store has no lock across operations, and this is not one.
//! Output is stored as UTF-8 text: a multi-byte character split across two
//! chunks shows as U+FFFD.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use toolhost_core::state::{StateError, MAX_VALUE_BYTES};
use toolhost_core::{Context, Coordinator, GrantedState, ToolError};

use crate::output::report;
use crate::output::ring::HeadTail;
use crate::runner::{Outcome, Stop};
use crate::tools::result;

/// How often a running job writes its new output and looks for a kill.
pub const SPOOL_EVERY: Duration = Duration::from_millis(250);
/// How often a job rewrites its status when it prints nothing (so readers
/// can tell a quiet job from a lost host).
const HEARTBEAT: Duration = Duration::from_secs(5);
/// A running job whose host has not reported for this long is said to be
/// silent in what `bash_output` returns.
const SILENT_AFTER: Duration = Duration::from_secs(30);
/// Chunks that may wait unread before the writer holds new output back.
pub const MAX_UNREAD_CHUNKS: u64 = 8;
/// Bytes of each stream one chunk keeps at most (head and tail; less when
/// its JSON would not fit the store's value bound, see [`chunk`]).
const CHUNK_BYTES: usize = 256 * 1024;

/// The job's status record.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Status {
    command: String,
    started_ms: u64,
    pid: i32,
    chunks: u64,
    updated_ms: u64,
    /// Set once the job is over: the fields a read returns about its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    end: Option<Map<String, Value>>,
}

/// One slice of output.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Chunk {
    stdout: String,
    stdout_bytes: u64,
    stderr: String,
    stderr_bytes: u64,
    /// Bytes each stream's slice left out (head and tail kept).
    cut: u64,
    lossy: bool,
}

fn chunk_key(handle: &str, n: u64) -> String {
    format!("{handle}/{n}")
}

fn cursor_key(handle: &str) -> String {
    format!("{handle}/read")
}

fn kill_key(handle: &str) -> String {
    format!("{handle}/kill")
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn unavailable(e: StateError) -> ToolError {
    ToolError::new(
        "unavailable",
        format!("the host's shared state store cannot be reached ({e}); retry in a moment"),
    )
    .retryable(true)
}

/// Whether a call may start a shared job: it is lent state. The grant is
/// the test: a host lends state only to calls without a session.
pub struct Prepared {
    handle: String,
    principal: String,
    state: GrantedState,
    status: Status,
}

impl Prepared {
    /// The job was not started after all: its status goes (and the grant,
    /// with the handle).
    pub fn abandon(self) {
        let _ = self.state.delete(&self.handle);
    }
}

/// Prepares a shared job for `command`, before it is spawned: a handle, a
/// grant to outlive the call, and the status written, so that a read on
/// any host finds the job from the moment `bash` answers. `Ok(None)`: this
/// call is lent no state; the job stays in this host's memory, by session.
pub fn prepare(
    ctx: &Context<'_>,
    coordinator: &Coordinator,
    command: &str,
) -> Result<Option<Prepared>, ToolError> {
    // A host lends state only to a call whose principal it identified.
    let Some(principal) = ctx.principal() else {
        return Ok(None);
    };
    // Held until the job's end is written (or its worker ends): a job may
    // run for longer than any fixed lifetime.
    let grant = match ctx.state_grant(None) {
        Ok(grant) => grant,
        Err(StateError::Unsupported) => return Ok(None),
        Err(e) => return Err(unavailable(e)),
    };
    let state = GrantedState::new(coordinator, grant);
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes)
        .map_err(|e| ToolError::new("spawn_failed", format!("no randomness for a job handle: {e}")))?;
    let handle = format!(
        "job-{}",
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    );
    let now = now_ms();
    let status = Status {
        command: command.to_string(),
        started_ms: now,
        pid: 0,
        chunks: 0,
        updated_ms: now,
        end: None,
    };
    let text = serde_json::to_string(&status).unwrap_or_default();
    state.put(&handle, &text, None).map_err(unavailable)?;
    Ok(Some(Prepared {
        handle,
        principal: principal.to_string(),
        state,
        status,
    }))
}

/// Where a spool takes output from (the job's buffers).
pub trait Output {
    /// Whether anything was printed since the last take.
    fn has_output(&self) -> bool;
    /// Takes what was printed (stdout, stderr).
    fn take(&self) -> (HeadTail, HeadTail);
}

/// The running side: what the job's spool thread writes. It runs apart
/// from the thread that drives the command, so a slow or unreachable store
/// never holds up the command's pipes, its timeout or a local kill.
#[derive(Debug)]
pub struct Spool {
    handle: String,
    principal: String,
    /// The grant; `None` once the job's end is written (released then, and
    /// nothing is written after: a reader may already have removed the
    /// records, which a late write would bring back).
    state: Option<GrantedState>,
    status: Status,
    last_status: Instant,
    /// A chunk taken from the buffers whose write failed: written first next
    /// time, so a store outage loses no output (at most this one chunk and
    /// the buffers are held).
    pending: Option<Chunk>,
}

impl Spool {
    /// The spool of a prepared job whose reaper is `pid`.
    pub fn new(prepared: Prepared, pid: i32) -> Spool {
        let mut status = prepared.status;
        status.pid = pid;
        Spool {
            handle: prepared.handle,
            principal: prepared.principal,
            state: Some(prepared.state),
            status,
            last_status: Instant::now() - HEARTBEAT,
            pending: None,
        }
    }

    /// The handle `bash` returned.
    pub fn handle(&self) -> &str {
        &self.handle
    }

    /// The principal the job belongs to.
    pub fn principal(&self) -> &str {
        &self.principal
    }

    /// Every [`SPOOL_EVERY`]: writes new output (and the status, with it or
    /// every [`HEARTBEAT`]); answers whether a `bash_kill` on any host asked
    /// for the job's end.
    pub fn tick(&mut self, output: &dyn Output) -> bool {
        let Some(state) = &self.state else { return false };
        let killed = matches!(state.get(&kill_key(&self.handle)), Ok(Some(_)));
        if self.write_chunk(output, false) || self.last_status.elapsed() >= HEARTBEAT {
            self.write_status();
        }
        killed
    }

    /// Writes what the buffers hold now (a read on this host is about to
    /// take it from the store).
    pub fn flush(&mut self, output: &dyn Output) {
        if self.write_chunk(output, false) {
            self.write_status();
        }
    }

    /// The job ended: every chunk first, then the status with the end, once
    /// (a read that sees the end removes the records: nothing may follow
    /// it); then the grant goes. The end is tried a few times, a store
    /// outage at that moment being the likeliest reason it fails.
    pub fn finish(&mut self, output: &dyn Output, outcome: &Outcome) {
        if self.state.is_none() {
            return;
        }
        while self.write_chunk(output, true) {}
        let mut end = Map::new();
        end_fields(&mut end, outcome);
        self.status.end = Some(end);
        for _ in 0..FINAL_TRIES {
            if self.write_status() {
                break;
            }
            std::thread::sleep(SPOOL_EVERY);
        }
        self.state = None;
    }

    /// The job never started: its status goes, and the grant.
    pub fn abandon(&mut self) {
        if let Some(state) = self.state.take() {
            let _ = state.delete(&self.handle);
        }
    }

    /// Writes the next chunk (the one a failed write held, or the buffers'
    /// new output, when readers have room for it, or `last`); whether one
    /// was written.
    fn write_chunk(&mut self, output: &dyn Output, last: bool) -> bool {
        let Some(state) = &self.state else { return false };
        if self.pending.is_none() && output.has_output() && (last || self.has_room()) {
            let (out, err) = output.take();
            self.pending = Some(chunk(&out, &err));
        }
        let Some(pending) = &self.pending else {
            return false;
        };
        let text = serde_json::to_string(pending).unwrap_or_default();
        match state.put(&chunk_key(&self.handle, self.status.chunks), &text, None) {
            Ok(()) => {
                self.pending = None;
                self.status.chunks += 1;
                true
            }
            // Sized to fit, so this is a bug; dropping the chunk beats
            // holding every later one back behind it.
            Err(StateError::TooLarge(_)) | Err(StateError::BadRequest(_)) => {
                self.pending = None;
                false
            }
            Err(_) => false,
        }
    }

    fn write_status(&mut self) -> bool {
        let Some(state) = &self.state else { return false };
        self.status.updated_ms = now_ms();
        let text = serde_json::to_string(&self.status).unwrap_or_default();
        let written = state.put(&self.handle, &text, None).is_ok();
        if written {
            self.last_status = Instant::now();
        }
        written
    }

    /// Whether readers have taken enough chunks for another.
    fn has_room(&self) -> bool {
        let read = self
            .state
            .as_ref()
            .and_then(|state| state.get(&cursor_key(&self.handle)).ok())
            .flatten()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        self.status.chunks.saturating_sub(read) < MAX_UNREAD_CHUNKS
    }
}

/// Tries to write a job's end before giving up.
const FINAL_TRIES: usize = 8;

/// A chunk of `out` and `err` whose JSON fits the store's value bound:
/// escaping can make JSON text up to six times the bytes it holds
/// (control bytes as `\u00XX`), so the slice kept shrinks until it fits.
fn chunk(out: &HeadTail, err: &HeadTail) -> Chunk {
    let mut budget = CHUNK_BYTES;
    loop {
        let o = out.render(budget);
        let e = err.render(budget);
        let chunk = Chunk {
            stdout: o.text,
            stdout_bytes: out.total(),
            stderr: e.text,
            stderr_bytes: err.total(),
            cut: o.cut + e.cut,
            lossy: o.lossy || e.lossy,
        };
        let size = serde_json::to_string(&chunk).map_or(0, |t| t.len());
        if size <= MAX_VALUE_BYTES || budget <= 1024 {
            return chunk;
        }
        budget /= 2;
    }
}

/// The fields a read returns about a job's end (shared with jobs nobody
/// shares).
pub fn end_fields(out: &mut Map<String, Value>, outcome: &Outcome) {
    out.insert("running".into(), json!(false));
    result::exit_fields(out, outcome.exit);
    out.insert("duration_ms".into(), json!(outcome.duration.as_millis() as u64));
    let how = match outcome.stopped {
        Some(Stop::Timeout) => Some("timeout"),
        Some(Stop::Killed) => Some("bash_kill"),
        Some(Stop::Shutdown) => Some("shutdown"),
        Some(Stop::Cancelled) => Some("cancelled"),
        None => None,
    };
    if let Some(how) = how {
        out.insert("stopped_by".into(), json!(how));
    }
    if !outcome.notes.is_empty() {
        out.insert("warnings".into(), json!(outcome.notes));
    }
}

/// The `expired_handle` error: no job under this handle for this caller.
pub fn expired(handle: &str) -> ToolError {
    ToolError::new(
        "expired_handle",
        format!(
            "no background job `{handle}` for you: its end was already reported, it expired (a day after its \
             last report), or it never existed. Handles are per caller: another caller's job is not yours to read."
        ),
    )
}

/// What the caller's store says of a handle.
pub enum Lookup {
    /// Not a fleet job's handle (those of jobs kept in memory are `job-N`),
    /// or this call is lent no state: the caller's in-memory jobs answer.
    InMemory,
    /// No such job for this caller: `expired_handle`.
    Gone,
    /// The job's status, as just read.
    Found(JobStatus),
}

/// A fleet job's status record, as one read of the store found it.
pub struct JobStatus(Status);

impl JobStatus {
    /// Whether the job's end is written.
    pub fn is_over(&self) -> bool {
        self.0.end.is_some()
    }
}

/// Reads the status of the caller's job under `handle`.
pub fn lookup(ctx: &Context<'_>, handle: &str) -> Result<Lookup, ToolError> {
    if !is_handle(handle) {
        return Ok(Lookup::InMemory);
    }
    let text = match ctx.state_get(handle) {
        Ok(Some(text)) => text,
        Ok(None) => return Ok(Lookup::Gone),
        Err(StateError::Unsupported) => return Ok(Lookup::InMemory),
        Err(e) => return Err(unavailable(e)),
    };
    serde_json::from_str(&text)
        .map(|status| Lookup::Found(JobStatus(status)))
        .map_err(|e| ToolError::new("internal", format!("the job's status record is damaged: {e}")))
}

/// The status of a job the caller is known to have (it may have changed
/// since the last read); `expired_handle` when it is gone meanwhile.
pub fn current(ctx: &Context<'_>, handle: &str) -> Result<JobStatus, ToolError> {
    match lookup(ctx, handle)? {
        Lookup::Found(status) => Ok(status),
        Lookup::Gone | Lookup::InMemory => Err(expired(handle)),
    }
}

/// Whether `id` has the shape of a fleet job's handle: `job-` and 16
/// lowercase hex digits (checked before it becomes part of a store key).
pub fn is_handle(id: &str) -> bool {
    id.strip_prefix("job-")
        .is_some_and(|hex| hex.len() == 16 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

/// What a job printed since the last read (up to `status`), from the
/// store; once it is over, its end too, and its records are removed: the
/// end is reported once.
pub fn read(
    ctx: &Context<'_>,
    handle: &str,
    status: JobStatus,
    cap: usize,
    budget: usize,
) -> Result<Map<String, Value>, ToolError> {
    let JobStatus(status) = status;
    // The writer never leaves more than MAX_UNREAD_CHUNKS unread (and two
    // more at the end): a cursor lost to expiry or eviction costs no more
    // than that many lookups.
    let floor = status.chunks.saturating_sub(MAX_UNREAD_CHUNKS + 2);
    let read_upto = ctx
        .state_get(&cursor_key(handle))
        .map_err(unavailable)?
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0)
        .max(floor);
    let mut missing = 0u64;
    let (mut stdout, mut stderr) = (HeadTail::new(cap), HeadTail::new(cap));
    let (mut out_bytes, mut err_bytes, mut cut, mut lossy) = (0u64, 0u64, 0u64, false);
    for n in read_upto..status.chunks {
        let chunk = ctx
            .state_get(&chunk_key(handle, n))
            .map_err(unavailable)?
            .and_then(|text| serde_json::from_str::<Chunk>(&text).ok());
        let Some(chunk) = chunk else {
            missing += 1; // expired, evicted, or another read took it
            continue;
        };
        stdout.push(chunk.stdout.as_bytes());
        stderr.push(chunk.stderr.as_bytes());
        out_bytes += chunk.stdout_bytes;
        err_bytes += chunk.stderr_bytes;
        cut += chunk.cut;
        lossy |= chunk.lossy;
    }
    if status.chunks > read_upto {
        ctx.state_put(&cursor_key(handle), &status.chunks.to_string(), None)
            .map_err(unavailable)?;
        for n in read_upto..status.chunks {
            let _ = ctx.state_delete(&chunk_key(handle, n));
        }
    }
    let mut out = Map::new();
    out.insert("id".into(), json!(handle));
    report::streams(&mut out, &stdout, &stderr, budget);
    // The byte counts are the command's, not the stored slices'.
    out.insert("stdout_bytes".into(), json!(out_bytes));
    out.insert("stderr_bytes".into(), json!(err_bytes));
    if cut > 0 {
        let shown = out.get("cut_bytes").and_then(Value::as_u64).unwrap_or(0);
        out.insert("truncated".into(), json!(true));
        out.insert("cut_bytes".into(), json!(shown + cut));
        out.entry("cut_note").or_insert_with(|| {
            json!("parts of the output were dropped in the middle (head and tail kept); no copy is kept")
        });
    }
    if missing > 0 {
        out.insert("missing_chunks".into(), json!(missing));
        out.insert(
            "missing_note".into(),
            json!(format!(
                "{missing} slice(s) of this job's output were gone from the store before this read (expired, \
                 evicted by newer entries, or returned to a read at the same moment)"
            )),
        );
    }
    if lossy {
        out.insert(
            "encoding".into(),
            json!("the output is not valid UTF-8; invalid bytes are shown as U+FFFD"),
        );
    }
    match status.end {
        Some(end) => {
            out.extend(end);
            for key in [handle.to_string(), cursor_key(handle), kill_key(handle)] {
                let _ = ctx.state_delete(&key);
            }
        }
        None => {
            let now = now_ms();
            out.insert("running".into(), json!(true));
            out.insert("elapsed_ms".into(), json!(now.saturating_sub(status.started_ms)));
            let silent = now.saturating_sub(status.updated_ms);
            if silent > SILENT_AFTER.as_millis() as u64 {
                out.insert("host_silent_ms".into(), json!(silent));
                out.insert(
                    "note".into(),
                    json!(format!(
                        "the host running this job has not reported for {} s: it may have stopped (its jobs end \
                         with it). The job is forgotten a day after its last report.",
                        silent / 1000
                    )),
                );
            }
        }
    }
    Ok(out)
}

/// Asks the job's host to end it; the caller then waits for the end.
pub fn request_kill(ctx: &Context<'_>, handle: &str) -> Result<(), ToolError> {
    ctx.state_put(&kill_key(handle), "1", None).map_err(unavailable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_fits_the_store_however_its_bytes_escape() {
        // Control bytes escape to six bytes of JSON each; invalid UTF-8
        // becomes three-byte U+FFFD.
        for byte in [0x01u8, 0xff, b'a'] {
            let mut out = HeadTail::new(4 * 1024 * 1024);
            out.push(&vec![byte; 3 * 1024 * 1024]);
            let chunk = chunk(&out, &HeadTail::new(16));
            let size = serde_json::to_string(&chunk).unwrap().len();
            assert!(size <= MAX_VALUE_BYTES, "byte {byte:#x}: {size} bytes of JSON");
            assert_eq!(chunk.stdout_bytes, 3 * 1024 * 1024);
            assert!(chunk.cut > 0, "what was left out is counted");
        }
    }

    #[test]
    fn only_fleet_handles_become_store_keys() {
        assert!(is_handle("job-0123456789abcdef"));
        for id in [
            "job-1",
            "",
            "job-0123456789ABCDEF",
            "job-0123456789abcdef/0",
            "job-0123456789abcde",
        ] {
            assert!(!is_handle(id), "{id:?}");
        }
    }
}
