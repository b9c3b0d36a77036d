//! A minimal `/dev` for the command, as bubblewrap's `--dev` makes: a fresh
//! tmpfs with only `null`, `zero`, `full`, `random`, `urandom` and `tty`
//! bound from the host, a private `devpts` instance, an empty `shm` and the
//! usual `fd`/`stdin`/`stdout`/`stderr` links, then made read-only.
//!
//! Why: root holds the owner bits of every device node (`brw------- root`),
//! so even with no capability left it could read a raw disk, and another
//! user's terminal under `/dev/pts` would be open to reads. Run by the
//! reaper in its own mount namespace (a process of its own, never the
//! host), before it drops its capabilities.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::Path;

/// The device nodes kept.
const NODES: [&str; 6] = ["null", "zero", "full", "random", "urandom", "tty"];

/// Replaces `/dev` with the minimal tree. `landlock`: the call's ruleset,
/// not yet entered, to which a rule for the private devpts is added.
pub fn make_minimal(landlock: Option<RawFd>) -> io::Result<()> {
    // Hold each kept node before the tmpfs hides it; bind it from
    // /proc/self/fd afterwards.
    let mut held: Vec<(&str, OwnedFd)> = Vec::with_capacity(NODES.len());
    for name in NODES {
        let path = Path::new("/dev").join(name);
        if let Ok(fd) = rustix::fs::open(
            &path,
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        ) {
            held.push((name, fd));
        }
    }
    mount(
        Some("tmpfs"),
        "/dev",
        Some("tmpfs"),
        libc::MS_NOSUID | libc::MS_NOEXEC,
        Some("mode=0755,size=64k"),
    )?;
    for (name, fd) in &held {
        let target = Path::new("/dev").join(name);
        std::fs::File::create(&target)?;
        let source = format!("/proc/self/fd/{}", fd.as_raw_fd());
        mount(
            Some(&source),
            &target.to_string_lossy(),
            None,
            libc::MS_BIND,
            None,
        )?;
    }
    drop(held);
    std::fs::create_dir("/dev/pts")?;
    std::fs::create_dir("/dev/shm")?;
    // A devpts of the command's own: no host terminal is reachable. Not
    // every kernel lets a user namespace make one; then there are no ptys.
    // Landlock refuses writes outside its rules, so the private instance
    // gets a rule of its own (nothing else in /dev is writable but the
    // harmless devices); without it there are no ptys either.
    let ptys = mount(
        Some("devpts"),
        "/dev/pts",
        Some("devpts"),
        libc::MS_NOSUID | libc::MS_NOEXEC,
        Some("newinstance,ptmxmode=0666,mode=0620"),
    )
    .is_ok()
        && landlock.is_none_or(|ruleset| {
            rustix::fs::open(
                "/dev/pts",
                rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )
            .map_err(io::Error::from)
            .and_then(|pts| crate::sandbox::landlock::allow_ptys(ruleset, &pts))
            .is_ok()
        });
    if ptys {
        std::os::unix::fs::symlink("pts/ptmx", "/dev/ptmx")?;
    }
    for (link, to) in [
        ("/dev/fd", "/proc/self/fd"),
        ("/dev/stdin", "/proc/self/fd/0"),
        ("/dev/stdout", "/proc/self/fd/1"),
        ("/dev/stderr", "/proc/self/fd/2"),
    ] {
        std::os::unix::fs::symlink(to, link)?;
    }
    mount(
        None,
        "/dev",
        None,
        libc::MS_REMOUNT | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NOEXEC,
        None,
    )
}

fn mount(
    source: Option<&str>,
    target: &str,
    fstype: Option<&str>,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> io::Result<()> {
    let c = |s: &str| CString::new(s.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput));
    let source = source.map(c).transpose()?;
    let target = c(target)?;
    let fstype = fstype.map(c).transpose()?;
    let data = data.map(c).transpose()?;
    let ptr = |s: &Option<CString>| s.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
    // SAFETY: every pointer is a NUL-terminated string that outlives the
    // call, or NULL where mount(2) allows it.
    let rc = unsafe {
        libc::mount(
            ptr(&source),
            target.as_ptr(),
            ptr(&fstype),
            flags,
            ptr(&data).cast(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
