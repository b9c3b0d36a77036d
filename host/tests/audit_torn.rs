//! `toolhost audit verify` accepts a line that is not a record only where a
//! crash leaves one: the last line of a file, or right before the restart
//! record the next host writes (a reviewer's finding on issue #16: any
//! inserted non-JSON line used to pass as "torn"). Driven through the real
//! binary; the torn line is left by a real process killed after writing
//! half a record.

mod common;

use std::process::Command;

use common::{fixture_plan, Env};
use serde_json::{json, Value};

fn audited_plan() -> String {
    fixture_plan("").replacen("[host]\n", "[host]\naudit_log = \"audit.jsonl\"\n", 1)
}

/// `toolhost audit verify audit.jsonl`: exit code and stdout.
fn verify(env: &Env) -> (i32, String) {
    let out = env.run(&["audit", "verify", "audit.jsonl"]);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

fn log_text(env: &Env) -> String {
    std::fs::read_to_string(env.path().join("audit.jsonl")).expect("audit log")
}

/// A writer that appends half a record to the log and is killed by SIGKILL
/// before it can finish the line (what `kill -9` inside a write leaves).
fn killed_writer(env: &Env, half: &str) {
    let status = Command::new("sh")
        .arg("-c")
        .arg(r#"printf '%s' "$1" >> audit.jsonl; kill -9 $$; printf 'not reached\n' >> audit.jsonl"#)
        .arg("sh")
        .arg(half)
        .current_dir(env.path())
        .status()
        .expect("run sh");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(9), "the writer must die by SIGKILL");
}

fn echo(env: &Env, message: &str) {
    env.call("echo", json!({ "message": message })).assert_success();
}

#[test]
fn an_inserted_garbage_line_mid_file_fails_verify_with_its_line_number() {
    let env = Env::new(&audited_plan());
    for m in ["a", "b", "c"] {
        echo(&env, m);
    }
    let (code, out) = verify(&env);
    assert_eq!(code, 0, "{out}");
    // Garbage between records 1 and 2; the chain around it is intact.
    let text = log_text(&env);
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(1, "{\"seq\":1,\"prev_sha256\":\"deadbeef");
    std::fs::write(env.path().join("audit.jsonl"), lines.join("\n") + "\n").expect("insert");
    assert_not_a_record_at(&env, 2);
}

/// `verify` fails, naming `line` of the log as a line no crash leaves.
fn assert_not_a_record_at(env: &Env, line: usize) {
    let (code, out) = verify(env);
    assert_eq!(code, 1, "{out}");
    let broken = format!("BROKEN audit.jsonl:{line}: not a record, and not where a crash leaves a torn line");
    assert!(out.contains(&broken), "{out}");
}

#[test]
fn a_real_torn_tail_then_a_restart_passes_verify() {
    let env = Env::new(&audited_plan());
    echo(&env, "before");
    echo(&env, "before again");
    let half = "{\"seq\":2,\"prev_sha256\":\"0f3a\",\"ts_unix_ms\":17";
    killed_writer(&env, half);
    assert!(log_text(&env).ends_with(half), "the log ends torn");
    // Before anyone appends, the torn line is the file's last line: accepted.
    let (code, out) = verify(&env);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("torn  audit.jsonl:3"), "{out}");

    // The next host appends: a restart record naming the fragment, then
    // its own record, both chained.
    echo(&env, "after");
    let text = log_text(&env);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[2], half, "the fragment is kept as it was");
    let restart: Value = serde_json::from_str(lines[3]).expect("restart record");
    assert_eq!(restart["event"], "restart_after_torn_line", "{restart}");
    assert_eq!(restart["seq"], 2, "{restart}");
    assert_eq!(restart["torn_bytes"], half.len(), "{restart}");
    let after: Value = serde_json::from_str(lines[4]).expect("the new record");
    assert_eq!(after["seq"], 3, "{after}");
    let (code, out) = verify(&env);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("torn  audit.jsonl:3"), "{out}");
    assert!(out.contains("ok    4 record(s) intact; head: seq 3"), "{out}");

    // Swapping the fragment for other bytes breaks it: the restart record
    // names the original.
    let forged = text.replacen(half, "{\"seq\":2,\"prev_sha256\":\"0f3b\",\"ts_unix_ms\":17", 1);
    std::fs::write(env.path().join("audit.jsonl"), forged).expect("swap");
    let (code, out) = verify(&env);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("BROKEN audit.jsonl:3: not a record"), "{out}");
}

#[test]
fn a_torn_line_without_a_restart_record_mid_file_fails_verify() {
    let env = Env::new(&audited_plan());
    echo(&env, "before");
    // A fragment closed with a newline and followed by an ordinary record
    // that links past it (what hosts did before the restart record): the
    // chain holds, but nothing vouches for the line.
    killed_writer(&env, "{\"seq\":1,\"prev_sha256\":\"77");
    std::fs::OpenOptions::new()
        .append(true)
        .open(env.path().join("audit.jsonl"))
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"\n"))
        .expect("close the fragment");
    echo(&env, "after");
    let text = log_text(&env);
    assert!(
        !text.contains("restart_after_torn_line"),
        "a log ending in a newline is not torn: {text}"
    );
    assert_not_a_record_at(&env, 2);
}

#[test]
fn a_record_write_cut_short_by_a_full_disk_leaves_no_fragment() {
    use std::os::unix::process::CommandExt;

    let env = Env::new(&audited_plan());
    echo(&env, "fits");
    let log = env.path().join("audit.jsonl");
    let size = std::fs::metadata(&log).expect("log").len();
    // The next record can be written only in part: a file size limit 40
    // bytes past the end (what a full disk does to one write), with
    // SIGXFSZ ignored so the write returns short instead of killing.
    let limit = size + 40;
    let mut cmd = env.command();
    cmd.args(["call", "write_key", r#"{"key":"k","ms":0}"#]);
    // SAFETY: only async-signal-safe calls (setrlimit, signal) run between
    // fork and exec, on values computed before the fork.
    unsafe {
        cmd.pre_exec(move || {
            let rlim = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &rlim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    let refused = common::Called::from_output(cmd.output().expect("run toolhost"));
    assert_eq!(
        refused.result["error"]["code"], "audit_unavailable",
        "{}",
        refused.result
    );
    // The partial line was cut back: the log is as it was, whole lines only.
    let text = log_text(&env);
    assert_eq!(text.len() as u64, size, "a fragment was left:\n{text}");
    echo(&env, "after");
    let (code, out) = verify(&env);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("torn"), "{out}");
}
