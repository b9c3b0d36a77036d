//! Starting commands from the host: the [reaper program](super::program)
//! runs as a zygote, started once per mount with `posix_spawn` (no code of
//! ours runs in the child that shares the host's memory: glibc's
//! `CLONE_VM | CLONE_VFORK` child only applies the file actions and
//! attributes below and calls `execve`), and forks one reaper per command on
//! request ([`Launcher::start`]; see [`super::program`]).

use std::ffi::CString;
use std::io::{self, IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use nix::sys::socket::{recvmsg, sendmsg, ControlMessage, ControlMessageOwned, MsgFlags};

use super::program::{HEADER, NAME, SOCKET_FD};
use super::reaper::FD_COUNT;

/// Why the reaper program cannot be found (the mount fails with it).
#[derive(Debug, Clone, thiserror::Error)]
pub enum ReaperMissing {
    /// `dladdr` could not name the module's own file.
    #[error("cannot tell which file the bash module was loaded from")]
    UnknownModuleFile,
    /// Not beside the module, nor one folder up.
    #[error(
        "the bash module's reaper program `{NAME}` is not beside the module ({}): install it with the \
         module (cargo xtask install / dist do), or build it with `cargo build --workspace`",
        dir.display()
    )]
    NotBeside {
        /// The module's folder.
        dir: PathBuf,
    },
}

/// Where the reaper program is: beside the module's own file (an install
/// puts both in `lib/toolhost/`, a cargo build in `target/<profile>/`), or
/// one folder up (a unit-test binary under `target/<profile>/deps/`).
pub fn reaper_path() -> Result<&'static Path, ReaperMissing> {
    static PATH: OnceLock<Result<PathBuf, ReaperMissing>> = OnceLock::new();
    PATH.get_or_init(find)
        .as_ref()
        .map(|p| p.as_path())
        .map_err(|e| e.clone())
}

fn find() -> Result<PathBuf, ReaperMissing> {
    let here = own_file().ok_or(ReaperMissing::UnknownModuleFile)?;
    let dir = here.parent().unwrap_or(Path::new("/"));
    let candidates = [dir.join(NAME), dir.join("..").join(NAME)];
    for c in &candidates {
        if c.is_file() {
            return Ok(std::path::absolute(c).unwrap_or_else(|_| c.clone()));
        }
    }
    Err(ReaperMissing::NotBeside {
        dir: dir.to_path_buf(),
    })
}

/// The file (shared library or executable) this code was loaded from.
fn own_file() -> Option<PathBuf> {
    // SAFETY: dladdr only reads the loader's tables; `info` is written on
    // success and its `dli_fname` points to a NUL-terminated string owned
    // by the loader for as long as the object stays loaded (it is this
    // code's own object).
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(own_file as *const libc::c_void, &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        let name = std::ffi::CStr::from_ptr(info.dli_fname);
        Some(PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes())))
    }
}

/// How long the host waits for the zygote to take a request and answer it
/// (a fork: far less). A zygote that misses it (stopped, wedged) is killed
/// and replaced.
const REPLY_BOUND: Duration = Duration::from_secs(5);

/// A reaper the zygote started.
#[derive(Debug)]
pub struct Started {
    /// Its pid (in the host's PID namespace).
    pub pid: libc::pid_t,
    /// A pidfd for it, where the kernel has them: the host signals the
    /// reaper through it, never by a pid that may have been reused.
    pub pidfd: Option<OwnedFd>,
}

/// A mount's zygote, started on first use and replaced when it dies.
#[derive(Debug, Default)]
pub struct Launcher {
    zygote: Mutex<Option<Zygote>>,
}

#[derive(Debug)]
struct Zygote {
    pid: libc::pid_t,
    socket: OwnedFd,
}

impl Launcher {
    /// A launcher; the zygote starts with the first command.
    pub fn new() -> Launcher {
        Launcher::default()
    }

    /// Starts a reaper with `fds` at its slots 0..FD_COUNT (-1: not passed)
    /// running `spec` (an encoded [`Spec`](super::spec::Spec)). A zygote
    /// that is gone or does not answer is replaced once.
    pub fn start(&self, fds: [RawFd; FD_COUNT], spec: &[u8]) -> io::Result<Started> {
        let mut guard = self.zygote.lock().unwrap_or_else(|p| p.into_inner());
        let mut last = None;
        for _ in 0..2 {
            let zygote = match guard.take() {
                Some(z) => z,
                None => Zygote::spawn()?,
            };
            match zygote.request(&fds, spec) {
                Ok(Answer::Started(started)) => {
                    *guard = Some(zygote);
                    return Ok(started);
                }
                Ok(Answer::Failed(errno)) => {
                    *guard = Some(zygote);
                    return Err(io::Error::from_raw_os_error(errno));
                }
                Err(Failure::Send(e)) => {
                    // The request never reached it whole (it was killed
                    // since the last command): nothing started, so a fresh
                    // zygote may take it.
                    zygote.end();
                    last = Some(e);
                }
                Err(Failure::Reply(e)) => {
                    // It may have started the reaper: never start the
                    // command twice. The reaper, if any, sees the control
                    // socket close when the caller drops it, and ends.
                    zygote.end();
                    return Err(e);
                }
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("the reaper program did not answer")))
    }
}

