//! Issue #16, item 7: the audit chain (`toolhost audit verify`), an audit
//! log that cannot be written (fails `check` and the mount; refuses
//! side-effecting calls when it breaks after mount), and rotation while
//! calls run.

mod common;

use std::sync::Arc;

use common::{fixture_plan, Env, InProcess};
use serde_json::{json, Value};

fn audited_plan(log: &str) -> String {
    fixture_plan("").replacen("[host]\n", &format!("[host]\naudit_log = {log:?}\n"), 1)
}

/// A host in this process mounting the fixture, its audit log at `log`.
fn audited_in_process(log: &std::path::Path) -> InProcess {
    InProcess::with_host(
        &format!("audit_log = {:?}\n", log.display().to_string()),
        "[[tools]]\nmodule = \"fixture\"\n",
    )
}

/// `toolhost audit verify FILES…`: exit code and stdout.
fn verify(env: &Env, files: &[&std::path::Path]) -> (i32, String) {
    let mut cmd = env.command();
    cmd.args(["audit", "verify"]).args(files);
    let out = cmd.output().expect("run audit verify");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

fn records(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
fn verify_passes_an_intact_log_and_names_an_edited_or_deleted_record() {
    let env = Env::new(&audited_plan("audit.jsonl"));
    let log = env.path().join("audit.jsonl");
    for i in 0..3 {
        env.call("echo", json!({ "message": format!("m{i}") }))
            .assert_success();
    }
    env.call("write_key", json!({"key": "k", "ms": 0}))
        .assert_success();
    env.call("echo", json!({"message": "last"})).assert_success();
    let text = std::fs::read_to_string(&log).expect("log");
    let all = records(&text);
    // 4 echo/write records + the write's intent record, chained from 0.
    assert_eq!(all.len(), 6, "{text}");
    for (i, r) in all.iter().enumerate() {
        assert_eq!(r["seq"], json!(i), "{text}");
        assert_eq!(r["principal"], "local");
    }
    assert_eq!(all[3]["phase"], "intent");
    assert_eq!(all[3]["tool"], "write_key");
    assert_eq!(all[3]["status"], "started");
    assert_eq!(all[4]["call_id"], all[3]["call_id"]);

    let (code, out) = verify(&env, &[&log]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("ok    6 record(s) intact; head: seq 5"), "{out}");

    // Edit line 2 (the second echo's status): line 3's link breaks.
    let lines: Vec<&str> = text.lines().collect();
    let mut edited = lines.clone();
    let forged = lines[1].replace("\"status\":\"success\"", "\"status\":\"error\"");
    assert_ne!(forged, lines[1]);
    edited[1] = &forged;
    std::fs::write(&log, edited.join("\n") + "\n").expect("edit");
    let (code, out) = verify(&env, &[&log]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("audit.jsonl:3: prev_sha256 does not match the previous record (seq 1)"),
        "{out}"
    );
    assert!(out.contains("edited"), "{out}");

    // Delete line 3: a gap in seq at what is now line 3.
    let mut deleted = lines.clone();
    deleted.remove(2);
    std::fs::write(&log, deleted.join("\n") + "\n").expect("delete");
    let (code, out) = verify(&env, &[&log]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("audit.jsonl:3: seq jumps from 1 to 3: 1 record(s) deleted"),
        "{out}"
    );

    // Swap two records.
    let mut swapped = lines.clone();
    swapped.swap(1, 2);
    std::fs::write(&log, swapped.join("\n") + "\n").expect("swap");
    let (code, out) = verify(&env, &[&log]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("audit.jsonl:2: seq jumps from 0 to 2"), "{out}");
}

#[test]
fn a_torn_record_is_reported_and_the_next_host_links_past_it() {
    let env = Env::new(&audited_plan("audit.jsonl"));
    let log = env.path().join("audit.jsonl");
    env.call("echo", json!({"message": "before"})).assert_success();
    // What a kill -9 inside a write leaves: half a record, no newline.
    let mut text = std::fs::read_to_string(&log).expect("log");
    text.push_str("{\"seq\":1,\"prev_sha256\":\"ab");
    std::fs::write(&log, &text).expect("tear");
    env.call("echo", json!({"message": "after"})).assert_success();
    let (code, out) = verify(&env, &[&log]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("torn  "), "{out}");
    assert!(out.contains("audit.jsonl:2: not a record"), "{out}");
    // The restart record naming the torn line is a record of the chain.
    assert!(out.contains("ok    3 record(s) intact; head: seq 2"), "{out}");
}

#[test]
fn an_unwritable_audit_log_fails_check_and_the_mount() {
    for (what, path) in [("a folder", "logdir"), ("/dev/full", "/dev/full")] {
        let env = Env::new(&audited_plan(path));
        std::fs::create_dir_all(env.path().join("logdir")).expect("folder");
        let out = env.run(&["check"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{what}: {stdout}");
        assert!(stdout.contains("FAIL  [host] audit_log"), "{what}: {stdout}");
        let out = env.run(&["call", "echo", r#"{"message":"x"}"#]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
        assert!(stderr.contains("cannot be written"), "{what}: {stderr}");
        assert!(out.stdout.is_empty(), "{what}: nothing ran");
    }
}

/// A host in this process whose log is replaced by a folder after mount:
/// the side-effecting call is refused (its intent cannot be recorded), the
/// read-only one still runs.
#[test]
fn a_side_effecting_call_is_refused_when_its_record_cannot_be_written() {
    let dir = tempfile::tempdir().expect("temp");
    let log = dir.path().join("audit.jsonl");
    let ip = audited_in_process(&log);
    let call = |name: &str, input: Value| ip.call(name, input);
    assert!(call("write_key", json!({"key": "a", "ms": 0})).success);

    std::fs::remove_file(&log).expect("remove the log");
    std::fs::create_dir(&log).expect("a folder where the log was");
    let refused = call("write_key", json!({"key": "b", "ms": 0}));
    assert!(!refused.success);
    let error = refused.error.as_ref().expect("error");
    assert_eq!(error.code, "audit_unavailable", "{}", error.message);
    assert!(error.message.contains("was not run"), "{}", error.message);
    assert!(
        refused.output.is_null(),
        "the tool did not run: {:?}",
        refused.output
    );
    // A read-only call runs; its lost record is said in the metadata.
    let echoed = call("echo", json!({"message": "still here"}));
    assert!(echoed.success);
    assert!(
        echoed.metadata.extra.contains_key("audit_error"),
        "{:?}",
        echoed.metadata
    );

    // Still refused after the folder is gone: a swapped log waits for an
    // operator's SIGHUP (or a restart).
    std::fs::remove_dir(&log).expect("remove the folder");
    assert!(!call("write_key", json!({"key": "c", "ms": 0})).success);
    // Once the operator asked for a reopen, side-effecting calls run, and
    // the chain continues from the last stored record.
    toolhost::pipeline::audit_file::request_reopen();
    assert!(call("write_key", json!({"key": "c", "ms": 0})).success);
    let text = std::fs::read_to_string(&log).expect("new log");
    let first = &records(&text)[0];
    assert_eq!(first["seq"], 2, "{text}");
}

/// Renames (as logrotate does) while eight threads call: every record is in
/// one of the files, and the files verify as one chain.
#[test]
fn rotation_while_calls_run_loses_no_record() {
    let dir = tempfile::tempdir().expect("temp");
    let log = dir.path().join("audit.jsonl");
    let ip = audited_in_process(&log);
    let pipeline = ip.pipeline.clone();
    const THREADS: usize = 8;
    const CALLS: usize = 60;
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let pipeline = pipeline.clone();
            let done = done.clone();
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                for i in 0..CALLS {
                    let result = runtime.block_on(pipeline.call(toolhost::pipeline::Call {
                        name: "echo".into(),
                        input: json!({ "message": format!("{t}-{i}") }),
                        ..Default::default()
                    }));
                    assert!(result.success);
                    done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            })
        })
        .collect();
    // Rotate whenever at least 40 more calls finished.
    let mut rotated = Vec::new();
    let mut last = 0;
    // Until every worker has ended (one that failed is reported by join).
    while !workers.iter().all(|w| w.is_finished()) {
        let now = done.load(std::sync::atomic::Ordering::SeqCst);
        if now >= last + 40 && log.exists() {
            let to = dir.path().join(format!("audit.jsonl.{}", rotated.len() + 1));
            std::fs::rename(&log, &to).expect("rotate");
            rotated.push(to);
            last = now;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    for w in workers {
        w.join().expect("worker");
    }
    // The last rotation may come after the last call: one more call must
    // reach the file the path names now.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let last_call = runtime.block_on(pipeline.call(toolhost::pipeline::Call {
        name: "echo".into(),
        input: json!({ "message": "after the last rotation" }),
        ..Default::default()
    }));
    assert!(last_call.success);
    assert!(rotated.len() >= 3, "rotated only {} times", rotated.len());
    assert!(
        !records(&std::fs::read_to_string(&log).unwrap_or_default()).is_empty(),
        "no record reached the file created after the last rotation"
    );
    let mut files = rotated.clone();
    files.push(log.clone());
    let total: usize = files
        .iter()
        .map(|f| records(&std::fs::read_to_string(f).unwrap_or_default()).len())
        .sum();
    assert_eq!(total, THREADS * CALLS + 1, "records lost in rotation");
    let env = Env::new("");
    let paths: Vec<&std::path::Path> = files.iter().map(|p| p.as_path()).collect();
    let (code, out) = verify(&env, &paths);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!("ok    {} record(s) intact", THREADS * CALLS + 1)),
        "{out}"
    );
    // The newest file alone continues an earlier one.
    let (code, out) = verify(&env, &[&log]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("continues an earlier one"), "{out}");
}
