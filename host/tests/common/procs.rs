//! The bash module's processes as the host (this test process) sees them in
//! `/proc`: its zygotes, their children, a process's fds. For the tests
//! that check what the zygote forks and what each process holds.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Held by every test that looks for this process's zygotes, so that the
/// zygote of a test running beside it is never mistaken for its own.
pub fn lock() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

/// Children of every thread of `pid`.
pub fn children(pid: i32) -> Vec<i32> {
    let mut all = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return all;
    };
    for t in tasks.flatten() {
        let list = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
        all.extend(list.split_whitespace().filter_map(|p| p.parse::<i32>().ok()));
    }
    all
}

/// The file `pid` runs, or "" when it cannot be read.
pub fn exe(pid: i32) -> String {
    std::fs::read_link(format!("/proc/{pid}/exe"))
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}

/// Whether `pid` exists and is neither a zombie nor dead.
pub fn is_alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(") ")
                .map(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X'))
        })
        .unwrap_or(false)
}

/// This process's zygotes (living children running the reaper program).
pub fn zygotes() -> Vec<i32> {
    children(std::process::id() as i32)
        .into_iter()
        .filter(|&c| is_alive(c) && exe(c).ends_with("/toolhost-bash-reaper"))
        .collect()
}

/// Waits (bounded) until `find` gives exactly one pid.
fn the_one(what: &str, find: impl Fn() -> Vec<i32>) -> i32 {
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let found = find();
        if let [one] = found[..] {
            return one;
        }
        assert!(Instant::now() < end, "expected one {what}, found {found:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The one zygote of this process, waited for (bounded).
pub fn the_zygote() -> i32 {
    the_one("zygote", zygotes)
}

/// `pid`'s fds as `N->target`, sorted.
pub fn fd_targets(pid: i32) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) {
        for e in dir.flatten() {
            let target = std::fs::read_link(e.path())
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            out.push(format!("{}->{target}", e.file_name().to_string_lossy()));
        }
    }
    out.sort();
    out
}

/// How many fds `pid` holds.
pub fn fd_count(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// This process's folder in the v1 pids hierarchy, if it has one.
pub fn pids_root() -> Option<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let rel = own.lines().find_map(|l| {
        l.split_once(":pids:")
            .map(|(_, r)| r.trim_start_matches('/').to_string())
    })?;
    Some(Path::new("/sys/fs/cgroup/pids").join(rel))
}

/// The per-call cgroups of this process that exist now.
pub fn cgroups_left() -> Vec<String> {
    let Some(root) = pids_root() else {
        return Vec::new();
    };
    let prefix = format!("toolhost-bash-{}-", std::process::id());
    std::fs::read_dir(&root)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

/// These tests check the per-call pids cgroup: they need root and a v1 pids
/// hierarchy, as on CI (where `bash_sandbox` checks the layer is active).
pub fn require_cgroup() {
    assert!(
        is_root() && pids_root().is_some(),
        "this test checks the pids cgroup layer: run the suite as root on a machine with a v1 pids \
         hierarchy (CI does)"
    );
}

/// Whether this test process runs as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}