impl Launcher {
    /// Ends the zygote (at unmount); reapers already started live on. A
    /// later [`start`](Launcher::start) would start a fresh one.
    pub fn shutdown(&self) {
        let zygote = self.zygote.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(z) = zygote {
            z.end();
        }
    }
}

impl Drop for Launcher {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Why a request failed.
enum Failure {
    /// Before the zygote had the whole request.
    Send(io::Error),
    /// After: the command may have started.
    Reply(io::Error),
}

enum Answer {
    Started(Started),
    Failed(libc::c_int),
}

impl Zygote {
    /// Starts the reaper program with `/dev/null` on 0, 1 and 2 and its end
    /// of a new socket on [`SOCKET_FD`], in a new session, every signal at
    /// its default and unblocked, and an empty environment.
    fn spawn() -> io::Result<Zygote> {
        let path = reaper_path().map_err(|e| io::Error::new(io::ErrorKind::NotFound, e))?;
        let path = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::other("NUL in the reaper path"))?;
        let (ours, theirs) = socketpair()?;
        bound(&ours, libc::SO_SNDTIMEO)?;
        bound(&ours, libc::SO_RCVTIMEO)?;
        // SAFETY: a constant NUL-terminated path; the fd is owned on success.
        let null = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if null < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: just opened, owned by nobody else.
        let null = unsafe { OwnedFd::from_raw_fd(null) };
        // Each source first gets a number above every target, so that the
        // dup2 actions cannot overwrite a source before it is moved.
        let null_high = dup_high(null.as_raw_fd())?;
        let theirs_high = dup_high(theirs.as_raw_fd())?;
        let moves = [
            (null_high.as_raw_fd(), 0),
            (null_high.as_raw_fd(), 1),
            (null_high.as_raw_fd(), 2),
            (theirs_high.as_raw_fd(), SOCKET_FD),
        ];
        let argv = [path.as_ptr(), std::ptr::null()];
        let envp = [std::ptr::null::<libc::c_char>()];
        // SAFETY: the attribute and file-action objects are initialised
        // before use and destroyed on every path; every pointer passed lives
        // until posix_spawn returns (it has exec'd or failed by then).
        let pid = unsafe {
            let mut actions: libc::posix_spawn_file_actions_t = std::mem::zeroed();
            let mut attr: libc::posix_spawnattr_t = std::mem::zeroed();
            check(libc::posix_spawn_file_actions_init(&mut actions))?;
            if let Err(e) = check(libc::posix_spawnattr_init(&mut attr)) {
                libc::posix_spawn_file_actions_destroy(&mut actions);
                return Err(e);
            }
            let result = (|| -> io::Result<libc::pid_t> {
                for (fd, target) in moves {
                    check(libc::posix_spawn_file_actions_adddup2(&mut actions, fd, target))?;
                }
                let mut all: libc::sigset_t = std::mem::zeroed();
                let mut none: libc::sigset_t = std::mem::zeroed();
                libc::sigfillset(&mut all);
                libc::sigemptyset(&mut none);
                check(libc::posix_spawnattr_setsigdefault(&mut attr, &all))?;
                check(libc::posix_spawnattr_setsigmask(&mut attr, &none))?;
                let flags = libc::POSIX_SPAWN_SETSIGDEF as libc::c_short
                    | libc::POSIX_SPAWN_SETSIGMASK as libc::c_short
                    | libc::POSIX_SPAWN_SETSID;
                check(libc::posix_spawnattr_setflags(&mut attr, flags))?;
                let mut pid: libc::pid_t = 0;
                check(libc::posix_spawn(
                    &mut pid,
                    path.as_ptr(),
                    &actions,
                    &attr,
                    argv.as_ptr().cast(),
                    envp.as_ptr().cast(),
                ))?;
                Ok(pid)
            })();
            libc::posix_spawn_file_actions_destroy(&mut actions);
            libc::posix_spawnattr_destroy(&mut attr);
            result
        }?;
        Ok(Zygote { pid, socket: ours })
    }

    /// Sends one request and reads the answer. An error means the zygote is
    /// gone or not answering.
    fn request(&self, fds: &[RawFd; FD_COUNT], spec: &[u8]) -> Result<Answer, Failure> {
        self.send(fds, spec).map_err(Failure::Send)?;
        self.answer().map_err(Failure::Reply)
    }

    fn send(&self, fds: &[RawFd; FD_COUNT], spec: &[u8]) -> io::Result<()> {
        self.wake();
        send_request(self.socket.as_raw_fd(), fds, spec)
    }

    /// A zygote stopped by a command (possible only without the sandbox's
    /// PID namespace) must wake to answer.
    fn wake(&self) {
        // SAFETY: kill(2) on our own child, not yet reaped.
        unsafe { libc::kill(self.pid, libc::SIGCONT) };
    }

