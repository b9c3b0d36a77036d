//! Crash survival (issue #20): a `toolhost` killed with SIGKILL while it
//! appends audit records and idempotency records leaves a store the next
//! process opens and replays from, and an audit log of whole JSON lines
//! (a torn last record, if the kill landed inside a write, is closed with a
//! newline by the next process and is the only line that does not parse).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use common::{fixture_plan, Env};
use serde_json::{json, Value};

/// Calls per batch; the kill lands after `KILL_AFTER` results.
const CALLS: usize = 400;
const KILL_AFTER: usize = 60;
const ROUNDS: usize = 3;

fn key(round: usize, i: usize) -> String {
    format!("r{round}-k{i}")
}

/// Runs a batch of keyed write_key calls and kills it with SIGKILL once
/// `KILL_AFTER` results have come out; returns the keys it answered.
fn batch_killed_midway(env: &Env, round: usize) -> Vec<String> {
    let mut child = env
        .command()
        .args(["batch", "-"])
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start toolhost batch");
    let mut stdin = child.stdin.take().expect("stdin");
    let lines: String = (0..CALLS)
        .map(|i| {
            format!(
                "{}\n",
                json!({
                    "name": "write_key",
                    "input": {"key": format!("k{i}"), "ms": 0},
                    "tool_call_id": format!("c{i}"),
                    "idempotency_key": key(round, i),
                })
            )
        })
        .collect();
    stdin.write_all(lines.as_bytes()).expect("feed the batch");
    drop(stdin);
    let mut answered = Vec::new();
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    while answered.len() < KILL_AFTER {
        line.clear();
        let n = out.read_line(&mut line).expect("read a result");
        assert!(n > 0, "the batch ended after {} results", answered.len());
        let result: Value = serde_json::from_str(&line).expect("a result line");
        assert_eq!(result["status"], "success", "{result}");
        let id = result["tool_call_id"].as_str().expect("an id");
        let i: usize = id[1..].parse().expect("c<i>");
        answered.push(key(round, i));
    }
    child.kill().expect("SIGKILL the batch");
    let status = child.wait().expect("reap it");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9),
        "the batch had finished before the kill: {status}"
    );
    answered
}

#[test]
fn the_audit_log_and_idempotency_store_survive_kill_9() {
    let env = Env::new(&fixture_plan("").replacen("[host]\n", "[host]\naudit_log = \"audit.jsonl\"\n", 1));
    let audit = env.path().join("audit.jsonl");
    for round in 0..ROUNDS {
        let answered = batch_killed_midway(&env, round);
        // The next process opens the store and replays what was answered.
        for key in [&answered[0], &answered[answered.len() - 1]] {
            let i = &key[key.find("-k").expect("a key") + 2..];
            let input = json!({"key": format!("k{i}"), "ms": 0}).to_string();
            let replay = env.call_with(&["write_key", &input, "--idempotency-key", key]);
            replay.assert_success();
            assert_eq!(
                replay.result["metadata"]["idempotent_replay"], true,
                "{key}: {}",
                replay.result
            );
        }
        // A key never used runs afresh.
        let fresh = env.call_with(&[
            "write_key",
            r#"{"key":"fresh","ms":0}"#,
            "--idempotency-key",
            &format!("fresh-{round}"),
        ]);
        fresh.assert_success();
        assert!(fresh.result["metadata"].get("idempotent_replay").is_none());
    }
    let text = std::fs::read_to_string(&audit).expect("the audit log");
    assert!(text.ends_with('\n'), "the last record is whole");
    let mut records = 0;
    let mut torn = Vec::new();
    for (n, line) in text.lines().enumerate() {
        match serde_json::from_str::<Value>(line) {
            // The record a writer appends after a torn line names it.
            Ok(record) if record["event"] == "restart_after_torn_line" => {
                assert_eq!(
                    torn.last(),
                    Some(&(n - 1)),
                    "a restart record follows a torn line: line {n}"
                );
            }
            Ok(record) => {
                assert!(record["call_id"].is_string(), "line {n}: {line}");
                records += 1;
            }
            Err(_) => torn.push(n),
        }
    }
    // Every round answered KILL_AFTER calls, and the three calls after it
    // were recorded; a torn line can only be where a kill landed.
    assert!(records >= ROUNDS * (KILL_AFTER + 3), "{records} records");
    assert!(torn.len() <= ROUNDS, "torn lines at {torn:?}");
}

#[test]
fn a_torn_last_audit_record_is_closed_before_new_records() {
    let env = Env::new(&fixture_plan("").replacen("[host]\n", "[host]\naudit_log = \"audit.jsonl\"\n", 1));
    let audit = env.path().join("audit.jsonl");
    // What a kill inside a write leaves: a whole record, then half of one.
    std::fs::write(&audit, "{\"call_id\":\"whole\"}\n{\"call_id\":\"to").unwrap();
    let called = env.call("echo", json!({"message": "after the crash"}));
    called.assert_success();
    assert!(called.stderr.contains("torn record"), "{}", called.stderr);
    let text = std::fs::read_to_string(&audit).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert_eq!(lines[1], "{\"call_id\":\"to", "the fragment is kept as it was");
    let restart: Value = serde_json::from_str(lines[2]).expect("the restart record is a whole line");
    assert_eq!(restart["event"], "restart_after_torn_line", "{text}");
    assert_eq!(restart["torn_bytes"], 14, "{text}");
    let record: Value = serde_json::from_str(lines[3]).expect("the new record is a whole line");
    assert_eq!(record["tool"], "echo");
}
