//! The host's side of one isolated module: its worker process, the calls
//! in flight on it, and what happens when it dies (every in-flight call is
//! answered `module_crashed`; the next call restarts it, after a backoff;
//! five crashes in a minute and the module answers `module_failed`).

use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::path::PathBuf;
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use abi_stable::std_types::RStr;
use serde_json::{json, Value};
use toolhost_core::abi::{level, FfiContext, NO_DEADLINE};
use toolhost_core::wire::codes;
use toolhost_core::{Manifest, Status, ToolResult};

use super::bounds::{CallCount, EventNames, Meter, WorkerLimits};
use super::error::{Step, SupervisorError};
use super::frame::{self, Frame, Kind, ReadError};
use crate::context::CallContext;
use crate::events::EventBus;
use crate::loader::{log_line, ModuleError};
use toolhost_supervise::{describe, Ended, Process, Restarts, Unavailable, MAX_CRASHES, WINDOW};

/// Names the `toolhost` binary to run workers (and the reaper of MCP
/// servers and hooks) with, for programs that embed the host library (their
/// own executable has no worker subcommand). Only the first call counts.
pub fn set_worker_program(path: PathBuf) {
    toolhost_supervise::program::set(path);
}

/// What one call hears from the reader thread.
enum Reply {
    Progress(String),
    /// A state request of the call, to answer from its context.
    State(String),
    Log(u8, String),
    Done(String),
    Crashed(Ended),
}

/// How to start the worker again.
struct Launch {
    library: PathBuf,
    label: String,
    memory_limit_mb: Option<u64>,
    /// The mount envelope, known after the first start.
    envelope: Mutex<Option<String>>,
}

/// A running worker.
struct Live {
    /// Killed from any thread (a stuck call, the start's watchdog); waited
    /// for by the reader thread.
    process: Arc<Process>,
    /// Its stdin; `None` once closed (shutdown).
    input: Mutex<Option<ChildStdin>>,
    /// Calls waiting for an answer; `None` once the worker is dead.
    pending: Mutex<Option<HashMap<u64, Waiter>>>,
    /// Killed by the host because a call ignored cancellation.
    killed: AtomicBool,
    /// Being shut down by the host (not a crash).
    closing: AtomicBool,
    /// Grants the module was given (see `toolhost_plan::grants`): released
    /// when the worker ends, since the module can no longer release them.
    grants: Mutex<Vec<String>>,
}

/// A call in flight: where its replies go, and what the worker sent for it.
struct Waiter {
    reply: mpsc::SyncSender<Reply>,
    count: CallCount,
}

impl Live {
    /// Keeps the token when `request` asked for a grant and got one, so
    /// the grant ends with this worker. Tokens released meanwhile are
    /// dropped from the list as it grows, so it stays as short as the
    /// grants held (the table caps those per mount).
    fn note_grant(&self, request: &str, answer: &str) {
        use toolhost_core::state::{Answer, Request, MAX_GRANTS_PER_MOUNT};
        if !matches!(serde_json::from_str(request), Ok(Request::Grant { .. })) {
            return;
        }
        let Ok(Answer {
            ok: true,
            value: Some(token),
            ..
        }) = serde_json::from_str(answer)
        else {
            return;
        };
        let mut grants = self.grants.lock().unwrap_or_else(PoisonError::into_inner);
        if grants.len() >= MAX_GRANTS_PER_MOUNT {
            grants.retain(|t| toolhost_plan::grants::holds(t));
        }
        grants.push(token);
    }

    fn send(&self, frame: &Frame) -> std::io::Result<()> {
        let line = frame.line();
        let mut input = self.input.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(input) = input.as_mut() else {
            return Err(std::io::Error::other("the worker's input is closed"));
        };
        input.write_all(&line)?;
        input.flush()
    }
}

