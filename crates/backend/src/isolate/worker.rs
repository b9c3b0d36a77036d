//! The worker process (`toolhost __worker`): loads one module's library and
//! runs its calls for the host that started it.
//!
//! Before anything else it arranges to die with its parent
//! (`PR_SET_PDEATHSIG`), caps its address space when asked, and moves the
//! protocol off fds 0 and 1: fd 1 then points at stderr and fd 0 at
//! `/dev/null`, so a module that prints, reads or closes stdout touches
//! neither the protocol nor the host's stdout.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::FromRawFd;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::sabi_types::RRef;
use abi_stable::std_types::{RErr, ROk, RResult, RStr, RString};
use toolhost_core::abi::{
    FfiCleanupBox, FfiContext, FfiContext_TO, FfiCoordinator, FfiCoordinator_TO, FfiToolBox,
};

use super::frame::{Frame, Kind};
use crate::cancel::CancelToken;

/// The protocol's output, shared by every thread of the worker.
#[derive(Clone)]
struct Out(Arc<Mutex<File>>);

impl Out {
    fn send(&self, frame: &Frame) {
        let line = frame.line();
        let mut out = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if out.write_all(&line).is_err() {
            // The host is gone: nothing left to serve.
            std::process::exit(0);
        }
    }
}

/// Runs the worker; `parent` is the host's pid.
pub fn main(parent: u32, memory_limit_mb: Option<u64>) -> ExitCode {
    if let Err(e) = toolhost_supervise::death::arm(parent, nix::sys::signal::Signal::SIGKILL) {
        eprintln!("toolhost worker: {e}");
        return ExitCode::from(1);
    }
    if let Some(mb) = memory_limit_mb {
        let bytes = mb.saturating_mul(1024 * 1024);
        let limit = libc::rlimit {
            rlim_cur: bytes,
            rlim_max: bytes,
        };
        // SAFETY: setrlimit reads the struct we pass, which lives on our stack.
        if unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) } != 0 {
            eprintln!(
                "toolhost worker: cannot set the memory limit: {}",
                std::io::Error::last_os_error()
            );
            return ExitCode::from(1);
        }
    }
    let (input, output) = match protocol_fds() {
        Ok(fds) => fds,
        Err(e) => {
            eprintln!("toolhost worker: cannot set up its pipes: {e}");
            return ExitCode::from(1);
        }
    };
    let out = Out(Arc::new(Mutex::new(output)));
    serve(BufReader::new(input), &out);
    ExitCode::SUCCESS
}

/// Duplicates fds 0 and 1 for the protocol, then points fd 1 at stderr and
/// fd 0 at `/dev/null`.
fn protocol_fds() -> std::io::Result<(File, File)> {
    // SAFETY: dup/dup2/open on fds 0, 1 and 2, which the host set up as
    // pipes and its stderr; every new fd is owned by exactly one File.
    unsafe {
        let input = libc::dup(0);
        let output = libc::dup(1);
        if input < 0 || output < 0 {
            return Err(std::io::Error::last_os_error());
        }
        libc::fcntl(input, libc::F_SETFD, libc::FD_CLOEXEC);
        libc::fcntl(output, libc::F_SETFD, libc::FD_CLOEXEC);
        if libc::dup2(2, 1) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY);
        if null >= 0 {
            libc::dup2(null, 0);
            libc::close(null);
        }
        Ok((File::from_raw_fd(input), File::from_raw_fd(output)))
    }
}

