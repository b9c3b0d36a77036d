//! Idempotency on the embedded store (issue #17): exactly once per key under
//! concurrency in one process and across processes, canonical input
//! comparison, expiry, and keys whose owner died mid-call. Executions are
//! counted by a real side effect: bash appending a line to a file.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{fixture_plan, module_file, Called, Env, InProcess};
use serde_json::{json, Value};

/// The bash tool, allowed without asking.
const BASH: &str = "[[tools]]\nmodule = \"bash\"\n[policy.tools.bash]\ndecision = \"allow\"\n";

/// A command that records one run in `runs.txt`, then waits for `go`.
fn run_then_wait(tag: &str) -> Value {
    json!({"command": format!("echo {tag} >> runs.txt; while [ ! -e go ]; do sleep 0.02; done; echo finished {tag}")})
}

fn runs(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("runs.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Waits (bounded) until `runs.txt` has at least `n` lines.
fn wait_for_runs(dir: &Path, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while runs(dir).len() < n {
        assert!(
            Instant::now() < deadline,
            "no run was recorded in {}",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A host in this process mounting bash, working and keeping its state
/// in a fresh temp folder.
fn bash_host() -> (tempfile::TempDir, InProcess) {
    module_file("toolhost_bash");
    let dir = tempfile::tempdir().unwrap();
    let host = format!(
        "working_dir = {:?}\nstate_dir = {:?}\n",
        dir.path().display().to_string(),
        dir.path().join("state").display().to_string()
    );
    let ip = InProcess::with_host(&host, BASH);
    (dir, ip)
}

/// The bash call [`run_then_wait`]`(tag)` under idempotency key `key`.
fn keyed_run(tag: &str, key: &str) -> toolhost::pipeline::Call {
    toolhost::pipeline::Call {
        name: "bash".into(),
        input: run_then_wait(tag),
        idempotency_key: Some(key.into()),
        ..Default::default()
    }
}

fn replayed(result: &Value) -> bool {
    result["metadata"]["idempotent_replay"] == json!(true)
}

#[test]
fn thirty_two_concurrent_calls_with_one_key_execute_once() {
    let (dir, ip) = bash_host();
    let pipeline = ip.pipeline.clone();
    let handles: Vec<_> = (0..32)
        .map(|_| {
            let pipeline = pipeline.clone();
            ip.runtime
                .spawn(async move { pipeline.call(keyed_run("once", "order-1")).await })
        })
        .collect();
    // The owner is running; the others are claiming, waiting or queued.
    wait_for_runs(dir.path(), 1);
    std::fs::write(dir.path().join("go"), "").unwrap();
    let results: Vec<Value> = handles
        .into_iter()
        .map(|h| serde_json::to_value(ip.runtime.block_on(h).expect("call task")).unwrap())
        .collect();
    for r in &results {
        assert_eq!(r["success"], json!(true), "{r}");
        assert!(
            r["output"]["stdout"]
                .as_str()
                .unwrap_or("")
                .contains("finished once"),
            "{r}"
        );
    }
    assert_eq!(runs(dir.path()), vec!["once"], "the command ran more than once");
    assert_eq!(results.iter().filter(|r| replayed(r)).count(), 31);
}

#[test]
fn one_key_with_another_input_is_refused_while_the_first_runs() {
    let (dir, ip) = bash_host();
    let pipeline = ip.pipeline.clone();
    let first = ip
        .runtime
        .spawn(async move { pipeline.call(keyed_run("a", "k")).await });
    wait_for_runs(dir.path(), 1);
    let other = ip.runtime.block_on(ip.pipeline.call(keyed_run("b", "k")));
    assert_eq!(
        other.error.as_ref().map(|e| e.code.as_str()),
        Some("idempotency_conflict"),
        "{other:?}"
    );
    std::fs::write(dir.path().join("go"), "").unwrap();
    let first = ip.runtime.block_on(first).unwrap();
    assert!(first.success, "{first:?}");
    assert_eq!(runs(dir.path()), vec!["a"]);
}

/// `toolhost call bash INPUT --idempotency-key KEY`, stderr piped.
fn spawn_call(env: &Env, input: &Value, key: &str) -> Child {
    env.command()
        .args([
            "call",
            "bash",
            &input.to_string(),
            "--idempotency-key",
            key,
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start toolhost call")
}

#[test]
fn two_processes_racing_on_one_key_execute_once() {
    module_file("toolhost_bash");
    let env = Env::new(&format!("[host]\ndefault_timeout_secs = 60\n\n{BASH}"));
    let input = run_then_wait("race");
    let mut children: Vec<Child> = (0..2).map(|_| spawn_call(&env, &input, "race-1")).collect();
    // Whichever process lost the claim says it waits; then let the owner end.
    let (tx, rx) = std::sync::mpsc::channel();
    let mut logs = Vec::new();
    for child in &mut children {
        let stderr = child.stderr.take().unwrap();
        let tx = tx.clone();
        logs.push(std::thread::spawn(move || {
            let mut all = String::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("waiting for the call holding idempotency key") {
                    let _ = tx.send(());
                }
                all.push_str(&line);
                all.push('\n');
            }
            all
        }));
    }
    rx.recv_timeout(Duration::from_secs(30))
        .expect("neither process waited for the other's claim");
    std::fs::write(env.path().join("go"), "").unwrap();
    let results: Vec<Value> = children
        .into_iter()
        .zip(logs)
        .map(|(child, log)| {
            let out = child.wait_with_output().unwrap();
            let log = log.join().unwrap();
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {log}"))
        })
        .collect();
    assert!(results.iter().all(|r| r["success"] == json!(true)), "{results:?}");
    assert_eq!(results.iter().filter(|r| replayed(r)).count(), 1, "{results:?}");
    assert_eq!(runs(env.path()), vec!["race"]);
    assert!(env.state_dir().join("idempotency.sqlite3").is_file());
}

#[test]
fn inputs_are_compared_as_canonical_json() {
    let env = Env::new(&fixture_plan(""));
    let run = |input: &str| env.call_with(&["write_key", input, "--idempotency-key", "canon"]);
    let first = run(r#"{"key":"k","ms":5}"#);
    let started = first.assert_success()["start_us"].clone();
    // Other key order, other spacing, an escaped letter: the same input.
    let same = run("{ \"ms\": 5,\n \"key\": \"\\u006b\" }");
    assert_eq!(same.assert_success()["start_us"], started, "{:?}", same.result);
    assert!(replayed(&same.result));
    // Another value is another input.
    let other = run(r#"{"ms":5,"key":"k2"}"#);
    assert_eq!(
        other.result["error"]["code"], "idempotency_conflict",
        "{:?}",
        other.result
    );
}

#[test]
fn a_batch_repeating_a_key_runs_it_once_and_refuses_another_input() {
    let env = Env::new(&fixture_plan(""));
    let line = |input: Value| json!({"name": "write_key", "input": input, "idempotency_key": "b1"});
    let (results, _) = env.batch(
        &[
            line(json!({"key": "a", "ms": 20})),
            line(json!({"ms": 20, "key": "a"})),
            line(json!({"key": "other", "ms": 20})),
        ],
        &[],
    );
    assert_eq!(results[0]["success"], json!(true), "{results:?}");
    assert!(!replayed(&results[0]));
    assert_eq!(results[1]["success"], json!(true), "{results:?}");
    assert!(replayed(&results[1]), "{results:?}");
    assert_eq!(results[1]["output"]["start_us"], results[0]["output"]["start_us"]);
    assert_eq!(results[2]["error"]["code"], "idempotency_conflict", "{results:?}");
}

#[test]
fn keys_expire_after_the_ttl() {
    let plan = fixture_plan("").replacen("[host]\n", "[host]\nidempotency_ttl = \"1s\"\n", 1);
    let env = Env::new(&plan);
    let run = || env.call_with(&["write_key", r#"{"key":"t","ms":1}"#, "--idempotency-key", "ttl"]);
    let first = run();
    // The TTL counts from when the result was recorded, before `run` returned.
    let recorded = Instant::now();
    let first_start = first.assert_success()["start_us"].clone();
    let again = run();
    // Still within the TTL (unless this machine took most of a second).
    if recorded.elapsed() < Duration::from_millis(800) {
        assert!(replayed(&again.result), "{:?}", again.result);
    }
    // Waiting out the TTL is the thing under test.
    std::thread::sleep(Duration::from_millis(1100).saturating_sub(recorded.elapsed()));
    let later = run();
    assert!(
        !replayed(&later.result),
        "an expired key was replayed: {:?}",
        later.result
    );
    assert_ne!(later.assert_success()["start_us"], first_start);
}

#[test]
fn a_short_ttl_never_expires_a_key_under_a_running_call() {
    module_file("toolhost_bash");
    let env = Env::new(&format!(
        "[host]\nidempotency_ttl = 1\ndefault_timeout_secs = 60\n\n{BASH}"
    ));
    let input = run_then_wait("slow");
    let started = Instant::now();
    let first = spawn_call(&env, &input, "short");
    wait_for_runs(env.path(), 1);
    // The TTL passes while the first call still runs.
    std::thread::sleep(Duration::from_millis(1300).saturating_sub(started.elapsed()));
    let mut second = spawn_call(&env, &input, "short");
    let stderr = second.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("waiting for the call holding idempotency key") {
                let _ = tx.send(());
            }
        }
    });
    // Either the second call waits (right) or it runs the command (wrong).
    let deadline = Instant::now() + Duration::from_secs(30);
    while rx.try_recv().is_err() && runs(env.path()).len() < 2 {
        assert!(
            Instant::now() < deadline,
            "the second call neither waited nor ran"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    std::fs::write(env.path().join("go"), "").unwrap();
    let outs: Vec<Value> = [first, second]
        .into_iter()
        .map(|c| serde_json::from_slice(&c.wait_with_output().unwrap().stdout).unwrap())
        .collect();
    assert_eq!(
        runs(env.path()),
        vec!["slow"],
        "the key expired under a running call: {outs:?}"
    );
    assert!(replayed(&outs[1]), "{outs:?}");
}

#[test]
fn empty_oversized_or_control_keys_are_refused_before_the_store() {
    let env = Env::new(&fixture_plan(""));
    for key in [String::new(), "k".repeat(257), "a\nb".to_string()] {
        let out = env.call_with(&["write_key", r#"{"key":"x"}"#, "--idempotency-key", &key]);
        assert_eq!(
            out.result["error"]["code"], "invalid_input",
            "{key:?}: {:?}",
            out.result
        );
        assert!(out.message().contains("idempotency key"), "{:?}", out.result);
    }
    let fine = env.call_with(&[
        "write_key",
        r#"{"key":"x"}"#,
        "--idempotency-key",
        &"k".repeat(256),
    ]);
    fine.assert_success();
}

#[test]
fn a_bad_ttl_is_a_plan_error() {
    let plan = fixture_plan("").replacen("[host]\n", "[host]\nidempotency_ttl = \"soon\"\n", 1);
    let env = Env::new(&plan);
    let out = env.run(&["check"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("idempotency_ttl") && stderr.contains("not a duration"),
        "{stderr}"
    );
}

/// Kills the child on drop.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_key_whose_owner_died_mid_call_is_refused_not_run_again() {
    module_file("toolhost_bash");
    let plan = format!("[host]\ncancel_grace_ms = 100\n\n{BASH}timeout_secs = 2\n");
    let env = Env::new(&plan);
    let input = json!({"command": "echo run >> runs.txt; sleep 20"});
    let started = Instant::now();
    let mut owner = Killed(
        env.command()
            .env("TOOLHOST_IDEMPOTENCY_LEASE_MARGIN_MS", "0")
            .args(["call", "bash", &input.to_string(), "--idempotency-key", "dies"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for_runs(env.path(), 1);
    owner.0.kill().unwrap();
    owner.0.wait().unwrap();
    // The owner's lease (2 s deadline + 0.1 s grace) runs out.
    std::thread::sleep(Duration::from_millis(2300).saturating_sub(started.elapsed()));
    let retry = Called::from_output(
        env.command()
            .args(["call", "bash", &input.to_string(), "--idempotency-key", "dies"])
            .output()
            .unwrap(),
    );
    assert_eq!(
        retry.result["error"]["code"], "idempotency_unknown_outcome",
        "{:?}",
        retry.result
    );
    assert_eq!(runs(env.path()), vec!["run"]);
}
