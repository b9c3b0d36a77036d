//! A process's children, from `/proc`.

use nix::unistd::Pid;

/// The processes whose parent is `parent`, from the kernel's per-thread
/// lists (`/proc/PID/task/TID/children`), which hold orphans re-parented
/// to a subreaper too. Each list is read in one go, so it is exact at the
/// moment it is read (the kernel's caveat is about lists read in pieces
/// while they change); a caller that loops "kill what is listed, reap one,
/// list again" sees a child that appears later on its next turn. Reading
/// one file per thread costs far less than every `/proc/N/stat` of the
/// machine, which is what a hook's reaper would otherwise pay per hook.
pub fn children_of(parent: Pid) -> Vec<Pid> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{parent}/task")) else {
        return Vec::new();
    };
    let mut children = Vec::new();
    for task in tasks.flatten() {
        match std::fs::read_to_string(task.path().join("children")) {
            Ok(list) => children.extend(
                list.split_whitespace()
                    .filter_map(|pid| pid.parse().ok())
                    .map(Pid::from_raw),
            ),
            // A thread that just ended; or a kernel built without these
            // lists, where only the whole table tells.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !task.path().exists() => {}
            Err(_) => return scan_all(parent),
        }
    }
    children
}

/// [`children_of`] the slow way: every `/proc/N/stat` of the machine.
fn scan_all(parent: Pid) -> Vec<Pid> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<i32>().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            (parent_in_stat(&stat)? == parent.as_raw()).then_some(Pid::from_raw(pid))
        })
        .collect()
}

/// The parent pid field of a `/proc/N/stat` line: "pid (comm) state ppid
/// …", where comm may hold spaces and parentheses.
fn parent_in_stat(stat: &str) -> Option<i32> {
    stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_parent_past_a_command_name_with_parens_and_spaces() {
        assert_eq!(parent_in_stat("42 (a) b (c)) S 7 42 42 0"), Some(7));
        assert_eq!(parent_in_stat("garbage"), None);
    }

    #[test]
    fn finds_a_real_child() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("sleep starts");
        let me = nix::unistd::getpid();
        let (found, scanned) = (children_of(me), scan_all(me));
        let _ = child.kill();
        let _ = child.wait();
        let pid = Pid::from_raw(child.id() as i32);
        assert!(found.contains(&pid), "{found:?}");
        assert!(scanned.contains(&pid), "{scanned:?}");
    }
}
