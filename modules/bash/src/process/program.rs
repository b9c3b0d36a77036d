//! The reaper program (`toolhost-bash-reaper`): a small *zygote* the host
//! starts once per mount with `posix_spawn`, and that forks one reaper per
//! command.
//!
//! Why a separate program: the host is large and multi-threaded. Forking it
//! copies its page tables and takes copy-on-write faults, and running Rust
//! code in a child that shares its memory (`CLONE_VM`) risks corrupting it.
//! `posix_spawn` starts this small program without running any of our code
//! in the host's address space (glibc's own `CLONE_VM | CLONE_VFORK` child
//! only moves fds and calls `execve`). This program is a fresh,
//! single-threaded process with its own memory, so it may use std freely,
//! and so may each child it forks (a fork of a single-threaded process has
//! no lock held by another thread).
//!
//! Why a zygote: an `execve` of this program per command (the dynamic
//! loader, std's start-up) cost about as much as the shell's own start
//! (`bash true` was 1.9× a raw `bash -c true`). A fork of a process this
//! small is far cheaper, so the per-command cost is one fork here plus the
//! shell's own `execve`.
//!
//! Protocol (see [`super::launch`]): fd 3 is a stream socket to the host;
//! 0, 1 and 2 are `/dev/null`. Each request is a [`HEADER`]-byte header
//! (`u32` spec length, `u32` mask of the [reaper's fd slots](super::reaper)
//! that come with it, both native-endian) sent with those fds as
//! `SCM_RIGHTS`, then the encoded [`Spec`]. The zygote forks (with `clone`
//! and the spec's `CLONE_NEW*` flags, so that in the sandbox the child is
//! PID 1 of its own namespaces, and its mount namespace is a copy of the
//! host's mounts as they are when the command starts) a child that runs
//! [`reaper::main`] on those fds, and answers with an `i32`: the child's
//! pid with a pidfd for it as `SCM_RIGHTS`, or `-errno` when it could not
//! be started. EOF on the socket (the host closed it, or died) ends the
//! zygote; the reapers it started live on, each watching its own control
//! socket. The zygote reaps every reaper it started.

use std::ffi::c_void;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags};

use super::launch::recv_with_fds;
use super::raw;
use super::reaper::{self, Prepared, FD_COUNT};
use super::spec::{pointers, Spec};
use super::stacks::Stacks;

/// The fd the host's socket arrives on.
pub const SOCKET_FD: libc::c_int = 3;
/// The program's file name, looked for beside the module.
pub const NAME: &str = "toolhost-bash-reaper";
/// Bytes of a request's header.
pub const HEADER: usize = 8;
/// Largest spec accepted (the command, its environment and the sandbox
/// steps; far more than any real one).
pub const MAX_SPEC: usize = 64 << 20;

/// The program's `main`. Never returns.
pub fn run() -> ! {
    close_inherited();
    block_all_signals();
    // SAFETY: every signal was blocked just above.
    unsafe { reaper::reset_dispositions() };
    // SAFETY: prctl on this process with constant arguments: neither a
    // debugger of the same user nor /proc/<pid>/mem reaches this process
    // (nor, by inheritance, the reapers it forks).
    unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
    let sigfd = child_signals();
    let Ok(stacks) = Stacks::new() else {
        std::process::exit(1)
    };
    loop {
        let mut fds = [
            libc::pollfd {
                fd: SOCKET_FD,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: sigfd.as_ref().map_or(-1, |f| f.as_raw_fd()),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // Without a signalfd, wake now and then to reap.
        let timeout = if sigfd.is_some() { -1 } else { 1000 };
        // SAFETY: polling two pollfd structs we own.
        unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout) };
        if fds[1].revents != 0 {
            drain(fds[1].fd);
        }
        reap();
        if fds[0].revents == 0 {
            continue;
        }
        let request = match receive(SOCKET_FD) {
            Ok(Some(request)) => request,
            // EOF: the host is done with us. A broken request: the host sees
            // EOF and starts a fresh zygote.
            Ok(None) | Err(_) => std::process::exit(0),
        };
        let answer = match &request.spec {
            Ok(spec) => start_reaper(spec, &request.fds, &stacks),
            Err(_) => Err(libc::EINVAL),
        };
        if reply(answer).is_err() {
            std::process::exit(0);
        }
        // `request` drops here: its fds close, so the host sees EOF on the
        // command's pipes once the reaper's tree is gone.
    }
}