/// One isolated module's worker, restarted as needed.
pub struct Supervisor {
    /// The module's name, for messages.
    name: Mutex<String>,
    launch: Launch,
    events: Arc<EventBus>,
    state: Restarts<Live>,
    next_id: AtomicU64,
    /// What a worker may send.
    limits: WorkerLimits,
    /// Event names its workers contributed.
    names: EventNames,
    /// `module:report` events kept at the first mount.
    reports: std::sync::atomic::AtomicUsize,
    /// Granted state requests being answered (see `answer_granted`).
    granted_in_flight: Arc<std::sync::atomic::AtomicUsize>,
}

/// A started worker and what it said at mount.
pub struct Started {
    /// The library's manifest.
    pub manifest: Manifest,
    /// Each tool's spec as JSON text.
    pub specs: Vec<String>,
    /// Time to start the worker and open the library.
    pub load_time: Duration,
}

impl Supervisor {
    /// A supervisor for the library at `library`, not started yet.
    pub fn new(
        library: PathBuf,
        label: String,
        memory_limit_mb: Option<u64>,
        limits: WorkerLimits,
        events: Arc<EventBus>,
    ) -> Arc<Self> {
        Arc::new(Supervisor {
            name: Mutex::new(label.clone()),
            launch: Launch {
                library,
                label,
                memory_limit_mb,
                envelope: Mutex::new(None),
            },
            events,
            state: Restarts::default(),
            next_id: AtomicU64::new(1),
            limits,
            names: EventNames::default(),
            reports: std::sync::atomic::AtomicUsize::new(0),
            granted_in_flight: Default::default(),
        })
    }

