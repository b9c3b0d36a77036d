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

use super::launch::{recv_with_fds, socketpair, Launcher};
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
    /// The socket listening on `127.0.0.1:proxy_port` in the command's
    /// network namespace, when the setup asked for one and the reaper made
    /// it (`None` when its setup failed: the tree's exit says which step).
    pub proxy_listener: Option<OwnedFd>,
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
    let tree = Tree::new(started, status_r, control_host);
    let proxy_listener = if wire.setup.proxy_port != 0 {
        receive_listener(&tree)
    } else {
        None
    };
    Ok(Spawned {
        tree,
        stdout: out_r,
        stderr: err_r,
        cleanup: None,
        proxy_listener,
    })
}

/// How long the reaper may take to hand over the proxy's socket (it does so
/// before the shell starts, in well under a millisecond).
const HANDOVER_BOUND_MS: libc::c_int = 10_000;

/// The listening socket the reaper sends on the control socket
/// ([`netbridge`](super::netbridge)); `None` when it exits (a failed setup
/// step, reported on the status socket) or takes too long.
fn receive_listener(tree: &Tree) -> Option<OwnedFd> {
    let sock = tree.control_fd()?;
    let mut pfd = libc::pollfd {
        fd: sock,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: polling one fd the tree owns.
    if unsafe { libc::poll(&mut pfd, 1, HANDOVER_BOUND_MS) } != 1 {
        return None;
    }
    let mut byte = [0u8; 1];
    let (n, mut fds) = recv_with_fds(sock, &mut byte, nix::cmsg_space!([std::os::fd::RawFd; 1])).ok()?;
    (n == 1 && byte[0] == super::netbridge::HANDOVER && fds.len() == 1).then(|| fds.remove(0))
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