fn read_frame(input: &mut BufReader<File>, line: &mut String) -> Option<Frame> {
    loop {
        line.clear();
        match input.read_line(line) {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
        match serde_json::from_str(line) {
            Ok(frame) => return Some(frame),
            Err(e) => eprintln!("toolhost worker: ignored a malformed frame: {e}"),
        }
    }
}

fn serve(mut input: BufReader<File>, out: &Out) {
    let mut line = String::new();
    // open
    let Some(open) = read_frame(&mut input, &mut line) else {
        return;
    };
    let path = open.text.unwrap_or_default();
    let label = Path::new(&path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.clone());
    let library = match crate::loader::library::open(Path::new(&path), &label) {
        Ok(library) => library,
        Err(error) => return out.send(&Frame::new(Kind::Error).text(error.to_string())),
    };
    let manifest = serde_json::to_string(&library.manifest).unwrap_or_else(|_| "{}".into());
    out.send(&Frame::new(Kind::Manifest).body(&manifest));

    // mount
    let Some(mount) = read_frame(&mut input, &mut line) else {
        return;
    };
    let answers = Answers::default();
    let coordinator = WorkerCoordinator {
        out: out.clone(),
        registered: Arc::new(Mutex::new(Some(Vec::new()))),
        answers: answers.clone(),
        next_granted: Arc::new(AtomicU64::new(super::frame::GRANTED_IDS)),
    };
    let ffi = FfiCoordinator_TO::from_value(coordinator.clone(), TD_Opaque);
    let outcome = (library.module.mount())(ffi, RStr::from_str(mount.body_text()));
    let registered = coordinator
        .registered
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take()
        .unwrap_or_default();
    let cleanup = match outcome {
        ROk(cleanup) => cleanup,
        RErr(message) => {
            let message = format!("module '{}': mount failed: {message}", library.manifest.name);
            return out.send(&Frame::new(Kind::Error).text(message));
        }
    };
    let mut tools: HashMap<String, Arc<FfiToolBox>> = HashMap::new();
    let mut specs = Vec::new();
    for tool in registered {
        let spec = tool.spec().into_string();
        let name = serde_json::from_str::<serde_json::Value>(&spec)
            .ok()
            .and_then(|v| v.get("name").and_then(|n| n.as_str()).map(str::to_string))
            .unwrap_or_default();
        specs.push(spec);
        tools.insert(name, Arc::new(tool));
    }
    let mut mounted = Frame::new(Kind::Mounted);
    mounted.list = Some(specs);
    out.send(&mounted);

    // calls, until the host closes our input
    let calls = Arc::new(Calls {
        input: Mutex::new(input),
        tools,
        running: Mutex::default(),
        out: out.clone(),
        idle: AtomicUsize::new(1),
        answers,
        cleanup: Mutex::new(Some(cleanup)),
    });
    calls.serve();
    calls.clean_up();
}

/// The worker's call threads. Whichever idle thread holds `input` reads
/// the next frame, and runs a call it reads itself, once another thread is
/// there to take over reading (one is started when none is idle): a call
/// reaches its tool with no hand-off between threads, which on a busy
/// machine costs a wake-up each.
struct Calls {
    input: Mutex<BufReader<File>>,
    tools: HashMap<String, Arc<FfiToolBox>>,
    /// Cancel tokens of the calls running.
    running: Mutex<HashMap<u64, CancelToken>>,
    out: Out,
    /// Threads reading or waiting to read (not running a call).
    idle: AtomicUsize,
    /// Where the host's answer to each call's state request goes.
    answers: Answers,
    /// The module's cleanup, run once: at the host's `Shutdown` (while
    /// another thread reads the host's answers), or when its input ends.
    cleanup: Mutex<Option<FfiCleanupBox>>,
}

/// A pending state request (a running call's, by call id, or the
/// coordinator's, by an id from `GRANTED_IDS`).
type Answers = Arc<Mutex<HashMap<u64, std::sync::mpsc::SyncSender<String>>>>;

impl Calls {
    /// Reads and handles frames until the host closes the input.
    fn serve(self: &Arc<Self>) {
        let mut line = String::new();
        loop {
            let frame = {
                let mut input = self.input.lock().unwrap_or_else(PoisonError::into_inner);
                read_frame(&mut input, &mut line)
            };
            let Some(frame) = frame else { return };
            match frame.t {
                Kind::Call => self.call(frame),
                Kind::Cancel => {
                    let token = frame.id.and_then(|id| {
                        self.running
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .get(&id)
                            .cloned()
                    });
                    if let Some(token) = token {
                        token.cancel();
                    }
                }
                Kind::StateAnswer => {
                    let waiting = frame.id.and_then(|id| {
                        self.answers
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .remove(&id)
                    });
                    if let Some(waiting) = waiting {
                        let _ = waiting.try_send(frame.body_text().to_string());
                    }
                }
                Kind::Shutdown => {
                    // This thread stops reading: another reads the answers
                    // to what the cleanup asks the host.
                    if self.idle.fetch_sub(1, Ordering::SeqCst) == 1 {
                        self.start_reader();
                    }
                    self.clean_up();
                    std::process::exit(0);
                }
                other => eprintln!("toolhost worker: ignored an unexpected {other:?} frame"),
            }
        }
    }

    /// Runs the module's cleanup, the first time only.
    fn clean_up(&self) {
        let cleanup = self.cleanup.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(mut cleanup) = cleanup {
            cleanup.cleanup();
        }
    }

    /// Runs one call on this thread.
    fn call(self: &Arc<Self>, frame: Frame) {
        let id = frame.id.unwrap_or(0);
        let name = frame.text.as_deref().unwrap_or_default();
        let Some(tool) = self.tools.get(name).cloned() else {
            let result = toolhost_core::ToolResult::failure(
                "",
                toolhost_core::Status::Error,
                toolhost_core::wire::codes::UNKNOWN_TOOL,
                format!("the worker has no tool '{name}'"),
            );
            let text = serde_json::to_string(&result).unwrap_or_default();
            self.out.send(&Frame::new(Kind::Result).id(id).body(&text));
            return;
        };
        // This thread stops reading: another must be there to read the
        // next call or a cancel of this one.
        if self.idle.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.start_reader();
        }
        let cancel = CancelToken::new();
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, cancel.clone());
        let ctx = WorkerContext {
            id,
            cancel,
            deadline: frame
                .deadline_ms
                .and_then(|ms| Instant::now().checked_add(Duration::from_millis(ms))),
            out: self.out.clone(),
            answers: self.answers.clone(),
            asking: Mutex::new(()),
        };
        let ffi = FfiContext_TO::from_ptr(RRef::new(&ctx), TD_Opaque);
        let result = tool.execute(RStr::from_str(frame.body_text()), ffi);
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
        self.out
            .send(&Frame::new(Kind::Result).id(id).body(result.as_str()));
        self.idle.fetch_add(1, Ordering::SeqCst);
    }

    /// Starts one more call thread, which begins by reading.
    fn start_reader(self: &Arc<Self>) {
        self.idle.fetch_add(1, Ordering::SeqCst);
        let me = self.clone();
        let started = std::thread::Builder::new()
            .name("toolhost-call".into())
            .spawn(move || me.serve());
        if let Err(e) = started {
            // Frames wait until a running call ends and its thread reads.
            self.idle.fetch_sub(1, Ordering::SeqCst);
            eprintln!("toolhost worker: cannot start a call thread: {e}");
        }
    }
}

