//! Starting a command: `shell -c COMMAND` under a [reaper](super::reaper),
//! in its own session and process group, with stdin from /dev/null, a clean
//! environment and optional resource limits.

use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::reaper::{self, Prepared};
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

    let mut rlimits = [(0 as libc::c_int, 0 as libc::rlim_t); 8];
    let rlimit_count = spec.rlimits.len().min(rlimits.len());
    for (slot, (resource, value)) in rlimits.iter_mut().zip(spec.rlimits) {
        *slot = (*resource, *value as libc::rlim_t);
    }

    let devnull = open_devnull()?;
    let (out_r, out_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    let (status_r, status_w) = pipe()?;
    let (control_host, control_reaper) = socketpair()?;

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
        ],
    };
    // SAFETY: fork has no preconditions; the child only runs `reaper::run`,
    // which makes async-signal-safe calls on data prepared above and exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: we are the child of fork, `prepared` is fully built.
        unsafe { reaper::run(&prepared) }
    }
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    drop((devnull, out_w, err_w, status_w, control_reaper));
    set_nonblocking(&out_r)?;
    set_nonblocking(&err_r)?;
    set_nonblocking(&status_r)?;
    Ok(Spawned {
        tree: Tree::new(pid, status_r, control_host),
        stdout: out_r,
        stderr: err_r,
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
