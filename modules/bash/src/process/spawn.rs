//! Starting a command: `shell -c COMMAND` under a [reaper](super::reaper),
//! in its own session and process group, with stdin from /dev/null, a clean
//! environment, optional resource limits and optional sandbox steps.
//!
//! Everything the reaper and the shell's child need (strings, pointer
//! arrays, the Landlock ruleset fd, the seccomp program) is built here,
//! before the fork, so that after it only system calls remain.

use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::raw;
use super::reaper::{self, Prepared, Setup};
use super::stacks::Stacks;
use super::tree::Tree;

/// What to run.
pub struct SpawnSpec<'a> {
    /// The shell (`/bin/bash`).
    pub shell: &'a Path,
    /// The command string handed to `-c`.
    pub command: &'a str,
    /// The working directory.
    pub cwd: &'a Path,
    /// The complete environment.
    pub env: &'a [(OsString, OsString)],
    /// `(RLIMIT_*, value)` pairs.
    pub rlimits: &'a [(libc::c_int, u64)],
    /// Sandbox steps, or `None` for a plain subreaper.
    pub confine: Option<Confine<'a>>,
}

/// What the sandbox asks of one spawn. The pointers in `setup` must stay
/// valid until [`spawn`] returns (the reaper works on its own copy).
#[derive(Clone, Copy)]
pub struct Confine<'a> {
    /// `CLONE_NEW*` flags for the reaper.
    pub namespaces: libc::c_int,
    /// The steps.
    pub setup: Setup,
    /// The Landlock ruleset fd, when `setup.landlock`.
    pub landlock: Option<std::os::fd::BorrowedFd<'a>>,
    /// An fd open for writing on the pids cgroup's `cgroup.procs`, when
    /// `setup.cgroup`.
    pub cgroup_procs: Option<std::os::fd::BorrowedFd<'a>>,
}

/// A started command: its process tree and the read ends of its output.
pub struct Spawned {
    /// The tree (reaper, shell and everything they start).
    pub tree: Tree,
    /// The shell's stdout (non-blocking).
    pub stdout: OwnedFd,
    /// The shell's stderr (non-blocking).
    pub stderr: OwnedFd,
    /// Dropped once the tree is gone (the sandbox's per-call resources).
    pub cleanup: Option<Box<dyn Send>>,
}