    fn answer(&self) -> io::Result<Answer> {
        let sock = self.socket.as_raw_fd();
        let mut word = [0u8; 4];
        let (got, owned) = recv_with_fds(sock, &mut word, nix::cmsg_space!([RawFd; 1]))?;
        let mut owned = owned.into_iter();
        if got != word.len() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the reaper program closed its socket",
            ));
        }
        let value = i32::from_ne_bytes(word);
        if value <= 0 {
            return Ok(Answer::Failed(value.saturating_neg().max(1)));
        }
        Ok(Answer::Started(Started {
            pid: value,
            pidfd: owned.next(),
        }))
    }

    /// Closes the socket (the zygote exits at EOF), kills it in case it is
    /// stopped or wedged, and reaps it. The reapers it started live on.
    fn end(self) {
        drop(self);
    }
}

impl Drop for Zygote {
    /// As [`Zygote::end`]: a zygote is never left behind, even when the
    /// code holding it unwinds.
    fn drop(&mut self) {
        // SAFETY: signal and wait for our own child, not yet reaped (only
        // this handle reaps it, once).
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            let mut st = 0;
            while libc::waitpid(self.pid, &mut st, 0) < 0
                && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
            {}
        }
    }
}

/// Bounds `sock`'s `opt` (`SO_SNDTIMEO` or `SO_RCVTIMEO`) by
/// [`REPLY_BOUND`]: a peer stopped or wedged is given up on, not waited for.
fn bound(sock: &OwnedFd, opt: libc::c_int) -> io::Result<()> {
    let bound = libc::timeval {
        tv_sec: REPLY_BOUND.as_secs() as libc::time_t,
        tv_usec: 0,
    };
    // SAFETY: setsockopt on a socket we own with a local timeval.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            opt,
            (&bound as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sends one command request (header, `fds`, the encoded spec) on `sock`.
fn send_request(sock: RawFd, fds: &[RawFd; FD_COUNT], spec: &[u8]) -> io::Result<()> {
    let mut mask = 0u32;
    let mut passed = Vec::with_capacity(FD_COUNT);
    for (slot, fd) in fds.iter().enumerate() {
        if *fd >= 0 {
            mask |= 1 << slot;
            passed.push(*fd);
        }
    }
    send_message(sock, &header(spec.len(), mask)?, &passed)?;
    send_all(sock, spec)
}

/// A request's header: the body's length and the mask (see
/// [`super::program`]).
fn header(len: usize, mask: u32) -> io::Result<[u8; HEADER]> {
    let len = u32::try_from(len).map_err(|_| io::Error::other("spec too large"))?;
    let mut header = [0u8; HEADER];
    header[..4].copy_from_slice(&len.to_ne_bytes());
    header[4..].copy_from_slice(&mask.to_ne_bytes());
    Ok(header)
}

/// Sends `header` with `fds` as `SCM_RIGHTS`, all of it.
fn send_message(sock: RawFd, header: &[u8; HEADER], fds: &[RawFd]) -> io::Result<()> {
    let cmsg = [ControlMessage::ScmRights(fds)];
    let sent = sendmsg::<()>(sock, &[IoSlice::new(header)], &cmsg, MsgFlags::MSG_NOSIGNAL, None)?;
    send_all(sock, &header[sent..])
}

fn send_all(sock: RawFd, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        // SAFETY: sending from a buffer we own on a socket we own.
        let n = unsafe { libc::send(sock, bytes.as_ptr().cast(), bytes.len(), libc::MSG_NOSIGNAL) };
        if n >= 0 {
            bytes = &bytes[n as usize..];
            continue;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}

/// One `recvmsg` on `sock` into `buf`, with the descriptors that came with
/// it (close-on-exec, owned here); `space` is the control buffer
/// (`nix::cmsg_space!` for as many as may come). For both ends of the
/// reaper program's socket: its requests and its answers.
pub(super) fn recv_with_fds(
    sock: RawFd,
    buf: &mut [u8],
    mut space: Vec<u8>,
) -> io::Result<(usize, Vec<OwnedFd>)> {
    let mut iov = [IoSliceMut::new(buf)];
    let msg = recvmsg::<()>(sock, &mut iov, Some(&mut space), MsgFlags::MSG_CMSG_CLOEXEC)?;
    let mut received = Vec::new();
    for cmsg in msg.cmsgs()? {
        if let ControlMessageOwned::ScmRights(fds) = cmsg {
            received.extend(fds);
        }
    }
    let owned = received
        .into_iter()
        // SAFETY: the kernel just installed these fds in this process;
        // nobody else owns them.
        .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
        .collect();
    Ok((msg.bytes, owned))
}

/// A connected pair of close-on-exec Unix stream sockets (the reaper
/// program's request channel, and each command's status and control).
pub(super) fn socketpair() -> io::Result<(OwnedFd, OwnedFd)> {
    use nix::sys::socket::{AddressFamily, SockFlag, SockType};
    nix::sys::socket::socketpair(
        AddressFamily::Unix,
        SockType::Stream,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
    .map_err(io::Error::from)
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(rc))
    }
}

fn dup_high(fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC on an fd the caller keeps open.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, (FD_COUNT + 1) as libc::c_int) };
    if new < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: just created, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

#[cfg(test)]
#[path = "launch_tests.rs"]
mod tests;
