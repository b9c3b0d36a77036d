//! A process's children, from `/proc`.

use nix::unistd::Pid;

/// The processes whose parent is `parent`, read from every `/proc/N/stat`
/// (the kernel's `/proc/PID/task/TID/children` lists are documented as
/// reliable only while the children are frozen).
pub fn children_of(parent: Pid) -> Vec<Pid> {
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
        let found = children_of(nix::unistd::getpid());
        let _ = child.kill();
        let _ = child.wait();
        assert!(found.contains(&Pid::from_raw(child.id() as i32)), "{found:?}");
    }
}
