//! Process limits that hold for root: a pids cgroup per command, with
//! `pids.max` set, joined by the reaper before the shell starts (so every
//! process of the command is counted, whatever its user). RLIMIT_NPROC, by
//! contrast, is per user and does not bind root at all.

use super::error::CgroupError;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Where this process's pids cgroups can be made, when it can.
#[derive(Debug, Clone)]
pub struct PidsRoot {
    dir: PathBuf,
}

impl PidsRoot {
    /// Finds the pids controller this process is in (cgroup v1 `pids`
    /// hierarchy, or v2 with `pids` delegated) and checks a child can be
    /// made there. The error says why not.
    pub fn find() -> Result<PidsRoot, CgroupError> {
        let own = std::fs::read_to_string("/proc/self/cgroup").map_err(CgroupError::Own)?;
        let mut candidates = Vec::new();
        for line in own.lines() {
            let mut parts = line.splitn(3, ':');
            let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
                continue;
            };
            let rel = path.trim_start_matches('/');
            if controllers.split(',').any(|c| c == "pids") {
                candidates.push(Path::new("/sys/fs/cgroup/pids").join(rel));
            } else if controllers.is_empty() {
                for root in ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"] {
                    let dir = Path::new(root).join(rel);
                    let delegated = std::fs::read_to_string(dir.join("cgroup.subtree_control"))
                        .is_ok_and(|s| s.split_whitespace().any(|c| c == "pids"));
                    if delegated {
                        candidates.push(dir);
                    }
                }
            }
        }
        let mut why = CgroupError::NoController;
        for dir in candidates {
            let root = PidsRoot { dir };
            match root.make(1) {
                Ok(probe) => {
                    drop(probe);
                    return Ok(root);
                }
                Err(e) => why = e,
            }
        }
        Err(why)
    }

    /// A fresh cgroup allowing `max` processes, with `cgroup.procs` open.
    pub fn make(&self, max: u64) -> Result<PidsGroup, CgroupError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = self.dir.join(format!("toolhost-bash-{}-{n}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|source| CgroupError::Io {
            what: "create",
            path: dir.clone(),
            source,
        })?;
        let mut group = PidsGroup {
            dir,
            procs: None,
            reaper: None,
        };
        let limit = group.dir.join("pids.max");
        std::fs::write(&limit, max.to_string()).map_err(|source| CgroupError::Io {
            what: "write",
            path: limit.clone(),
            source,
        })?;
        let procs = OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_CLOEXEC)
            .open(group.dir.join("cgroup.procs"))
            .map_err(|source| CgroupError::Io {
                what: "open cgroup.procs in",
                path: group.dir.clone(),
                source,
            })?;
        group.procs = Some(procs);
        Ok(group)
    }
}

/// One command's cgroup; removed on drop (its processes are gone by then).
#[derive(Debug)]
pub struct PidsGroup {
    dir: PathBuf,
    procs: Option<File>,
    /// A pidfd for the reaper that joined, waited on before removal.
    reaper: Option<OwnedFd>,
}

impl PidsGroup {
    /// `cgroup.procs`, open for writing: the reaper writes `0` to join.
    pub fn procs(&self) -> Option<&File> {
        self.procs.as_ref()
    }

    /// Makes removal wait for `reaper` (a pidfd) to exit. The host learns
    /// that the tree is gone from the reaper just before it exits, and the
    /// reaper counts in the cgroup until its exit ends: without the wait,
    /// the first removal failed and a 2 ms retry cost most calls 2 ms.
    pub fn watch(&mut self, reaper: BorrowedFd<'_>) {
        self.reaper = reaper.try_clone_to_owned().ok();
    }

    /// Moves the calling process in (used by tests of the mechanism).
    pub fn join_self(&mut self) -> std::io::Result<()> {
        match self.procs.as_mut() {
            Some(f) => f.write_all(b"0"),
            None => Ok(()),
        }
    }
}

impl Drop for PidsGroup {
    fn drop(&mut self) {
        self.procs = None;
        if let Some(reaper) = self.reaper.take() {
            wait_exited(&reaper, REAPER_EXIT);
        }
        // Zombies still count for a moment after their parent is reaped.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
}

/// How long removal waits for the reaper's exit: its tree is gone (or was
/// killed) by then, so this bounds only a reaper stuck in the kernel.
const REAPER_EXIT: Duration = Duration::from_secs(5);

/// Waits, up to `bound`, until the process behind `pidfd` has exited (the
/// pidfd turns readable).
fn wait_exited(pidfd: &OwnedFd, bound: Duration) {
    let end = Instant::now() + bound;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        let mut pfd = libc::pollfd {
            fd: pidfd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: polling one pidfd we own.
        let r = unsafe { libc::poll(&mut pfd, 1, left.as_millis().min(1000) as libc::c_int) };
        if r != 0 || left.is_zero() {
            return;
        }
    }
}