/// One request: the spec, and the fds for the reaper's slots (-1 where none
/// came).
struct Request {
    spec: Result<Spec, super::spec::SpecError>,
    fds: [RawFd; FD_COUNT],
    _owned: Vec<OwnedFd>,
}

/// Reads one request from `sock`; `None` at EOF.
fn receive(sock: RawFd) -> std::io::Result<Option<Request>> {
    let mut header = [0u8; HEADER];
    let (got, owned) = recv_with_fds(sock, &mut header, nix::cmsg_space!([RawFd; FD_COUNT]))?;
    if got == 0 {
        return Ok(None);
    }
    read_exact(sock, &mut header[got..])?;
    let len = u32::from_ne_bytes([header[0], header[1], header[2], header[3]]) as usize;
    let mask = u32::from_ne_bytes([header[4], header[5], header[6], header[7]]);
    if len > MAX_SPEC {
        return Err(std::io::Error::other("spec too large"));
    }
    let mut body = vec![0u8; len];
    read_exact(sock, &mut body)?;
    let mut fds = [-1; FD_COUNT];
    let mut next = owned.iter();
    for (slot, fd) in fds.iter_mut().enumerate() {
        if mask & (1 << slot) != 0 {
            *fd = next
                .next()
                .map(|f| f.as_raw_fd())
                .ok_or_else(|| std::io::Error::other("fewer fds than the mask says"))?;
        }
    }
    let spec = Spec::decode(&body);
    // The next reaper is a copy of this process: leave it no trace of this
    // command's environment.
    body.fill(0);
    Ok(Some(Request {
        spec,
        fds,
        _owned: owned,
    }))
}

fn read_exact(sock: RawFd, mut buf: &mut [u8]) -> std::io::Result<()> {
    while !buf.is_empty() {
        // SAFETY: reading into a buffer we own from our socket.
        let n = unsafe { libc::read(sock, buf.as_mut_ptr().cast(), buf.len()) };
        if n > 0 {
            buf = &mut buf[n as usize..];
        } else if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        } else {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
    Ok(())
}

/// What the forked child needs; lives in the zygote's frame, which the
/// child has its own copy of.
struct ChildArg<'a> {
    spec: &'a Spec,
    fds: [RawFd; FD_COUNT],
    shell_stack: *mut u8,
}

/// Forks the reaper for `spec`. Returns its pid and a pidfd for it, or the
/// errno of the failed `clone`.
fn start_reaper(
    spec: &Spec,
    fds: &[RawFd; FD_COUNT],
    stacks: &Stacks,
) -> Result<(libc::pid_t, Option<OwnedFd>), libc::c_int> {
    let arg = ChildArg {
        spec,
        fds: *fds,
        shell_stack: stacks.shell_top(),
    };
    // SAFETY: without CLONE_VM the child gets its own copy of this
    // single-threaded process (memory, `arg`, `stacks`); it starts on its
    // copy of the reaper stack at `child_main`, which never returns. The
    // flags add only namespaces and SIGCHLD.
    let pid = unsafe {
        raw::clone_on(
            (spec.namespaces | libc::SIGCHLD) as usize,
            stacks.reaper_top(),
            child_main,
            (&arg as *const ChildArg<'_>).cast_mut().cast::<c_void>(),
        )
    };
    opened(pid)
}

/// The answer for a `clone` that returned `pid`: the child's pid and a
/// pidfd for it, or the errno.
fn opened(pid: isize) -> Result<(libc::pid_t, Option<OwnedFd>), libc::c_int> {
    if pid < 0 {
        return Err((-pid) as libc::c_int);
    }
    let pid = pid as libc::pid_t;
    // The child cannot have been reaped yet (only this process reaps it),
    // so the pid names it for sure.
    // SAFETY: pidfd_open with a pid and no flags; the fd is owned on success.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let pidfd = (pidfd >= 0).then(|| {
        // SAFETY: just created, owned by nobody else.
        unsafe { OwnedFd::from_raw_fd(pidfd as RawFd) }
    });
    Ok((pid, pidfd))
}