/// Starts `spec`. Fails only when the host is out of fds or processes; a
/// shell that cannot start reports that on stderr with exit code 126/127.
pub fn spawn(spec: &SpawnSpec<'_>) -> io::Result<Spawned> {
    let shell = cstring(spec.shell.as_os_str().as_bytes(), "the shell path")?;
    let argv_owned = [
        shell.clone(),
        CString::new("-c").map_err(invalid)?,
        cstring(spec.command.as_bytes(), "the command")?,
    ];
    let mut argv: Vec<*const libc::c_char> = argv_owned.iter().map(|s| s.as_ptr()).collect();
    argv.push(std::ptr::null());
    let env_owned = spec
        .env
        .iter()
        .map(|(k, v)| {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            cstring(&kv, "an environment variable")
        })
        .collect::<io::Result<Vec<_>>>()?;
    let mut envp: Vec<*const libc::c_char> = env_owned.iter().map(|s| s.as_ptr()).collect();
    envp.push(std::ptr::null());
    let cwd = cstring(spec.cwd.as_os_str().as_bytes(), "the working directory")?;

    let mut rlimits = [(0 as libc::c_int, 0u64); 8];
    let rlimit_count = spec.rlimits.len().min(rlimits.len());
    for (slot, (resource, value)) in rlimits.iter_mut().zip(spec.rlimits) {
        *slot = (*resource, *value);
    }

    let devnull = open_devnull()?;
    let (out_r, out_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    // A socket, not a pipe: a socket cannot be reopened through
    // /proc/<reaper>/fd, so no command can forge the status it carries.
    let (status_r, status_w) = socketpair()?;
    let (control_host, control_reaper) = socketpair()?;
    let stacks = Stacks::new()?;

    let confine = spec.confine;
    let prepared = Prepared {
        shell: shell.as_ptr(),
        argv: argv.as_ptr(),
        envp: envp.as_ptr(),
        cwd: cwd.as_ptr(),
        rlimits,
        rlimit_count,
        fds: [
            devnull.as_raw_fd(),
            out_w.as_raw_fd(),
            err_w.as_raw_fd(),
            status_w.as_raw_fd(),
            control_reaper.as_raw_fd(),
            confine.and_then(|c| c.landlock).map_or(-1, |fd| fd.as_raw_fd()),
            confine
                .and_then(|c| c.cgroup_procs)
                .map_or(-1, |fd| fd.as_raw_fd()),
        ],
        shell_stack: stacks.shell_top(),
        setup: confine.map_or_else(Setup::none, |c| c.setup),
        scrub: *host_strings(),
    };
    let namespaces = confine.map_or(0, |c| c.namespaces);
    let pid = start_reaper(&prepared, &stacks, namespaces)?;
    // The reaper runs on its own copy of all of this: free ours now.
    drop((stacks, prepared, argv, envp, argv_owned, env_owned, shell, cwd));
    drop((devnull, out_w, err_w, status_w, control_reaper));
    set_nonblocking(&out_r)?;
    set_nonblocking(&err_r)?;
    set_nonblocking(&status_r)?;
    Ok(Spawned {
        tree: Tree::new(pid, status_r, control_host),
        stdout: out_r,
        stderr: err_r,
        cleanup: None,
    })
}

/// Where the host's original argv and environment strings lie (read once
/// from `/proc/self/stat`; empty ranges if it cannot be read).
fn host_strings() -> &'static [(usize, usize); 2] {
    static RANGES: std::sync::OnceLock<[(usize, usize); 2]> = std::sync::OnceLock::new();
    RANGES.get_or_init(|| {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        // Fields after the command name's closing parenthesis start at 3.
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        let field = |n: usize| -> usize {
            rest.split_whitespace()
                .nth(n - 3)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        let range = |a: usize, b: usize| {
            if a > 0 && b > a && b - a < (1 << 24) {
                (a, b)
            } else {
                (0, 0)
            }
        };
        [range(field(48), field(49)), range(field(50), field(51))]
    })
}

/// Forks the reaper onto its own stack (in its own copy of memory, and in
/// new namespaces when asked), with every signal blocked until it has
/// replaced the host's handlers.
fn start_reaper(prepared: &Prepared, stacks: &Stacks, namespaces: libc::c_int) -> io::Result<libc::pid_t> {
    // SAFETY: plain signal-mask calls on this thread with local sets.
    let old = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        old
    };
    // SAFETY: without CLONE_VM the child gets a copy of this process's
    // memory, so nothing it does reaches the host's heap, locks or
    // thread-locals; it starts on `stacks` (its copy) at `reaper::main`,
    // which only makes async-signal-safe raw system calls on its copy of
    // `prepared` (whose pointers point into memory copied with it) and
    // never returns. The flags add only namespaces and SIGCHLD.
    let pid = unsafe {
        raw::clone_on(
            (namespaces | libc::SIGCHLD) as usize,
            stacks.reaper_top(),
            reaper::main,
            (prepared as *const Prepared).cast_mut().cast(),
        )
    };
    // SAFETY: restoring the mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    if pid < 0 {
        return Err(io::Error::from_raw_os_error(-pid as i32));
    }
    Ok(pid as libc::pid_t)
}

fn cstring(bytes: &[u8], what: &str) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{what} contains a NUL byte, which no process can receive"),
        )
    })
}

fn invalid(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, e.to_string())
}

fn open_devnull() -> io::Result<OwnedFd> {
    // SAFETY: a constant NUL-terminated path; the fd is owned on success.
    let fd = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both fds were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn socketpair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both fds were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn set_nonblocking(fd: &OwnedFd) -> io::Result<()> {
    let raw = fd.as_raw_fd();
    // SAFETY: fcntl on an fd we own.
    let flags = unsafe { libc::fcntl(raw, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(raw, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
