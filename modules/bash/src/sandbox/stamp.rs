//! Skipping the spawn probe at mount when this boot already proved the same
//! layers hold: a *stamp* file in the module's state folder records the
//! full probe's key after a probe in which every layer asked for held and
//! every hidden path was covered.
//!
//! The key names everything the probe's outcome depends on: the boot (a
//! reboot may bring another kernel, other sysctls, other mounts), the
//! kernel release, the user and group, the sysctls that gate user
//! namespaces, the reaper program's build (path, size, mtime) and the
//! module's version, and what the plan asks for (mode, network, layers,
//! hidden, read-only and writable paths, the process limit, the working
//! folder).
//!
//! Why a stamp cannot weaken the sandbox: it only ever says "every layer
//! held". A stamp that lies (written by hand, or stale after a sysctl
//! changed within the boot) makes every call ask for every layer; a layer
//! the kernel then refuses fails the call (`sandbox_failed`, the command is
//! not run) and removes the stamp, so the next mount probes again. A probe
//! that found any layer or hidden path missing writes no stamp, so a report
//! of "unavailable" is always fresh. The module's state folder is hidden
//! from sandboxed commands.

use std::path::{Path, PathBuf};

use super::{Layers, Request};

/// The stamp's file name in the module's state folder.
pub const FILE: &str = "sandbox-probe.stamp";

/// Sysctls that decide whether user namespaces may be made.
const SYSCTLS: [&str; 4] = [
    "/proc/sys/kernel/unprivileged_userns_clone",
    "/proc/sys/user/max_user_namespaces",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
    "/proc/sys/user/max_pid_namespaces",
];

/// The probe's key for this mount, or `None` when the boot cannot be told
/// apart (no boot id): then there is no stamp.
pub fn key(
    req: &Request<'_>,
    want: &Layers,
    hidden: &[(std::ffi::CString, bool)],
    read_only: &[std::ffi::CString],
    writable: &[PathBuf],
) -> Option<String> {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let mut key = format!("boot={}\n", boot.trim());
    key.push_str(&format!("kernel={}\n", kernel_release()));
    // SAFETY: geteuid/getegid cannot fail.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    key.push_str(&format!("ids={uid}:{gid}\n"));
    for s in SYSCTLS {
        let v = std::fs::read_to_string(s).unwrap_or_else(|_| "-".into());
        key.push_str(&format!("{s}={}\n", v.trim()));
    }
    let reaper = crate::process::launch::reaper_path().ok()?;
    let meta = std::fs::metadata(reaper).ok()?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    key.push_str(&format!(
        "reaper={} {} {mtime} v{}\n",
        reaper.display(),
        meta.len(),
        env!("CARGO_PKG_VERSION")
    ));
    key.push_str(&format!(
        "mode={:?} network={} processes={:?} cwd={}\nwant={want:?}\nhidden={hidden:?}\nread_only={read_only:?}\n\
         writable={writable:?}\n",
        req.mode,
        req.network,
        req.processes,
        req.working_dir.display()
    ));
    Some(key)
}

/// Whether the stamp at `path` holds exactly `key`.
pub fn matches(path: &Path, key: &str) -> bool {
    std::fs::read_to_string(path).is_ok_and(|s| s == key)
}

/// Records `key` (written whole or not at all). Failure only costs the next
/// mount a probe.
pub fn write(path: &Path, key: &str) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let Some(dir) = path.parent() else { return };
    let tmp = dir.join(format!(".{FILE}.{}", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(key.as_bytes()));
    if written.and_then(|_| std::fs::rename(&tmp, path)).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// Removes the stamp: the next mount probes again.
pub fn forget(path: &Path) {
    let _ = std::fs::remove_file(path);
}

fn kernel_release() -> String {
    // SAFETY: uname fills a local utsname; its fields are NUL-terminated.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) != 0 {
            return "-".into();
        }
        std::ffi::CStr::from_ptr(u.release.as_ptr())
            .to_string_lossy()
            .into_owned()
    }
}