/// The forked child: becomes the reaper.
///
/// # Safety
/// `arg` must point to a [`ChildArg`] (in this child's copy of the
/// zygote's memory); every signal must be blocked.
unsafe extern "C" fn child_main(arg: *mut c_void) -> ! {
    // SAFETY: the zygote passed its `ChildArg`; this is our private copy.
    let a = unsafe { &*(arg as *const ChildArg<'_>) };
    // SAFETY: as this function's own contract.
    unsafe { become_reaper(a.spec, a.fds, a.shell_stack) }
}

/// Builds the reaper's data from `spec` and runs the reaper.
///
/// # Safety
/// Only in a child forked by the zygote (single-threaded, every signal
/// blocked); `shell_stack` is the top of its copy of the shell stack.
unsafe fn become_reaper(spec: &Spec, fds: [RawFd; FD_COUNT], shell_stack: *mut u8) -> ! {
    let argv = pointers(&spec.argv);
    let envp = pointers(&spec.env);
    let mut rlimits = [(0 as libc::c_int, 0u64); 8];
    let rlimit_count = spec.rlimits.len().min(rlimits.len());
    for (slot, pair) in rlimits.iter_mut().zip(&spec.rlimits) {
        *slot = *pair;
    }
    let prepared = Prepared {
        shell: spec.shell.as_ptr(),
        argv: argv.as_ptr(),
        envp: envp.as_ptr(),
        cwd: spec.cwd.as_ptr(),
        rlimits,
        rlimit_count,
        fds,
        shell_stack,
        setup: spec.setup.raw(),
    };
    // SAFETY: `prepared` and what it points to live in this frame, which
    // `reaper::main` never returns to; the process is single-threaded (a
    // fork of the single-threaded zygote) and every signal is blocked.
    unsafe { reaper::main((&prepared as *const Prepared).cast_mut().cast()) }
}

/// Sends the answer to one request.
fn reply(answer: Result<(libc::pid_t, Option<OwnedFd>), libc::c_int>) -> nix::Result<usize> {
    let (word, pidfd) = match answer {
        Ok((pid, fd)) => (pid, fd),
        Err(errno) => (-errno, None),
    };
    let bytes = word.to_ne_bytes();
    let iov = [std::io::IoSlice::new(&bytes)];
    let raw = pidfd.as_ref().map(|f| [f.as_raw_fd()]);
    let cmsgs: Vec<ControlMessage<'_>> = raw
        .as_ref()
        .map(|r| ControlMessage::ScmRights(r))
        .into_iter()
        .collect();
    sendmsg::<()>(SOCKET_FD, &iov, &cmsgs, MsgFlags::MSG_NOSIGNAL, None)
}

/// A signalfd for SIGCHLD (blocked, like every signal here).
fn child_signals() -> Option<OwnedFd> {
    // SAFETY: a local signal set, and a new signalfd owned on success.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        let fd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        (fd >= 0).then(|| OwnedFd::from_raw_fd(fd))
    }
}

fn drain(fd: RawFd) {
    let mut buf = [0u8; 512];
    // SAFETY: reading a non-blocking signalfd into a local buffer.
    while unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) } > 0 {}
}

/// Reaps every reaper that has ended.
fn reap() {
    loop {
        let mut st = 0;
        // SAFETY: waiting, without blocking, for our own children.
        let r = unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG | libc::__WALL) };
        if r <= 0 {
            return;
        }
    }
}

/// Closes every fd but 0–3. `posix_spawn` moved only ours into place;
/// whatever the host had open without close-on-exec (a test's pipe, a
/// jobserver) came along, and every reaper would hold it (a reader
/// waiting for EOF on such a pipe would wait for the mount's end).
fn close_inherited() {
    // SAFETY: closing fds this process never uses; nothing else runs yet.
    if unsafe { libc::close_range(SOCKET_FD as libc::c_uint + 1, libc::c_uint::MAX, 0) } != 0 {
        // Kernels before 5.9: one by one, up to the fd limit.
        // SAFETY: as above; sysconf has no preconditions.
        let max = unsafe { libc::sysconf(libc::_SC_OPEN_MAX) }.clamp(64, 1 << 20) as libc::c_int;
        for fd in SOCKET_FD + 1..max {
            // SAFETY: as above.
            unsafe { libc::close(fd) };
        }
    }
}

fn block_all_signals() {
    // SAFETY: a signal-mask call on this (only) thread with a local set.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::sigprocmask(libc::SIG_SETMASK, &all, std::ptr::null_mut());
    }
}
