//! Temp files a killed host left behind, found again at the next mount.
//!
//! A write goes to a temp file beside its target (`.NAME.toolhost-PID-N.tmp`)
//! and is renamed over it, so a host killed mid-write (`kill -9`, OOM, a
//! crash) leaves the target whole, old or new, but may leave the temp file.
//! Before each temp file is created, a marker naming it is put in the
//! module's state folder (`pending/PID-N`), and removed once the temp file
//! is renamed or deleted. At mount, the markers of processes that are gone
//! name exactly the temp files to remove: no tree is walked, and a running
//! host's writes are left alone.

use std::ffi::OsStr;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, OFlags};

use crate::policy::fd::{self, Links};
use crate::policy::Policy;

/// The markers' folder (none when the host gave no state folder).
#[derive(Default)]
pub struct Pending {
    dir: Option<PathBuf>,
}

/// One marker; removed when dropped (after the rename or the cleanup).
pub struct Marker {
    path: Option<PathBuf>,
}

impl Drop for Marker {
    fn drop(&mut self) {
        if let Some(path) = &self.path {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// What the mount-time sweep did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Swept {
    /// Temp files removed.
    pub removed: usize,
    /// Markers whose temp file was already gone (renamed before the crash).
    pub gone: usize,
}

impl Pending {
    /// Markers under `<state_dir>/pending` (created on first use).
    pub fn new(state_dir: Option<&Path>) -> Pending {
        Pending {
            dir: state_dir.map(|d| d.join("pending")),
        }
    }

    /// Records that the temp file `temp` (absolute, real) is about to be
    /// created by this process with the sequence number `n`. Best effort:
    /// a state folder that cannot be written costs only the cleanup.
    pub fn begin(&self, temp: &Path, n: u64) -> Marker {
        let Some(dir) = &self.dir else {
            return Marker { path: None };
        };
        let path = dir.join(format!("{}-{n}", std::process::id()));
        let write = || -> std::io::Result<()> {
            std::fs::create_dir_all(dir)?;
            std::fs::write(&path, temp.as_os_str().as_bytes())
        };
        match write() {
            Ok(()) => Marker { path: Some(path) },
            Err(_) => Marker { path: None },
        }
    }

    /// Removes the temp files of hosts that are no longer running, each
    /// beneath its allowed write folder with no symlink followed, and only
    /// if its name is the temp name that host would have made.
    pub fn sweep(&self, policy: &Policy) -> Swept {
        let mut swept = Swept::default();
        let Some(dir) = &self.dir else { return swept };
        let Ok(entries) = std::fs::read_dir(dir) else {
            return swept;
        };
        for entry in entries.flatten() {
            let marker = entry.path();
            let Some((pid, n)) = parse_marker(&entry.file_name()) else {
                continue;
            };
            if pid == std::process::id() || alive(pid) {
                continue;
            }
            if let Ok(temp) = std::fs::read(&marker) {
                let temp = PathBuf::from(OsStr::from_bytes(&temp));
                match remove_temp(policy, &temp, pid, n) {
                    Some(true) => swept.removed += 1,
                    Some(false) => swept.gone += 1,
                    None => {}
                }
            }
            let _ = std::fs::remove_file(&marker);
        }
        swept
    }
}

/// `PID-N` → (PID, N).
fn parse_marker(name: &OsStr) -> Option<(u32, u64)> {
    let text = name.to_str()?;
    let (pid, n) = text.split_once('-')?;
    Some((pid.parse().ok()?, n.parse().ok()?))
}

/// Whether a process with this id is running (or exists but is not ours to signal).
fn alive(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) else {
        return false;
    };
    !matches!(
        rustix::process::test_kill_process(pid),
        Err(rustix::io::Errno::SRCH)
    )
}

/// Unlinks `temp` if it is the temp name of (pid, n) inside a write root:
/// `Some(true)` removed, `Some(false)` already gone, `None` not ours to touch.
fn remove_temp(policy: &Policy, temp: &Path, pid: u32, n: u64) -> Option<bool> {
    let name = temp.file_name()?;
    let suffix = format!(".toolhost-{pid}-{n}.tmp");
    let bytes = name.as_bytes();
    if !(bytes.starts_with(b".") && bytes.ends_with(suffix.as_bytes())) {
        return None;
    }
    let parent = temp.parent()?;
    let (root, below) = policy.write_roots().find_real(parent)?;
    let root_fd = root.handle().ok()?;
    let dir = fd::open_beneath(
        root_fd.as_fd(),
        &below,
        OFlags::RDONLY | OFlags::DIRECTORY,
        Links::None,
    )
    .ok()?;
    match rustix::fs::unlinkat(&dir, name, AtFlags::empty()) {
        Ok(()) => Some(true),
        Err(rustix::io::Errno::NOENT) => Some(false),
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_parse_and_the_dead_are_told_from_the_living() {
        assert_eq!(parse_marker(OsStr::new("123-4")), Some((123, 4)));
        assert_eq!(parse_marker(OsStr::new("x-4")), None);
        assert!(alive(std::process::id()));
        let mut child = std::process::Command::new("true")
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        let pid = child.id();
        child.wait().unwrap_or_else(|e| panic!("{e}"));
        assert!(!alive(pid));
    }
}
