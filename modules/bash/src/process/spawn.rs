//! Starting a command: `shell -c COMMAND` under a [reaper](super::reaper),
//! in its own session and process group, with stdin from /dev/null, a clean
//! environment and optional resource limits.

use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::raw;
use super::reaper::{self, Prepared};
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
}

/// A started command: its process tree and the read ends of its output.
pub struct Spawned {
    /// The tree (reaper, shell and everything they start).
    pub tree: Tree,
    /// The shell's stdout (non-blocking).
    pub stdout: OwnedFd,
    /// The shell's stderr (non-blocking).
    pub stderr: OwnedFd,
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
    let (status_r, status_w) = pipe()?;
    let (control_host, control_reaper) = socketpair()?;
    let stacks = Stacks::new()?;

    let launch = Box::new(Launch {
        prepared: Prepared {
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
            ],
            shell_stack: stacks.shell_top(),
        },
        _strings: (shell, argv_owned, env_owned, cwd),
        _pointers: (argv, envp),
        stacks,
    });
    let pid = start_reaper(&launch)?;
    drop((devnull, out_w, err_w, status_w, control_reaper));
    set_nonblocking(&out_r)?;
    set_nonblocking(&err_r)?;
    set_nonblocking(&status_r)?;
    Ok(Spawned {
        tree: Tree::new(pid, status_r, control_host, launch),
        stdout: out_r,
        stderr: err_r,
    })
}

/// What the reaper reads while it runs: kept at one address, with everything
/// its pointers point into, until the reaper has been reaped.
pub(super) struct Launch {
    prepared: Prepared,
    _strings: (CString, [CString; 3], Vec<CString>, CString),
    _pointers: (Vec<*const libc::c_char>, Vec<*const libc::c_char>),
    stacks: Stacks,
}

// SAFETY: the raw pointers point into the strings and vectors owned by the
// same value; nothing is shared with another thread but the reaper, which
// only reads.
unsafe impl Send for Launch {}

/// Clones the reaper onto its own stack, sharing the host's memory, with
/// every signal blocked until it has replaced the host's handlers.
fn start_reaper(launch: &Launch) -> io::Result<libc::pid_t> {
    // SAFETY: plain signal-mask calls on this thread with local sets.
    let old = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        old
    };
    // SAFETY: `launch` (and the stacks and strings it owns) stays at this
    // address until the reaper is reaped (see `Tree`); the flags share only
    // memory, and `reaper::main` makes nothing but raw system calls.
    let pid = unsafe {
        raw::clone_on(
            (libc::CLONE_VM | libc::SIGCHLD) as usize,
            launch.stacks.reaper_top(),
            reaper::main,
            (&launch.prepared as *const Prepared).cast_mut().cast(),
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
