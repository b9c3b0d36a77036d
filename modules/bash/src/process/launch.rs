//! Starting the [reaper program](super::program) from the host with
//! `posix_spawn`: no code of ours runs in the child that shares the host's
//! memory (glibc's `CLONE_VM | CLONE_VFORK` child only applies the file
//! actions and attributes below and calls `execve`).

use std::ffi::CString;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::program::{NAME, SPEC_FD};
use super::reaper::FD_COUNT;

/// Where the reaper program is: beside the module's own file (an install
/// puts both in `lib/toolhost/`, a cargo build in `target/<profile>/`), or
/// one folder up (a unit-test binary under `target/<profile>/deps/`).
pub fn reaper_path() -> Result<&'static Path, String> {
    static PATH: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PATH.get_or_init(find)
        .as_ref()
        .map(|p| p.as_path())
        .map_err(|e| e.clone())
}

fn find() -> Result<PathBuf, String> {
    let here = own_file().ok_or("cannot tell which file the bash module was loaded from")?;
    let dir = here.parent().unwrap_or(Path::new("/"));
    let candidates = [dir.join(NAME), dir.join("..").join(NAME)];
    for c in &candidates {
        if c.is_file() {
            return Ok(std::path::absolute(c).unwrap_or_else(|_| c.clone()));
        }
    }
    Err(format!(
        "the bash module's reaper program `{NAME}` is not beside the module ({}): install it with the \
         module (cargo xtask install / dist do), or build it with `cargo build --workspace`",
        dir.display()
    ))
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

/// Starts the reaper program with `fds` at 0..FD_COUNT (-1: not passed)
/// and `spec` on [`SPEC_FD`], in a new session, every signal at its
/// default and unblocked, and an empty environment. Returns its pid.
pub fn start(fds: [RawFd; FD_COUNT], spec: &[u8]) -> io::Result<libc::pid_t> {
    let path = reaper_path().map_err(|e| io::Error::new(io::ErrorKind::NotFound, e))?;
    let path =
        CString::new(path.as_os_str().as_bytes()).map_err(|_| io::Error::other("NUL in the reaper path"))?;
    let memfd = spec_memfd(spec)?;
    // Each source first gets a number above every target, so that the
    // dup2 actions cannot overwrite a source before it is moved.
    let mut high: Vec<(OwnedFd, RawFd)> = Vec::with_capacity(FD_COUNT + 1);
    for (target, fd) in fds.iter().enumerate() {
        if *fd >= 0 {
            high.push((dup_high(*fd)?, target as RawFd));
        }
    }
    high.push((dup_high(memfd.as_raw_fd())?, SPEC_FD));
    let argv = [path.as_ptr(), std::ptr::null()];
    let envp = [std::ptr::null::<libc::c_char>()];
    // SAFETY: the attribute and file-action objects are initialised before
    // use and destroyed on every path; every pointer passed lives until
    // posix_spawn returns (it has exec'd or failed by then).
    unsafe {
        let mut actions: libc::posix_spawn_file_actions_t = std::mem::zeroed();
        let mut attr: libc::posix_spawnattr_t = std::mem::zeroed();
        check(libc::posix_spawn_file_actions_init(&mut actions))?;
        if let Err(e) = check(libc::posix_spawnattr_init(&mut attr)) {
            libc::posix_spawn_file_actions_destroy(&mut actions);
            return Err(e);
        }
        let result = (|| {
            for (fd, target) in &high {
                check(libc::posix_spawn_file_actions_adddup2(
                    &mut actions,
                    fd.as_raw_fd(),
                    *target,
                ))?;
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
    }
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

/// A sealed-size memfd holding `spec`, read from the start.
fn spec_memfd(spec: &[u8]) -> io::Result<OwnedFd> {
    // SAFETY: a constant NUL-terminated name; the fd is owned on success.
    let fd = unsafe { libc::memfd_create(c"toolhost-bash-spec".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: just created, owned by nobody else.
    let mut file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    file.write_all(spec)?;
    // SAFETY: lseek on an fd we own.
    if unsafe { libc::lseek(file.as_raw_fd(), 0, libc::SEEK_SET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(file.into())
}
