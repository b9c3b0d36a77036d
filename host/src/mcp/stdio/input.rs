//! Stdin, read by a small pool of threads in turn (leader/followers).
//!
//! The threads wait in one epoll set on stdin, registered `EPOLLONESHOT`:
//! when a message arrives exactly one of them wakes, reads what is there,
//! hands every complete line to the [`Lines`] handler, re-arms stdin for
//! the next reader, and only then runs the one job the handler may have
//! returned (a tool call). So the thread that was woken by a request is the
//! thread that runs it, and answers it: one wake-up per call, where a
//! reader handing the call to a worker and back costs three. Meanwhile
//! another thread is always waiting on stdin (one is started when none is
//! idle, and an idle reader retires only while another is idle too), so a
//! cancellation or a second call is read while a tool runs.
//!
//! Stdin that epoll cannot watch (a regular file, `/dev/null`) is read by
//! one plain thread, and jobs run on threads of their own.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Work a handler wants done on the reading thread, once stdin is re-armed.
/// A job may be dropped unrun (no thread could be started for it): it must
/// then settle its own business, as a direct call does by answering.
pub type Job = Box<dyn FnOnce() + Send>;

/// What the readers hand their input to.
pub trait Lines: Send + Sync + 'static {
    /// One complete line, with its newline. `last` says that no other
    /// complete line follows in what was read: only then may the handler
    /// return a job (it runs before the reader looks at stdin again).
    fn line(&self, line: &[u8], last: bool) -> Option<Job>;
    /// Bytes that are not a line the readers hold: pieces of a line too
    /// long to hold ([`MAX_HELD`]), or an unterminated tail at the end.
    fn raw(&self, bytes: &[u8]);
    /// Stdin is closed (or failed): no more input will come.
    fn end(&self);
}

/// The longest partial line the readers hold while waiting for its end; a
/// longer one is passed to [`Lines::raw`] in pieces as it arrives.
pub const MAX_HELD: usize = 1 << 20;
/// How much one read takes.
const READ_SIZE: usize = 64 * 1024;
/// Readers kept when idle.
const KEEP: usize = 2;
/// How long a reader beyond [`KEEP`] idles before it exits.
const IDLE_EXIT_MS: i32 = 10_000;

const STDIN: i32 = 0;
const EVENT_INPUT: u64 = 1;
const EVENT_STOP: u64 = 2;
/// Not an epoll token: what [`Readers::wait`] says when epoll fails.
const EVENT_BROKEN: u64 = 3;

/// Starts reading stdin into `handler`.
pub fn start<H: Lines>(handler: Arc<H>) -> io::Result<()> {
    // SAFETY: plain system calls that create descriptors.
    let epoll = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
    // SAFETY: a descriptor just created and owned by nobody else.
    let epoll = unsafe { OwnedFd::from_raw_fd(epoll) };
    let stop = cvt(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) })?;
    // SAFETY: as above.
    let stop = unsafe { OwnedFd::from_raw_fd(stop) };
    let readers = Arc::new(Readers {
        epoll,
        stop,
        held: Mutex::new(Held::default()),
        idle: AtomicUsize::new(0),
        threads: AtomicUsize::new(0),
        handler,
    });
    readers.control(
        libc::EPOLL_CTL_ADD,
        readers.stop.as_raw_fd(),
        libc::EPOLLIN as u32,
        EVENT_STOP,
    )?;
    match readers.control(libc::EPOLL_CTL_ADD, STDIN, ONESHOT_IN, EVENT_INPUT) {
        Ok(()) => {
            for _ in 0..KEEP {
                readers.spawn()?;
            }
        }
        // Not pollable: read it plainly on one thread.
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
            std::thread::Builder::new()
                .name("toolhost-stdin".into())
                .spawn(move || readers.read_plainly())?;
        }
        Err(e) => return Err(e),
    }
    Ok(())
}

const ONESHOT_IN: u32 = (libc::EPOLLIN | libc::EPOLLONESHOT) as u32;

