//! Stdin, read by a small pool of threads in turn (leader/followers: the
//! threads, their turns and their lifecycle are
//! [`toolhost_sync::readers`], model-checked with loom there).
//!
//! This file is the source they read: one epoll set on stdin, registered
//! `EPOLLONESHOT`, so that when a message arrives exactly one reader wakes,
//! reads what is there, hands every complete line to the [`Lines`] handler
//! and re-arms stdin for the next reader before it runs the one job the
//! handler may have returned (a tool call): the thread woken by a request
//! runs it, and answers it, one wake-up per call.
//!
//! Stdin that epoll cannot watch (a regular file, `/dev/null`) is read by
//! one plain thread, and jobs run on threads of their own.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex, PoisonError};

use toolhost_sync::readers::{self, Event, Read, Readers, Source};

pub use toolhost_sync::readers::Job;
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
/// How long a reader beyond [`KEEP`] idles before it may retire.
const IDLE_EXIT_MS: i32 = 10_000;

const STDIN: i32 = 0;
const EVENT_INPUT: u64 = 1;
const EVENT_STOP: u64 = 2;

/// Starts reading stdin into `handler`.
pub fn start<H: Lines>(handler: Arc<H>) -> io::Result<()> {
    // SAFETY: plain system calls that create descriptors.
    let epoll = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
    // SAFETY: a descriptor just created and owned by nobody else.
    let epoll = unsafe { OwnedFd::from_raw_fd(epoll) };
    // SAFETY: as above.
    let stop = cvt(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) })?;
    // SAFETY: as above.
    let stop = unsafe { OwnedFd::from_raw_fd(stop) };
    let stdin = Stdin {
        epoll,
        stop,
        held: Mutex::new(Held::default()),
        handler,
    };
    stdin.control(
        libc::EPOLL_CTL_ADD,
        stdin.stop.as_raw_fd(),
        libc::EPOLLIN as u32,
        EVENT_STOP,
    )?;
    match stdin.control(libc::EPOLL_CTL_ADD, STDIN, ONESHOT_IN, EVENT_INPUT) {
        Ok(()) => Readers::start(stdin, KEEP).map(drop),
        // Not pollable: read it plainly on one thread.
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => std::thread::Builder::new()
            .name("toolhost-stdin".into())
            .spawn(move || readers::read_plainly(&stdin))
            .map(drop),
        Err(e) => Err(e),
    }
}

const ONESHOT_IN: u32 = (libc::EPOLLIN | libc::EPOLLONESHOT) as u32;

/// Stdin as the readers' [`Source`]: an epoll set holding stdin (one-shot)
/// and an eventfd that stops every reader once it is written.
struct Stdin<H> {
    epoll: OwnedFd,
    /// Readable once stdin has ended: every reader then leaves.
    stop: OwnedFd,
    held: Mutex<Held>,
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

impl<H: Lines> Stdin<H> {
    fn control(&self, op: i32, fd: i32, events: u32, token: u64) -> io::Result<()> {
        let mut event = libc::epoll_event { events, u64: token };
        // SAFETY: a live epoll descriptor and an event that outlives the call.
        cvt(unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), op, fd, &mut event) }).map(drop)
    }

    fn end_of_input(&self, held: &mut Held) -> Read {
        if !held.partial.is_empty() {
            self.handler.raw(&held.partial);
            held.partial.clear();
        }
        Read::End
    }
}

impl<H: Lines> Source for Stdin<H> {
    fn wait(&self) -> Event {
        loop {
            let mut event = libc::epoll_event { events: 0, u64: 0 };
            // SAFETY: one event's room, as the count says.
            let n = unsafe { libc::epoll_wait(self.epoll.as_raw_fd(), &mut event, 1, IDLE_EXIT_MS) };
            match n {
                0 => return Event::Idle,
                n if n < 0 => {
                    let e = io::Error::last_os_error();
                    if e.kind() != io::ErrorKind::Interrupted {
                        // A broken epoll set: fail as if stdin had closed.
                        tracing::error!("cannot wait for stdin: {e}");
                        return Event::Broken;
                    }
                }
                _ if event.u64 == EVENT_STOP => return Event::Stop,
                _ => return Event::Input,
            }
        }
    }

    /// Reads what stdin has, hands on every complete line, keeps the rest.
    fn read(&self) -> Read {
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

    fn rearm(&self) -> io::Result<()> {
        self.control(libc::EPOLL_CTL_MOD, STDIN, ONESHOT_IN, EVENT_INPUT)
    }

    fn stop(&self) {
        let one: u64 = 1;
        // SAFETY: eight bytes from a live u64, to a live eventfd.
        let wrote = unsafe { libc::write(self.stop.as_raw_fd(), (&one as *const u64).cast(), 8) };
        if wrote != 8 {
            tracing::debug!("cannot stop the stdin readers: {}", io::Error::last_os_error());
        }
    }

    fn end(&self) {
        self.handler.end();
    }
}

fn cvt(ret: i32) -> io::Result<i32> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}
