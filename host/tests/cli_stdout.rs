//! Output that cannot be delivered is an error: every command that prints
//! results exits 2 with a reason on stderr when stdout is full or was
//! closed, and a process started with descriptors 0–2 closed neither
//! writes its results into a file it opened nor fails to work.

mod common;

use std::fs::{File, OpenOptions};
use std::process::{Command, Output, Stdio};

use common::{fixture_plan, Env};
use serde_json::Value;

const ECHO: &str = r#"{"message": "hi"}"#;

/// A fixture plan with an audit log: a file the host opens at start, the
/// one a closed descriptor 1 would otherwise turn into.
fn env() -> Env {
    Env::new(&fixture_plan("").replace("[host]\n", "[host]\naudit_log = \"audit.jsonl\"\n"))
}

fn full() -> File {
    OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("open /dev/full")
}

/// Runs `toolhost ARGS…` through `sh`, which first closes the descriptors
/// named in `closing` (`<&-`, `>&-`, `2>&-`).
fn with_closed(env: &Env, closing: &str, args: &[&str]) -> Output {
    let toolhost = env.command();
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("exec \"$0\" \"$@\" {closing}"))
        .arg(toolhost.get_program())
        .args(toolhost.get_args())
        .args(args)
        .current_dir(env.path())
        .envs(toolhost.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
        .env_remove("TOOLHOST_PLAN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.output().expect("run sh")
}

fn assert_lost(out: &Output, what: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
    assert!(stderr.contains("cannot write"), "{what}: {stderr}");
}

#[test]
fn every_command_that_prints_fails_on_a_full_stdout() {
    let env = env();
    // A record to verify.
    let first = env.call("echo", serde_json::json!({"message": "hi"}));
    assert_eq!(first.code, 0, "{:?}", first.result);
    let batch_input = format!("{{\"name\":\"echo\",\"input\":{ECHO}}}\n");
    let batch_file = env.path().join("calls.jsonl");
    std::fs::write(&batch_file, batch_input).expect("write batch");
    let batch = batch_file.display().to_string();
    for args in [
        &["list"][..],
        &["list", "--json"],
        &["describe", "echo"],
        &["check"],
        &["call", "echo", ECHO],
        &["batch", &batch],
        &["audit", "verify", "audit.jsonl"],
    ] {
        let out = env
            .command()
            .args(args)
            .stdout(full())
            .stderr(Stdio::piped())
            .output()
            .expect("run toolhost");
        assert_lost(&out, &args.join(" "));
    }
}

/// `init` writes its plan, then says so on stdout: a full stdout is the
/// same loud exit 2 as for the other commands, not a panic.
#[test]
fn init_on_a_full_stdout_exits_2_without_a_panic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let env = env();
    let out = env
        .command()
        .arg("init")
        .current_dir(dir.path())
        .stdout(full())
        .stderr(Stdio::piped())
        .output()
        .expect("run toolhost init");
    assert_lost(&out, "init");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    assert!(
        dir.path().join("toolhost.toml").is_file(),
        "the plan itself was written"
    );
}

#[test]
fn results_are_lost_loudly_when_stdout_was_closed() {
    let env = env();
    for args in [&["call", "echo", ECHO][..], &["list"], &["describe", "echo"]] {
        let out = with_closed(&env, ">&-", args);
        assert_lost(&out, &args.join(" "));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("closed when toolhost started"), "{stderr}");
    }
    // MCP on stdio would speak into nothing: refused at start.
    let out = with_closed(&env, ">&-", &["serve"]);
    assert_lost_at_start(&out);
}

fn assert_lost_at_start(out: &Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "serve: {stderr}");
    assert!(
        stderr.contains("stdout was closed when toolhost started"),
        "{stderr}"
    );
}

#[test]
fn closed_standard_descriptors_never_receive_results() {
    let env = env();
    let out = with_closed(&env, "<&- >&- 2>&-", &["call", "echo", ECHO]);
    assert_eq!(out.status.code(), Some(2), "the result had nowhere to go");
    // The audit log, opened while 0–2 were closed, holds audit records
    // only: no result was written into it.
    let audit = std::fs::read_to_string(env.path().join("audit.jsonl")).expect("audit log");
    let records: Vec<Value> = audit
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a record ({e}): {l}")))
        .collect();
    assert_eq!(records.len(), 1, "{audit}");
    assert_eq!(records[0]["tool"], "echo", "{audit}");
    assert!(records[0].get("output").is_none(), "{audit}");

    // With stdin and stderr closed, stdout open: everything works.
    let out = with_closed(&env, "<&- 2>&-", &["call", "echo", ECHO]);
    assert_eq!(out.status.code(), Some(0));
    let result: Value = serde_json::from_slice(&out.stdout).expect("a result on stdout");
    assert_eq!(result["status"], "success", "{result}");
    let out = with_closed(&env, "<&- 2>&-", &["list"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("echo"));
}
