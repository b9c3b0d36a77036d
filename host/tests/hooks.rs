//! Hooks that misbehave (issue #20): a flood on stderr, a background process
//! left holding stdout. Through the real binary and real `sh` hooks.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use common::{fixture_plan, Env};
use serde_json::json;

/// Writes an executable hook script into the env folder.
fn hook(env: &Env, name: &str, body: &str) -> String {
    let path = env.path().join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

fn pre_hook(script: &str, extra: &str) -> String {
    fixture_plan(&format!(
        "[[hooks]]\nevent = \"tool:pre\"\ncommand = [\"{script}\"]\n{extra}"
    ))
}

/// Processes whose command line matches `pattern`.
fn processes(pattern: &str) -> String {
    let ps = std::process::Command::new("pgrep")
        .args(["-af", pattern])
        .output()
        .expect("pgrep runs");
    String::from_utf8_lossy(&ps.stdout).trim().to_string()
}

#[test]
fn a_hook_flooding_stderr_still_denies_under_on_failure_allow() {
    let env = Env::new("");
    // 256 KiB on stderr, four times a pipe's buffer, before the answer.
    let script = hook(
        &env,
        "noisy.sh",
        r#"cat >/dev/null; head -c 262144 /dev/zero | tr '\0' 'e' >&2; echo '{"decision":"deny","reason":"noisy but firm"}'"#,
    );
    env.set_plan(&pre_hook(&script, "timeout_ms = 10000\non_failure = \"allow\"\n"));
    let called = env.call("echo", json!({"message": "x"}));
    assert_eq!(called.status(), "policy_denied", "{}", called.result);
    called.assert_says("noisy but firm");
}

#[test]
fn a_failing_hook_reports_the_tail_of_its_stderr() {
    let env = Env::new("");
    let script = hook(
        &env,
        "fails.sh",
        r#"cat >/dev/null; head -c 200000 /dev/zero | tr '\0' 'x' >&2; echo "the last words" >&2; exit 3"#,
    );
    env.set_plan(&pre_hook(&script, "timeout_ms = 10000\n"));
    let called = env.call("echo", json!({"message": "x"}));
    assert_eq!(called.status(), "policy_denied", "{}", called.result);
    let message = called.message();
    assert!(message.contains("exit status: 3"), "{message}");
    assert!(message.contains("the last words"), "{message}");
    assert!(
        message.len() < 8 * 1024,
        "the stderr kept is bounded: {} bytes",
        message.len()
    );
}

#[test]
fn a_background_process_holding_stdout_neither_times_the_hook_out_nor_survives() {
    let env = Env::new("");
    // A unique sleep length marks the background process for pgrep.
    let marker = format!("sleep 40.{}", std::process::id());
    let script = hook(
        &env,
        "leaves_child.sh",
        &format!(r#"cat >/dev/null; {marker} & echo '{{"decision":"deny","reason":"answered at once"}}'"#),
    );
    env.set_plan(&pre_hook(&script, "timeout_ms = 20000\non_failure = \"allow\"\n"));
    let started = Instant::now();
    let called = env.call("echo", json!({"message": "x"}));
    assert_eq!(called.status(), "policy_denied", "{}", called.result);
    called.assert_says("answered at once");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the hook was waited on past its exit: {:?}",
        started.elapsed()
    );
    // SIGKILL is delivered at once; give the kernel a moment to reap.
    let until = Instant::now() + Duration::from_secs(5);
    while !processes(&marker).is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(processes(&marker), "", "the hook's background process survived");
}

/// A hook script that starts `sleep 300` in a new session (out of the
/// hook's process group, which is all a group kill reaches), writes that
/// process's pid to `pidfile` and, once it is there, runs `then`.
fn escaping_hook(env: &Env, pidfile: &std::path::Path, then: &str) -> String {
    let file = pidfile.display();
    hook(
        env,
        "escapes.sh",
        &format!(
            "cat >/dev/null\n\
             setsid sh -c 'echo $$ > {file}.tmp && mv {file}.tmp {file}; exec sleep 300' </dev/null >/dev/null 2>&1 &\n\
             while [ ! -s {file} ]; do sleep 0.01; done\n\
             {then}"
        ),
    )
}

/// The pid the hook wrote, and whether it is gone within a moment.
fn escaped_is_gone(pidfile: &std::path::Path) -> (i32, bool) {
    let pid: i32 = std::fs::read_to_string(pidfile)
        .expect("the hook wrote its escaped child's pid")
        .trim()
        .parse()
        .expect("a pid");
    let until = Instant::now() + Duration::from_secs(2);
    while common::procs::is_alive(pid) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let gone = !common::procs::is_alive(pid);
    if !gone {
        // Leave nothing behind on failure either.
        let _ = nix_kill(pid);
    }
    (pid, gone)
}

fn nix_kill(pid: i32) -> std::io::Result<std::process::ExitStatus> {
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
}

#[test]
fn a_setsid_child_of_a_hook_does_not_outlive_the_hook() {
    let env = Env::new("");
    let pidfile = env.path().join("escaped.pid");
    let script = escaping_hook(
        &env,
        &pidfile,
        r#"echo '{"decision":"deny","reason":"answered, child left running"}'"#,
    );
    env.set_plan(&pre_hook(&script, "timeout_ms = 20000\n"));
    let called = env.call("echo", json!({"message": "x"}));
    assert_eq!(called.status(), "policy_denied", "{}", called.result);
    called.assert_says("answered, child left running");
    let (pid, gone) = escaped_is_gone(&pidfile);
    assert!(gone, "the hook's setsid child {pid} outlived the hook");
}

#[test]
fn a_setsid_child_of_a_hook_that_times_out_does_not_outlive_it() {
    let env = Env::new("");
    let pidfile = env.path().join("escaped.pid");
    let script = escaping_hook(&env, &pidfile, "sleep 300");
    env.set_plan(&pre_hook(&script, "timeout_ms = 1500\n"));
    let started = Instant::now();
    let called = env.call("echo", json!({"message": "x"}));
    assert_eq!(called.status(), "policy_denied", "{}", called.result);
    called.assert_says("timed out after 1500 ms");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    let (pid, gone) = escaped_is_gone(&pidfile);
    assert!(gone, "the timed-out hook's setsid child {pid} outlived it");
}