struct Readers<H> {
    epoll: OwnedFd,
    /// Readable once stdin has ended: every reader then leaves.
    stop: OwnedFd,
    held: Mutex<Held>,
    /// Readers waiting on stdin right now.
    idle: AtomicUsize,
    threads: AtomicUsize,
    handler: Arc<H>,
}

/// What the reader that owns stdin keeps between reads.
struct Held {
    /// The start of a line whose end has not come yet.
    partial: Vec<u8>,
    /// The current line is too long to hold and is being passed on raw.
    passing: bool,
    scratch: Box<[u8]>,
}

impl Default for Held {
    fn default() -> Self {
        Held {
            partial: Vec::new(),
            passing: false,
            scratch: vec![0; READ_SIZE].into_boxed_slice(),
        }
    }
}

/// What one read brought.
enum Read {
    /// Input (perhaps nothing yet), and maybe a job for this thread.
    More(Option<Job>),
    /// Stdin is closed.
    End,
}

impl<H: Lines> Readers<H> {
    fn control(&self, op: i32, fd: i32, events: u32, token: u64) -> io::Result<()> {
        let mut event = libc::epoll_event { events, u64: token };
        // SAFETY: a live epoll descriptor and an event that outlives the call.
        cvt(unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), op, fd, &mut event) }).map(drop)
    }

    fn spawn(self: &Arc<Self>) -> io::Result<()> {
        self.threads.fetch_add(1, Ordering::SeqCst);
        let me = self.clone();
        std::thread::Builder::new()
            .name("toolhost-mcp-io".into())
            .spawn(move || me.serve())
            .map(drop)
            .inspect_err(|_| {
                self.threads.fetch_sub(1, Ordering::SeqCst);
            })
    }

    /// One reader: wait for stdin (or the stop), read, re-arm, run the job.
    fn serve(self: Arc<Self>) {
        loop {
            let Some(token) = self.wait() else {
                return; // retired
            };
            if token == EVENT_STOP {
                self.threads.fetch_sub(1, Ordering::SeqCst);
                return;
            }
            if token == EVENT_BROKEN {
                return self.finish();
            }
            // This thread alone owns stdin until it re-arms it.
            match self.read_once() {
                Read::End => return self.finish(),
                Read::More(job) => {
                    if let Err(e) = self.control(libc::EPOLL_CTL_MOD, STDIN, ONESHOT_IN, EVENT_INPUT) {
                        tracing::error!("cannot watch stdin again: {e}");
                        if let Some(job) = job {
                            run(job);
                        }
                        return self.finish();
                    }
                    if let Some(job) = job {
                        // Someone must read while this thread works.
                        if self.idle.load(Ordering::SeqCst) == 0 {
                            if let Err(e) = self.spawn() {
                                tracing::warn!("cannot start another stdin reader: {e}");
                            }
                        }
                        run(job);
                    }
                }
            }
        }
    }

    /// Waits, counted as idle, for an event; `None` when this reader
    /// retires instead: after idling, and only while another reader is
    /// idle too, so stdin is never left without one.
    fn wait(&self) -> Option<u64> {
        self.idle.fetch_add(1, Ordering::SeqCst);
        loop {
            let mut event = libc::epoll_event { events: 0, u64: 0 };
            // SAFETY: one event's room, as the count says.
            let n = unsafe { libc::epoll_wait(self.epoll.as_raw_fd(), &mut event, 1, IDLE_EXIT_MS) };
            match n {
                0 if self.threads.load(Ordering::SeqCst) > KEEP && self.leave_idle_if_not_last() => {
                    self.threads.fetch_sub(1, Ordering::SeqCst);
                    return None;
                }
                0 => {}
                n if n < 0 => {
                    let e = io::Error::last_os_error();
                    if e.kind() != io::ErrorKind::Interrupted {
                        // A broken epoll set: fail as if stdin had closed.
                        tracing::error!("cannot wait for stdin: {e}");
                        self.idle.fetch_sub(1, Ordering::SeqCst);
                        return Some(EVENT_BROKEN);
                    }
                }
                _ => {
                    self.idle.fetch_sub(1, Ordering::SeqCst);
                    return Some(event.u64);
                }
            }
        }
    }

    /// Stops counting this reader as idle, unless it is the only idle one.
    fn leave_idle_if_not_last(&self) -> bool {
        let mut idle = self.idle.load(Ordering::SeqCst);
        while idle >= 2 {
            match self
                .idle
                .compare_exchange(idle, idle - 1, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return true,
                Err(now) => idle = now,
            }
        }
        false
    }

    /// Stdin ended: tell the handler, and every other reader to leave.
    fn finish(&self) {
        self.handler.end();
        let one: u64 = 1;
        // SAFETY: eight bytes from a live u64, to a live eventfd.
        let wrote = unsafe { libc::write(self.stop.as_raw_fd(), (&one as *const u64).cast(), 8) };
        if wrote != 8 {
            tracing::debug!("cannot stop the stdin readers: {}", io::Error::last_os_error());
        }
        self.threads.fetch_sub(1, Ordering::SeqCst);
    }

    /// Reads what stdin has, hands on every complete line, keeps the rest.
    fn read_once(&self) -> Read {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let held = &mut *held;
        // SAFETY: reads at most the scratch buffer's length into it.
        let n = unsafe { libc::read(STDIN, held.scratch.as_mut_ptr().cast(), held.scratch.len()) };
        let n = match n {
            0 => return self.end_of_input(held),
            n if n < 0 => {
                let e = io::Error::last_os_error();
                return match e.kind() {
                    // A spurious wake-up, or a descriptor someone set non-blocking.
                    io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock => Read::More(None),
                    _ => {
                        tracing::info!("stdin failed ({e}): the client is gone");
                        self.end_of_input(held)
                    }
                };
            }
            n => n as usize,
        };
        let Held {
            partial,
            passing,
            scratch,
        } = held;
        let mut input = &scratch[..n];
        if *passing {
            // The rest of a line too long to hold.
            match input.iter().position(|&b| b == b'\n') {
                Some(end) => {
                    self.handler.raw(&input[..=end]);
                    *passing = false;
                    input = &input[end + 1..];
                }
                None => {
                    self.handler.raw(input);
                    return Read::More(None);
                }
            }
        }
        let mut job = None;
        let mut lines = input.split_inclusive(|&b| b == b'\n').peekable();
        while let Some(piece) = lines.next() {
            if piece.last() != Some(&b'\n') {
                // The start of a line still to come.
                partial.extend_from_slice(piece);
                if partial.len() > MAX_HELD {
                    self.handler.raw(partial);
                    partial.clear();
                    *passing = true;
                }
                break;
            }
            let last = lines.peek().is_none_or(|next| next.last() != Some(&b'\n'));
            let new = if partial.is_empty() {
                self.handler.line(piece, last)
            } else {
                partial.extend_from_slice(piece);
                let job = self.handler.line(partial, last);
                partial.clear();
                job
            };
            if let Some(new) = new {
                if job.replace(new).is_some() {
                    // Against the handler's contract: the earlier job is
                    // dropped unrun (a handler's job answers for itself then).
                    tracing::error!("a reader was handed two jobs from one read");
                }
            }
        }
        Read::More(job)
    }

    fn end_of_input(&self, held: &mut Held) -> Read {
        if !held.partial.is_empty() {
            self.handler.raw(&held.partial);
            held.partial.clear();
        }
        Read::End
    }

    /// Stdin that epoll cannot watch: one thread reads it to the end; jobs
    /// run on threads of their own.
    fn read_plainly(self: Arc<Self>) {
        loop {
            match self.read_once() {
                Read::End => return self.handler.end(),
                Read::More(None) => {}
                Read::More(Some(job)) => {
                    if let Err(e) = std::thread::Builder::new()
                        .name("toolhost-call".into())
                        .spawn(job)
                    {
                        tracing::error!("cannot start a thread for a call: {e}");
                    }
                }
            }
        }
    }
}

/// Runs a job; a panic in it is logged, and the reader goes on.
fn run(job: Job) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)).is_err() {
        tracing::error!("a call panicked in the host");
    }
}

fn cvt(ret: i32) -> io::Result<i32> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}