/// The per-call context a tool in the worker receives.
struct WorkerContext {
    id: u64,
    cancel: CancelToken,
    deadline: Option<Instant>,
    out: Out,
    answers: Answers,
    /// One state request of the call in flight at a time.
    asking: Mutex<()>,
}

/// How long a state request waits for the host at most.
const STATE_WAIT: Duration = Duration::from_secs(30);

impl FfiContext for WorkerContext {
    fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    fn wait_cancelled(&self, timeout_ms: u64) -> bool {
        self.cancel.wait_blocking(Duration::from_millis(timeout_ms))
    }

    fn remaining_ms(&self) -> u64 {
        crate::context::remaining_ms(self.deadline)
    }

    fn progress(&self, json: RStr<'_>) {
        self.out
            .send(&Frame::new(Kind::Progress).id(self.id).body(json.as_str()));
    }

    fn log(&self, level: u8, message: RStr<'_>) {
        let mut frame = Frame::new(Kind::Log).id(self.id).text(message.as_str());
        frame.level = Some(level);
        self.out.send(&frame);
    }

    /// Forwards the request to the host, whose context answers it, and
    /// waits for the answer (bounded, so a lost answer cannot hang the call).
    fn state(&self, request: RStr<'_>) -> RString {
        let _one = self.asking.lock().unwrap_or_else(PoisonError::into_inner);
        ask_host(&self.out, &self.answers, Kind::State, self.id, request.as_str())
    }
}

/// Sends a state request (`kind`, under `id`) to the host and waits for its
/// answer, bounded by [`STATE_WAIT`] so a lost answer cannot hang the
/// module's thread.
fn ask_host(out: &Out, answers: &Answers, kind: Kind, id: u64, request: &str) -> RString {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    answers
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(id, tx);
    out.send(&Frame::new(kind).id(id).body(request));
    let answer = rx.recv_timeout(STATE_WAIT).unwrap_or_else(|_| {
        answers.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
        toolhost_core::state::Answer::failed("unavailable", "the host did not answer the state request")
            .to_json()
    });
    RString::from(answer)
}

/// The coordinator a module mounted in the worker receives: registrations
/// stay here, logs and events go to the host.
#[derive(Clone)]
struct WorkerCoordinator {
    out: Out,
    registered: Arc<Mutex<Option<Vec<FfiToolBox>>>>,
    answers: Answers,
    next_granted: Arc<AtomicU64>,
}

impl FfiCoordinator for WorkerCoordinator {
    fn register_tool(&self, tool: FfiToolBox) -> RResult<(), RString> {
        match self
            .registered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
        {
            Some(tools) => {
                tools.push(tool);
                ROk(())
            }
            None => RErr(RString::from(
                "tools can only be registered during mount; this module tried after mount returned",
            )),
        }
    }

    fn contribute_events(&self, names_json: RStr<'_>) {
        let mut frame = Frame::new(Kind::Events);
        frame.list = serde_json::from_str(names_json.as_str()).ok();
        self.out.send(&frame);
    }

    fn emit(&self, event: RStr<'_>, payload_json: RStr<'_>) {
        self.out.send(
            &Frame::new(Kind::Event)
                .text(event.as_str())
                .body(payload_json.as_str()),
        );
    }

    fn log(&self, level: u8, message: RStr<'_>) {
        let mut frame = Frame::new(Kind::Log).text(message.as_str());
        frame.level = Some(level);
        self.out.send(&frame);
    }

    /// Forwards a granted request to the host and waits for the answer
    /// (bounded, as a call's are).
    fn state(&self, request: RStr<'_>) -> RString {
        let id = self.next_granted.fetch_add(1, Ordering::Relaxed);
        ask_host(&self.out, &self.answers, Kind::GrantedState, id, request.as_str())
    }
}