    fn name(&self) -> String {
        self.name.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Starts the worker for the first time: `envelope` checks the manifest
    /// and gives the mount envelope.
    pub fn first_start(
        self: &Arc<Self>,
        envelope: impl FnOnce(&Manifest) -> Result<String, ModuleError>,
    ) -> Result<Started, SupervisorError> {
        let (live, started) = self.start(Some(Box::new(envelope)))?;
        self.state.install(live);
        Ok(started)
    }

    /// Spawns a worker and walks it through open and mount.
    #[allow(clippy::type_complexity)]
    fn start(
        self: &Arc<Self>,
        envelope: Option<Box<dyn FnOnce(&Manifest) -> Result<String, ModuleError> + '_>>,
    ) -> Result<(Arc<Live>, Started), SupervisorError> {
        let started = std::time::Instant::now();
        let label = &self.launch.label;
        let program = toolhost_supervise::program::get().map_err(|error| SupervisorError::Program {
            label: label.clone(),
            error,
        })?;
        let mut command = Command::new(program);
        command
            .arg("__worker")
            .arg("--parent")
            .arg(std::process::id().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some(mb) = self.launch.memory_limit_mb {
            command.arg("--memory-limit-mb").arg(mb.to_string());
        }
        let mut child = toolhost_supervise::spawn(command).map_err(|error| SupervisorError::Spawn {
            label: label.clone(),
            error,
        })?;
        let pipes = (child.stdin.take(), child.stdout.take());
        let process = Arc::new(Process::new(child));
        let (Some(input), Some(output)) = pipes else {
            process.kill();
            process.wait();
            return Err(SupervisorError::Pipes { label: label.clone() });
        };
        let live = Arc::new(Live {
            process: process.clone(),
            input: Mutex::new(Some(input)),
            pending: Mutex::new(Some(HashMap::new())),
            killed: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            grants: Mutex::default(),
        });
        let mut reader = BufReader::new(output);
        let mut meter = Meter::new(self.limits.clone(), self.names.clone());
        // A worker that hangs in open or mount is killed at the deadline:
        // its reads then end, and the start fails instead of blocking every
        // call (other callers wait for it).
        let limit = start_timeout();
        let (finished, watch) = mpsc::channel::<()>();
        let timed_out = Arc::new(AtomicBool::new(false));
        {
            let (watched, timed_out) = (process.clone(), timed_out.clone());
            let watchdog = std::thread::Builder::new()
                .name(format!("toolhost-worker-start-{}", process.id()))
                .spawn(move || {
                    if let Err(mpsc::RecvTimeoutError::Timeout) = watch.recv_timeout(limit) {
                        timed_out.store(true, Ordering::SeqCst);
                        watched.kill();
                    }
                });
            if let Err(error) = watchdog {
                process.kill();
                process.wait();
                return Err(SupervisorError::Thread {
                    label: label.clone(),
                    what: "watch its worker's start",
                    error,
                });
            }
        }
        let first = envelope.is_some();
        let handshake = (|| -> Result<Started, Step> {
            live.send(&Frame::new(Kind::Open).text(self.launch.library.to_string_lossy()))
                .map_err(Step::Talk)?;
            let manifest_frame = self.expect(&mut reader, &mut meter, Kind::Manifest, first)?;
            let manifest: Manifest =
                serde_json::from_str(manifest_frame.body_text()).map_err(Step::Manifest)?;
            // The name is the one checked against the plan at mount: a
            // restarted worker (whose library could write any frame
            // first) may not rename the module its logs and errors name.
            if envelope.is_some() {
                *self.name.lock().unwrap_or_else(PoisonError::into_inner) = manifest.name.clone();
            } else if manifest.name != self.name() {
                return Err(Step::Renamed {
                    named: manifest.name,
                    expected: self.name(),
                });
            }
            let load_time = started.elapsed();
            let text = match envelope {
                Some(make) => {
                    let text = make(&manifest).map_err(Step::Refused)?;
                    *self
                        .launch
                        .envelope
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = Some(text.clone());
                    text
                }
                None => self
                    .launch
                    .envelope
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone()
                    .unwrap_or_else(|| "{}".into()),
            };
            live.send(&Frame::new(Kind::Mount).body(&text))
                .map_err(Step::Talk)?;
            let mounted = self.expect(&mut reader, &mut meter, Kind::Mounted, first)?;
            Ok(Started {
                manifest,
                specs: mounted.list.unwrap_or_default(),
                load_time,
            })
        })();
        drop(finished);
        let timed_out = timed_out.load(Ordering::SeqCst);
        match handshake {
            Ok(started) => {
                let me = self.clone();
                let watched = live.clone();
                std::thread::Builder::new()
                    .name(format!("toolhost-worker-{}", process.id()))
                    .spawn(move || me.read(watched, reader, meter))
                    .map_err(|error| SupervisorError::Thread {
                        label: label.clone(),
                        what: "start its reader thread",
                        error,
                    })?;
                Ok((live, started))
            }
            Err(_) if timed_out => {
                drop(live);
                process.kill();
                process.wait();
                Err(SupervisorError::TimedOut {
                    label: label.clone(),
                    limit_ms: limit.as_millis(),
                })
            }
            Err(step) => {
                drop(live);
                process.kill();
                let status = process.wait();
                Err(step.into_error(label, || describe(status).why))
            }
        }
    }

    /// Reads frames until one of kind `want`, handling logs and events on
    /// the way. [`Step::Eof`] when the worker ends first; the worker's own
    /// message when it reports an error.
    /// `first` at the first start, whose reports `toolhost check` keeps.
    fn expect(
        &self,
        reader: &mut BufReader<ChildStdout>,
        meter: &mut Meter,
        want: Kind,
        first: bool,
    ) -> Result<Frame, Step> {
        let mut buf = Vec::new();
        loop {
            let frame = match frame::read_frame(reader, &mut buf, self.limits.max_frame_bytes) {
                Ok(frame) => frame,
                Err(ReadError::Eof) => return Err(Step::Eof),
                Err(e) => return Err(Step::Protocol(e)),
            };
            meter.admit(&frame).map_err(|e| Step::Protocol(e.into()))?;
            match frame.t {
                t if t == want => return Ok(frame),
                Kind::Error => return Err(Step::Worker(frame.text.unwrap_or_default())),
                _ => self.side_effect(frame, first),
            }
        }
    }

    /// Logs and events, which need no call.
    /// `mounting` while the worker first opens and mounts the library:
    /// only then is a `module:report` kept for `toolhost check` (as for an
    /// in-process module, which reports from `mount`); later ones are
    /// passed to observers but not kept, so a worker cannot grow the
    /// host's list without end.
    fn side_effect(&self, frame: Frame, mounting: bool) {
        match frame.t {
            Kind::Log => log_line(
                &self.name(),
                None,
                frame.level.unwrap_or(level::INFO),
                frame.text.as_deref().unwrap_or(""),
            ),
            Kind::Event => {
                let event = frame.text.as_deref().unwrap_or("");
                // The host's own events say what the pipeline did; a
                // module (which can write any frame on its protocol
                // descriptor) must not speak for it to their observers.
                if crate::events::HOST_EVENTS.contains(&event) {
                    tracing::warn!(module = %self.name(), event, "ignored a host event sent by an isolated module's worker");
                    return;
                }
                let payload: Value = serde_json::from_str(frame.body_text()).unwrap_or(Value::Null);
                if mounting && event == crate::events::MODULE_REPORT {
                    // Kept for the host's life: a few, of a few KiB each.
                    let small = frame.body_text().len() <= MAX_REPORT_BYTES;
                    if small && self.reports.fetch_add(1, Ordering::SeqCst) < MAX_REPORTS {
                        self.events.record_report(&self.name(), &payload);
                    } else {
                        tracing::warn!(module = %self.name(), "ignored a module report past the {MAX_REPORTS} kept, or longer than {MAX_REPORT_BYTES} bytes");
                    }
                }
                self.events.emit(event, &payload);
            }
            Kind::Events => self.events.contribute(frame.list.unwrap_or_default()),
            other => tracing::debug!(module = %self.name(), "ignored a {other:?} frame from a worker"),
        }
    }

    /// The reader thread: routes the worker's frames to their calls, and
    /// answers every call in flight when the worker ends.
    fn read(self: Arc<Self>, live: Arc<Live>, mut reader: BufReader<ChildStdout>, mut meter: Meter) {
        let mut buf = Vec::new();
        // Set when the worker broke the protocol (or went past a cap) and
        // the host killed it.
        let mut broke: Option<ReadError> = None;
        loop {
            let read = frame::read_frame(&mut reader, &mut buf, self.limits.max_frame_bytes)
                .and_then(|frame| meter.admit(&frame).map(|()| frame).map_err(ReadError::from))
                .and_then(|frame| self.route(&live, &meter, frame).map_err(ReadError::from));
            match read {
                Ok(()) => {}
                Err(ReadError::Eof) => break,
                Err(e) => {
                    // Killed, not waited on: a worker that broke the
                    // protocol may go on living, and its calls would
                    // never be answered.
                    tracing::error!(module = %self.name(), "worker {e}; ending it");
                    live.process.kill();
                    broke = Some(e);
                    break;
                }
            }
        }
        drop(reader);
        drop(buf);
        let status = live.process.wait();
        let mut ended = describe(status);
        let killed = live.killed.load(Ordering::SeqCst);
        if killed {
            ended.why =
                "was killed by the host because a call ignored cancellation past the grace period".into();
        }
        if let Some(broke) = broke {
            ended.why = format!("{broke}, so the host killed it");
            if let (ReadError::Exceeded(cap), Value::Object(details)) = (&broke, &mut ended.details) {
                details.insert("limit".into(), cap.details());
            }
        }
        let grants = std::mem::take(&mut *live.grants.lock().unwrap_or_else(PoisonError::into_inner));
        toolhost_plan::grants::release_all(&grants);
        let orphans = live
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .unwrap_or_default();
        let closing = live.closing.load(Ordering::SeqCst);
        let crashes = self.state.ended(&live, !closing && !killed);
        if !closing {
            tracing::error!(
                module = %self.name(),
                pid = live.process.id(),
                in_flight = orphans.len(),
                crashes,
                "isolated module's worker {}",
                ended.why
            );
        }
        for (_, waiter) in orphans {
            let _ = waiter.reply.send(Reply::Crashed(ended.clone()));
        }
    }

    /// Hands a frame to the call it belongs to (counted against that
    /// call's caps), or to [`Self::side_effect`].
    fn route(&self, live: &Arc<Live>, meter: &Meter, frame: Frame) -> Result<(), super::bounds::Exceeded> {
        let reply = match frame.t {
            Kind::GrantedState => {
                self.answer_granted(live, frame);
                return Ok(());
            }
            Kind::Result => Reply::Done(frame.body_text().to_string()),
            Kind::Progress => Reply::Progress(frame.body_text().to_string()),
            Kind::State => Reply::State(frame.body_text().to_string()),
            Kind::Log if frame.id.is_some() => Reply::Log(
                frame.level.unwrap_or(level::INFO),
                frame.text.clone().unwrap_or_default(),
            ),
            _ => {
                self.side_effect(frame, false);
                return Ok(());
            }
        };
        let mut pending = live.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let (Some(map), Some(id)) = (pending.as_mut(), frame.id) else {
            return Ok(());
        };
        if frame.t == Kind::Result {
            if let Some(waiter) = map.remove(&id) {
                let _ = waiter.reply.send(reply);
            }
            return Ok(());
        }
        if let Some(waiter) = map.get_mut(&id) {
            meter.admit_for_call(&mut waiter.count, frame.t)?;
            // Progress and log lines queue up only so far behind the call
            // that forwards them; past that (or past their size) they are
            // dropped, never buffered without bound.
            let fits = match &reply {
                Reply::Progress(json) => json.len() <= MAX_REPLY_BYTES,
                Reply::Log(_, text) => text.len() <= MAX_REPLY_BYTES,
                _ => true,
            };
            let state = matches!(reply, Reply::State(_));
            let delivered = fits && waiter.reply.try_send(reply).is_ok();
            if !delivered && state {
                // Never left unanswered: the worker's call waits for it.
                let busy = toolhost_core::state::Answer::failed("unavailable", "the host is busy; retry");
                let _ = live.send(&Frame::new(Kind::StateAnswer).id(id).body(&busy.to_json()));
            } else if !delivered {
                tracing::debug!(module = %self.name(), call = id, "dropped a progress report or log line of a call");
            }
        }
        Ok(())
    }

    /// Answers the coordinator's granted state request on a thread of its
    /// own (a store round trip must not hold up the reader), at most
    /// [`MAX_GRANTED_IN_FLIGHT`] at once: past that, `unavailable` at once,
    /// so a worker flooding requests costs the host no threads.
    fn answer_granted(&self, live: &Arc<Live>, frame: Frame) {
        let Some(id) = frame.id else { return };
        let busy =
            || toolhost_core::state::Answer::failed("unavailable", "the host is busy; retry").to_json();
        if self.granted_in_flight.fetch_add(1, Ordering::SeqCst) >= MAX_GRANTED_IN_FLIGHT {
            self.granted_in_flight.fetch_sub(1, Ordering::SeqCst);
            let _ = live.send(&Frame::new(Kind::StateAnswer).id(id).body(&busy()));
            return;
        }
        let (answering, scope, request) = (live.clone(), self.name(), frame.body_text().to_string());
        let in_flight = self.granted_in_flight.clone();
        let answered = std::thread::Builder::new()
            .name("toolhost-granted-state".into())
            .spawn(move || {
                let answer = toolhost_plan::grants::answer(&scope, &request);
                let _ = answering.send(&Frame::new(Kind::StateAnswer).id(id).body(&answer));
                in_flight.fetch_sub(1, Ordering::SeqCst);
            });
        if answered.is_err() {
            self.granted_in_flight.fetch_sub(1, Ordering::SeqCst);
            let _ = live.send(&Frame::new(Kind::StateAnswer).id(id).body(&busy()));
        }
    }

    /// The live worker, started (after the backoff) if there is none.
    /// A caller waits for another caller's restart only as long as its
    /// own deadline and cancellation allow.
    fn live(self: &Arc<Self>, ctx: &CallContext) -> Result<Arc<Live>, ToolResult> {
        let started = self.state.live(
            || {
                let (live, _) = self.start(None)?;
                tracing::info!(module = %self.name(), pid = live.process.id(), "restarted the isolated module's worker");
                toolhost_telemetry::metrics::worker_restarted(&self.name());
                Ok::<_, SupervisorError>(live)
            },
            || ctx.is_cancelled() || ctx.remaining_ms() == 0,
        );
        started
            .map_err(|why| unavailable_result(&why, &format!("module '{}'", self.name()), ctx.is_cancelled()))
    }

    /// Runs one call in the worker and returns its ToolResult as JSON text.
    /// Blocks until the worker answers or dies.
    pub fn call(self: &Arc<Self>, tool: &str, call_json: &str, ctx: &CallContext) -> String {
        let live = match self.live(ctx) {
            Ok(live) => live,
            Err(result) => return encode(&result),
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::sync_channel(REPLY_QUEUE);
        {
            let mut pending = live.pending.lock().unwrap_or_else(PoisonError::into_inner);
            match pending.as_mut() {
                Some(map) => {
                    map.insert(
                        id,
                        Waiter {
                            reply: tx,
                            count: CallCount::default(),
                        },
                    );
                }
                None => {
                    return encode(&crashed_result(&self.name(), "had just ended", json!({})));
                }
            }
        }
        let mut frame = Frame::new(Kind::Call).id(id).text(tool).body(call_json);
        let left = ctx.remaining_ms();
        if left != NO_DEADLINE {
            frame.deadline_ms = Some(left);
        }
        if let Err(e) = live.send(&frame) {
            // The reader answers when it sees the worker's end.
            tracing::debug!(module = %self.name(), "could not send a call to the worker: {e}");
        }
        let mut cancel_sent = false;
        loop {
            match rx.recv_timeout(Duration::from_millis(20)) {
                Ok(Reply::Done(text)) => return text,
                Ok(Reply::Progress(json)) => ctx.progress(RStr::from_str(&json)),
                Ok(Reply::Log(lvl, message)) => ctx.log(lvl, RStr::from_str(&message)),
                Ok(Reply::State(request)) => {
                    let answer = ctx.state(RStr::from_str(&request));
                    live.note_grant(&request, answer.as_str());
                    let _ = live.send(&Frame::new(Kind::StateAnswer).id(id).body(answer.as_str()));
                }
                Ok(Reply::Crashed(ended)) => {
                    return encode(&crashed_result(&self.name(), &ended.why, ended.details))
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if !cancel_sent && ctx.is_cancelled() {
                        cancel_sent = true;
                        let _ = live.send(&Frame::new(Kind::Cancel).id(id));
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return encode(&crashed_result(&self.name(), "ended", json!({})))
                }
            }
        }
    }

    /// Whether a worker is running now (never starts one; `false` while
    /// one is being started): a session's end need not reach a worker that
    /// was not running, since a new one holds no session's state.
    pub fn is_live(&self) -> bool {
        self.state.current().is_some()
    }

    /// Kills the live worker (a call in it ignored cancellation).
    pub fn kill_stuck(&self) -> bool {
        let Some(live) = self.state.current() else {
            return false;
        };
        live.killed.store(true, Ordering::SeqCst);
        live.process.kill();
        true
    }

    /// Ends the worker in order: end of input lets it run the module's
    /// cleanup and exit; one that has not exited within `grace` is killed.
    pub fn shutdown(&self, grace: Duration) {
        let Some(live) = self.state.take() else { return };
        live.closing.store(true, Ordering::SeqCst);
        // Asked, not cut off: the worker runs the module's cleanup while
        // the host still answers its state requests (a background job
        // writes its end then), and exits.
        if live.send(&Frame::new(Kind::Shutdown)).is_err() {
            drop(live.input.lock().unwrap_or_else(PoisonError::into_inner).take());
        }
        let deadline = std::time::Instant::now() + grace;
        while std::time::Instant::now() < deadline {
            if live
                .pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_none()
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(live.input.lock().unwrap_or_else(PoisonError::into_inner).take());
        live.process.kill();
    }
}

/// Progress reports and log lines waiting for their call's thread, at most;
/// and the longest one passed on.
const REPLY_QUEUE: usize = 64;
const MAX_REPLY_BYTES: usize = 64 * 1024;

/// The `module:report` events kept of one isolated module's first mount,
/// and the longest one kept: what a worker sends is bounded, and these
/// stay for the host's life.
const MAX_REPORTS: usize = 16;
/// Granted state requests of one worker answered at once.
const MAX_GRANTED_IN_FLIGHT: usize = 16;
const MAX_REPORT_BYTES: usize = 64 * 1024;

/// How long a worker may take to open and mount its library: 30 s, or
/// `TOOLHOST_WORKER_START_TIMEOUT_MS`.
fn start_timeout() -> Duration {
    static LIMIT: OnceLock<Duration> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        std::env::var("TOOLHOST_WORKER_START_TIMEOUT_MS")
            .ok()
            .and_then(|ms| ms.parse::<u64>().ok())
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis)
            .unwrap_or(Duration::from_secs(30))
    })
}

/// `module_crashed`, retryable, naming how the process ended.
pub fn crashed_result(module: &str, why: &str, details: Value) -> ToolResult {
    let mut result = ToolResult::failure(
        "",
        Status::Error,
        codes::MODULE_CRASHED,
        format!(
            "module '{module}' crashed during the call: its process {why}. The host kept running; \
             the module restarts on the next call, so retrying is safe if the tool's effect allows it"
        ),
    )
    .with_details(details);
    if let Some(error) = result.error.as_mut() {
        error.retryable = true;
    }
    result
}

/// The answer for a call that found no live process: `what` names it for
/// people ("module 'x'", "MCP server 'x'"); `cancelled` says whether a
/// caller that gave up was cancelled (else its deadline passed).
pub fn unavailable_result(why: &Unavailable, what: &str, cancelled: bool) -> ToolResult {
    match why {
        Unavailable::Failed => ToolResult::failure(
            "",
            Status::Error,
            codes::MODULE_FAILED,
            format!(
                "{what} crashed {MAX_CRASHES} times within {}s and is disabled until the host restarts",
                WINDOW.as_secs()
            ),
        ),
        Unavailable::StartFailed(message) => {
            let mut result = ToolResult::failure(
                "",
                Status::Error,
                codes::MODULE_CRASHED,
                format!(
                    "{what} crashed and could not be restarted: {message}. The host kept running; \
                     the next call tries again after a backoff"
                ),
            );
            if let Some(error) = result.error.as_mut() {
                error.retryable = true;
            }
            result
        }
        Unavailable::GaveUp if cancelled => ToolResult::failure(
            "",
            Status::Cancelled,
            codes::CANCELLED,
            format!("{what} was being restarted after a crash, and the call was cancelled before the restart finished"),
        ),
        Unavailable::GaveUp => {
            let mut result = ToolResult::failure(
                "",
                Status::Timeout,
                codes::TIMEOUT,
                format!(
                    "{what} was being restarted after a crash, and the call reached its deadline before the \
                     restart finished; retry when it is back"
                ),
            );
            if let Some(error) = result.error.as_mut() {
                error.retryable = true;
            }
            result
        }
    }
}

fn encode(result: &ToolResult) -> String {
    serde_json::to_string(result).unwrap_or_else(|_| "{}".into())
}
