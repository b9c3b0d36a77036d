//! The bash module's zygote: one small `toolhost-bash-reaper` process per
//! mount that forks every command's reaper. The host never forks; a command
//! that stops or kills the zygote (possible with the sandbox off) does not
//! break the next call; the zygote ends with its mount.

mod common;

use common::InProcess;

trait Ok {
    fn ok(&self, command: &str) -> String;
}

impl Ok for InProcess {
    /// Runs `command` and returns its stdout, failing on anything but success.
    fn ok(&self, command: &str) -> String {
        let r = self.run(command);
        assert_eq!(r["status"], "success", "`{command}`: {r}");
        r["output"]["stdout"].as_str().unwrap_or("").to_string()
    }
}

/// Prints, from inside a command: the reaper's pid and exe, the zygote's
/// pid, exe and parent.
const LINEAGE: &str = r#"r=$PPID; z=$(awk '{print $4}' /proc/$r/stat); h=$(awk '{print $4}' /proc/$z/stat);
echo "reaper=$r $(readlink /proc/$r/exe)"; echo "zygote=$z $(readlink /proc/$z/exe)"; echo "host=$h""#;

fn field<'a>(out: &'a str, key: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or_else(|| panic!("no {key} line in {out:?}"))
}

/// The pid at the start of `key`'s line (`reaper=`, `zygote=`).
fn pid_at(out: &str, key: &str) -> i32 {
    field(out, key)
        .split_whitespace()
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no {key} pid in {out:?}"))
}

fn zygote_pid(out: &str) -> i32 {
    pid_at(out, "zygote=")
}

#[test]
fn every_reaper_is_forked_by_one_zygote_the_host_started_never_by_the_host() {
    let p = InProcess::bash("sandbox = \"off\"");
    let first = p.ok(LINEAGE);
    let second = p.ok(LINEAGE);
    for out in [&first, &second] {
        assert!(field(out, "reaper=").ends_with("/toolhost-bash-reaper"), "{out}");
        assert!(field(out, "zygote=").ends_with("/toolhost-bash-reaper"), "{out}");
        assert_eq!(
            field(out, "host=").trim(),
            std::process::id().to_string(),
            "the zygote is not the host's child: {out}"
        );
    }
    assert_eq!(
        zygote_pid(&first),
        zygote_pid(&second),
        "each command got its own zygote (an exec per command): {first} / {second}"
    );
    assert_ne!(field(&first, "reaper="), field(&second, "reaper="));
}

#[test]
fn a_command_that_stops_or_kills_the_zygote_does_not_break_the_next_call() {
    let p = InProcess::bash("sandbox = \"off\"");
    let before = zygote_pid(&p.ok(LINEAGE));
    // Stopped: the host wakes it before the next request.
    let r = p.run(&format!("kill -STOP {before}; echo stopped"));
    assert_eq!(r["status"], "success", "{r}");
    let after_stop = p.ok(LINEAGE);
    assert_eq!(zygote_pid(&after_stop), before, "{after_stop}");
    // Killed: the next call starts a fresh one.
    let r = p.run(&format!("kill -KILL {before}; echo killed"));
    assert_eq!(r["status"], "success", "{r}");
    assert!(
        r["output"]["stdout"].as_str().unwrap_or("").contains("killed"),
        "{r}"
    );
    // The next command runs on a fresh zygote, the host's child.
    let fresh = p.ok(LINEAGE);
    assert_ne!(zygote_pid(&fresh), before, "{fresh}");
    assert_eq!(
        field(&fresh, "host=").trim(),
        std::process::id().to_string(),
        "{fresh}"
    );
    assert_eq!(
        p.ok("echo still fine").trim(),
        "still fine",
        "the fresh zygote does not serve a second call"
    );
    p.host.shutdown();
}

#[test]
fn the_zygote_ends_with_its_mount() {
    let p = InProcess::bash("sandbox = \"off\"");
    let zygote = zygote_pid(&p.ok(LINEAGE));
    assert!(std::path::Path::new(&format!("/proc/{zygote}")).exists());
    // Shuts the host down, then drops it, its pipeline and its runtime.
    drop(p);
    // The launcher reaps its zygote when the mount's state drops: no wait.
    assert!(
        !std::path::Path::new(&format!("/proc/{zygote}")).exists(),
        "the zygote {zygote} outlived its mount"
    );
}

#[test]
fn with_the_sandbox_on_commands_cannot_see_the_zygote() {
    let p = InProcess::bash("");
    // PID 1 is the reaper; its parent is outside the namespace (0).
    let out = p.ok("awk '{print \"ppid=\" $4}' /proc/1/stat; ls /proc | grep -c '^[0-9]' ");
    assert_eq!(field(&out, "ppid="), "0", "{out}");
    p.host.shutdown();
}

/// The reaper ignores the signals a terminal or a stray `kill` would send
/// it (set once by the reaper program, which every reaper is a fork of),
/// and the command starts with none ignored.
#[test]
fn the_reaper_ignores_stray_signals_and_the_command_inherits_none() {
    let p = InProcess::bash("sandbox = \"off\"");
    let out = p.ok("grep SigIgn /proc/$PPID/status; grep SigIgn /proc/self/status");
    let masks: Vec<&str> = out.lines().filter_map(|l| l.split_whitespace().nth(1)).collect();
    // HUP INT QUIT USR1 USR2 PIPE ALRM TERM TSTP TTIN TTOU.
    assert_eq!(masks, ["0000000000387a07", "0000000000000000"], "{out}");
    p.host.shutdown();
}
