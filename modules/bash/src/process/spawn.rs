//! Starting a command: `shell -c COMMAND` under a [reaper](super::reaper),
//! in its own session and process group, with stdin from /dev/null, a clean
//! environment, optional resource limits and optional sandbox steps.
//!
//! The host builds a [`Spec`] and hands it, with the fds, to the mount's
//! [zygote](super::program), which forks the reaper
//! ([`launch`](super::launch)); the host itself is never forked.

use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::launch::{socketpair, Launcher};
use super::spec::{SetupSpec, Spec};
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

/// What the sandbox asks of one spawn.
pub struct Confine<'a> {
    /// `CLONE_NEW*` flags for the reaper.
    pub namespaces: libc::c_int,
    /// The steps.
    pub setup: SetupSpec,
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

/// Starts `spec`. Fails when the host is out of fds or processes or the
/// reaper program is missing; a shell that cannot start reports that on
/// stderr with exit code 126/127.
pub fn spawn(launcher: &Launcher, spec: &SpawnSpec<'_>) -> io::Result<Spawned> {
    let shell = cstring(spec.shell.as_os_str().as_bytes(), "the shell path")?;
    let argv = vec![
        shell.clone(),
        CString::new("-c").map_err(invalid)?,
        cstring(spec.command.as_bytes(), "the command")?,
    ];
    let env = spec
        .env
        .iter()
        .map(|(k, v)| {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            cstring(&kv, "an environment variable")
        })
        .collect::<io::Result<Vec<_>>>()?;
    let cwd = cstring(spec.cwd.as_os_str().as_bytes(), "the working directory")?;
    let confine = spec.confine.as_ref();
    let wire = Spec {
        shell,
        argv,
        env,
        cwd,
        rlimits: spec.rlimits.to_vec(),
        namespaces: confine.map_or(0, |c| c.namespaces),
        setup: confine.map(|c| c.setup.clone()).unwrap_or_default(),
    };

    let devnull = open_devnull()?;
    let (out_r, out_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    // A socket, not a pipe: a socket cannot be reopened through
    // /proc/<reaper>/fd, so no command can forge the status it carries.
    let (status_r, status_w) = socketpair()?;
    let (control_host, control_reaper) = socketpair()?;
    let fds = [
        devnull.as_raw_fd(),
        out_w.as_raw_fd(),
        err_w.as_raw_fd(),
        status_w.as_raw_fd(),
        control_reaper.as_raw_fd(),
        confine.and_then(|c| c.landlock).map_or(-1, |fd| fd.as_raw_fd()),
        confine
            .and_then(|c| c.cgroup_procs)
            .map_or(-1, |fd| fd.as_raw_fd()),
    ];
    let started = launcher.start(fds, &wire.encode())?;
    drop((devnull, out_w, err_w, status_w, control_reaper));
    set_nonblocking(&out_r)?;
    set_nonblocking(&err_r)?;
    set_nonblocking(&status_r)?;
    Ok(Spawned {
        tree: Tree::new(started, status_r, control_host),
        stdout: out_r,
        stderr: err_r,
        cleanup: None,
    })
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
