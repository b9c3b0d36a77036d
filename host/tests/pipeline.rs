//! The pipeline's stages and their refusals, through the real binary.

mod common;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;

use common::{fixture_plan, Called, Env};
use serde_json::{json, Value};

/// Writes an executable hook script into the env folder.
fn hook(env: &Env, name: &str, body: &str) -> String {
    let path = env.path().join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

#[test]
fn deny_by_tool_and_by_effect() {
    let env = Env::new(&fixture_plan("[policy.tools.echo]\ndecision = \"deny\"\n"));
    let called = env.call("echo", json!({"message": "x"}));
    assert_eq!(called.status(), "policy_denied");
    assert!(
        called
            .message()
            .contains("[policy.tools.echo] decision = \"deny\""),
        "{}",
        called.message()
    );
    assert_eq!(called.code, 1);

    env.set_plan(&fixture_plan("[policy.effects]\ninternal_mutation = \"deny\"\n"));
    let called = env.call("write_key", json!({"key": "k"}));
    assert_eq!(called.status(), "policy_denied");
    called.assert_says("internal_mutation");
    env.call("echo", json!({"message": "compute is still allowed"}))
        .assert_success();

    // A tool rule beats an effect rule; default deny with an allow-listed tool.
    env.set_plan(&fixture_plan(
        "[policy]\ndefault = \"deny\"\n[policy.tools.echo]\ndecision = \"allow\"\n",
    ));
    env.call("echo", json!({"message": "x"})).assert_success();
    assert_eq!(env.call("sleep", json!({"ms": 1})).status(), "policy_denied");
}

#[test]
fn ask_without_a_terminal_requires_approval_and_flags_approve() {
    let env = Env::new(&fixture_plan(
        "[policy.tools.echo]\ndecision = \"ask\"\naliases = [\"Say\"]\n",
    ));
    let called = env.call("echo", json!({"message": "x"}));
    assert_eq!(called.status(), "approval_required", "{}", called.result);
    called.assert_says("--approve echo");

    let out = env.run(&["call", "echo", r#"{"message":"x"}"#, "--approve", "echo"]);
    Called::from_output(out).assert_success();
    let out = env.run(&["call", "Say", r#"{"message":"via alias"}"#, "--yes"]);
    assert_eq!(Called::from_output(out).assert_success()["message"], "via alias");
    // Approving another tool does not approve this one.
    let out = env.run(&["call", "echo", r#"{"message":"x"}"#, "--approve", "sleep"]);
    assert_eq!(Called::from_output(out).status(), "approval_required");
}

#[test]
fn max_calls_caps_a_tool_per_process() {
    let env = Env::new(&fixture_plan("[policy.tools.echo]\nmax_calls = 2\n"));
    let call = json!({"name": "echo", "input": {"message": "x"}});
    let (results, code) = env.batch(&[call.clone(), call.clone(), call], &[]);
    let statuses: Vec<&str> = results.iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["success", "success", "policy_denied"]);
    assert!(results[2]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("max_calls"));
    assert_eq!(code, 1);
}

#[test]
fn a_hook_that_denies_shows_its_reason() {
    let env = Env::new("");
    let script = hook(
        &env,
        "deny.sh",
        r#"cat >/dev/null; echo '{"decision":"deny","reason":"no echoes today"}'"#,
    );
    env.set_plan(&fixture_plan(&format!(
        "[[hooks]]\nevent = \"tool:pre\"\ntools = \"ec*\"\ncommand = [\"{script}\"]\n"
    )));
    let called = env.call("echo", json!({"message": "x"}));
    assert_eq!(called.status(), "policy_denied");
    called.assert_says("no echoes today");
    // The glob does not match other tools.
    env.call("sleep", json!({"ms": 1})).assert_success();
}

#[test]
fn a_hook_sees_the_event_and_may_rewrite_the_input() {
    let env = Env::new("");
    let seen = env.path().join("seen.json");
    let script = hook(
        &env,
        "rewrite.sh",
        &format!(
            r#"cat > {}; echo '{{"decision":"modify","input":{{"message":"rewritten"}}}}'"#,
            seen.display()
        ),
    );
    env.set_plan(&fixture_plan(&format!(
        "[[hooks]]\nevent = \"tool:pre\"\ncommand = [\"{script}\"]\n"
    )));
    let called = env.call("echo", json!({"message": "original"}));
    assert_eq!(called.assert_success()["message"], "rewritten");
    let event: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(event["event"], "tool:pre");
    assert_eq!(event["tool"], "echo");
    assert_eq!(event["input"]["message"], "original");
}

#[test]
fn a_hook_that_rewrites_into_invalid_input_is_caught() {
    let env = Env::new("");
    let script = hook(
        &env,
        "bad.sh",
        r#"cat >/dev/null; echo '{"decision":"modify","input":{"message":42}}'"#,
    );
    env.set_plan(&fixture_plan(&format!(
        "[[hooks]]\nevent = \"tool:pre\"\ncommand = [\"{script}\"]\n"
    )));
    let called = env.call("echo", json!({"message": "fine"}));
    assert_eq!(called.status(), "validation_error");
    called.assert_says("hook rewrote the input");
}

#[test]
fn a_hook_that_hangs_is_timed_out_and_its_failure_policy_applies() {
    let env = Env::new("");
    // The hook starts a grandchild and records its pid: the pid file is the
    // readiness signal, and the pid is how the test sees whether the hook's
    // whole process group was killed (not just the shell the host spawned).
    let pids = env.path().join("hook.pid");
    let script = hook(
        &env,
        "hang.sh",
        &format!("sleep 30 &\necho $! >> {}\nwait", pids.display()),
    );
    env.set_plan(&fixture_plan(&format!(
        "[[hooks]]\nevent = \"tool:pre\"\ncommand = [\"{script}\"]\ntimeout_ms = 300\n"
    )));
    let started = std::time::Instant::now();
    let called = env.call("echo", json!({"message": "x"}));
    assert_eq!(called.status(), "policy_denied");
    called.assert_says("timed out after 300 ms");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));

    env.set_plan(&fixture_plan(&format!(
        "[[hooks]]\nevent = \"tool:pre\"\ncommand = [\"{script}\"]\ntimeout_ms = 300\non_failure = \"allow\"\n"
    )));
    env.call("echo", json!({"message": "fail open"})).assert_success();
    // Both hung hooks' grandchildren were killed with their process group.
    let recorded = std::fs::read_to_string(&pids).expect("the hook recorded its child's pid");
    let pids: Vec<u32> = recorded
        .lines()
        .map(|l| l.trim().parse().expect("a pid"))
        .collect();
    assert_eq!(pids.len(), 2, "{recorded}");
    for pid in pids {
        assert!(
            common::process_ends(pid, std::time::Duration::from_secs(10)),
            "the hung hook's child {pid} survived the timeout"
        );
    }
}

#[test]
fn a_post_hook_may_rewrite_the_output() {
    let env = Env::new("");
    let script = hook(
        &env,
        "post.sh",
        r#"cat >/dev/null; echo '{"decision":"modify","output":{"redacted":true}}'"#,
    );
    env.set_plan(&fixture_plan(&format!(
        "[[hooks]]\nevent = \"tool:post\"\ncommand = [\"{script}\"]\n"
    )));
    let called = env.call("echo", json!({"message": "secret"}));
    assert_eq!(called.assert_success(), &json!({"redacted": true}));
}

#[test]
fn batch_orders_conflicting_writes_and_parallelizes_independent_calls() {
    let env = Env::new(&fixture_plan(""));
    let writes: Vec<Value> = (0..4)
        .map(|i| json!({"name": "write_key", "input": {"key": "same", "ms": 150}, "tool_call_id": format!("w{i}")}))
        .collect();
    let (results, code) = env.batch(&writes, &[]);
    assert_eq!(code, 0);
    let ids: Vec<&str> = results
        .iter()
        .map(|r| r["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["w0", "w1", "w2", "w3"], "results come back in input order");
    for pair in results.windows(2) {
        let (a, b) = (&pair[0]["output"], &pair[1]["output"]);
        assert!(
            a["end_us"].as_u64().unwrap() <= b["start_us"].as_u64().unwrap(),
            "writes to one key overlapped or ran out of order: {a} then {b}"
        );
    }

    let independent: Vec<Value> = (0..4)
        .map(|i| json!({"name": "write_key", "input": {"key": format!("k{i}"), "ms": 400}}))
        .collect();
    let (results, _) = env.batch(&independent, &[]);
    let latest_start = results
        .iter()
        .map(|r| r["output"]["start_us"].as_u64().unwrap())
        .max()
        .unwrap();
    let earliest_end = results
        .iter()
        .map(|r| r["output"]["end_us"].as_u64().unwrap())
        .min()
        .unwrap();
    assert!(
        latest_start < earliest_end,
        "independent calls did not run in parallel: {results:?}"
    );

    // A read between two writes of the same key waits for the first and
    // holds back the second.
    let mixed = vec![
        json!({"name": "write_key", "input": {"key": "m", "ms": 200}}),
        json!({"name": "sleep", "input": {"key": "m", "ms": 10}}),
        json!({"name": "write_key", "input": {"key": "m", "ms": 10}}),
    ];
    let (results, _) = env.batch(&mixed, &[]);
    assert!(results.iter().all(|r| r["success"] == true), "{results:?}");
    assert!(results[0]["output"]["end_us"].as_u64() <= results[2]["output"]["start_us"].as_u64());
}

#[test]
fn batch_reports_bad_lines_in_place_and_keeps_going() {
    let env = Env::new(&fixture_plan(""));
    let out = env.run_with_stdin(
        &["batch", "-"],
        b"{\"name\":\"echo\",\"input\":{\"message\":\"a\"}}\nnot json\n{\"name\":\"nope\"}\n{\"name\":\"echo\",\"input\":{\"message\":\"b\"}}\n",
    );
    let results: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let statuses: Vec<&str> = results.iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["success", "validation_error", "error", "success"]);
    assert_eq!(results[3]["output"]["message"], "b");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn output_schema_is_checked() {
    let env = Env::new(&fixture_plan(""));
    env.call("shape", json!({"valid": true})).assert_success();
    let called = env.call("shape", json!({"valid": false}));
    assert_eq!(called.status(), "error");
    assert_eq!(called.result["error"]["code"], "invalid_output");
    assert_eq!(
        called.result["error"]["details"]["violations"][0]["pointer"],
        "/ok"
    );
}

#[test]
fn audit_log_has_one_line_per_call_denial_and_approval() {
    let env = Env::new(&fixture_plan(
        "[policy.tools.sleep]\ndecision = \"deny\"\n[policy.tools.echo]\ndecision = \"ask\"\n",
    ));
    let plan = std::fs::read_to_string(&env.plan).unwrap();
    env.set_plan(&plan.replacen("[host]\n", "[host]\naudit_log = \"audit/log.jsonl\"\n", 1));
    env.run(&["call", "echo", r#"{"message":"secret words"}"#, "--yes"]);
    env.call("sleep", json!({"ms": 1}));
    env.call("echo", json!({"message": "x"}));
    env.call("write_key", json!({"key": "k"}));
    let log = std::fs::read_to_string(env.path().join("audit/log.jsonl")).unwrap();
    // Side-effecting calls also get an intent record before they run (#16).
    let records: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["phase"] != "intent")
        .collect();
    assert_eq!(records.len(), 4, "{log}");
    assert_eq!(records[0]["decision"], "approved");
    assert_eq!(records[0]["approved_by"], "flag");
    assert_eq!(records[0]["status"], "success");
    assert_eq!(records[0]["module"], "fixture");
    assert_eq!(records[0]["version"], "0.1.0");
    assert_eq!(records[0]["effect"], "compute");
    assert_eq!(records[0]["input_sha256"].as_str().unwrap().len(), 64);
    assert!(records[0]["input_bytes"].as_u64().unwrap() > 0);
    assert!(
        !log.contains("secret words"),
        "raw inputs must not be stored without opting in"
    );
    assert_eq!(records[1]["decision"], "deny");
    assert_eq!(records[1]["status"], "policy_denied");
    assert_eq!(records[2]["decision"], "approval_required");
    assert_eq!(records[3]["decision"], "allow");

    env.set_plan(&plan.replacen(
        "[host]\n",
        "[host]\naudit_log = \"audit/raw.jsonl\"\naudit_inputs = true\n",
        1,
    ));
    env.run(&["call", "echo", r#"{"message":"secret words"}"#, "--yes"]);
    let raw = std::fs::read_to_string(env.path().join("audit/raw.jsonl")).unwrap();
    assert!(raw.contains("secret words"));
}

#[test]
fn idempotent_replay_across_two_processes() {
    let env = Env::new(&fixture_plan(""));
    let run = |input: &str| env.call_with(&["write_key", input, "--idempotency-key", "order-42"]);
    let first = run(r#"{"key":"k","ms":5}"#);
    let started = first.assert_success()["start_us"].clone();
    assert!(first.result["metadata"].get("idempotent_replay").is_none());
    // A new process replays the recorded result: same output, no new run.
    let second = run(r#"{"key":"k","ms":5}"#);
    assert_eq!(second.assert_success()["start_us"], started);
    assert_eq!(second.result["metadata"]["idempotent_replay"], true);
    // Same key, different input: an error.
    let third = run(r#"{"key":"other","ms":5}"#);
    assert_eq!(third.status(), "validation_error");
    assert_eq!(third.result["error"]["code"], "idempotency_conflict");
    // The store lives under the plan's state folder.
    assert!(env.state_dir().join("idempotency.sqlite3").exists());
}

#[test]
fn json_logs_are_one_object_per_line_on_stderr() {
    let env = Env::new(&fixture_plan("[tools.config]\nlabel = \"json\"\n"));
    let out = env.run(&["--log-format", "json", "list"]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<Value> = stderr
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON log line"))
        .collect();
    assert!(
        lines
            .iter()
            .any(|l| l["fields"]["message"] == "fixture mounted: json"),
        "{stderr}"
    );
    // stdout stays clean for results.
    assert!(!String::from_utf8_lossy(&out.stdout).contains("fixture mounted"));
}

#[test]
fn events_reach_observers_in_process() {
    use std::sync::{Arc, Mutex};
    let host = common::InProcess::new("[[tools]]\nmodule = \"fixture\"\n");
    let events = &host.host.events;
    assert!(
        events.names().contains(&"fixture:echoed".to_string()),
        "module-contributed event name"
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    events.subscribe(Arc::new(move |name: &str, payload: &Value| {
        sink.lock().unwrap().push((name.to_string(), payload.clone()));
    }));
    host.call("echo", json!({"message": "emit"}));
    host.call("echo", json!({"message": 1}));
    let seen = seen.lock().unwrap();
    let names: Vec<&str> = seen.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["tool:pre", "fixture:echoed", "tool:post", "tool:error"],
        "{seen:?}"
    );
    assert_eq!(seen[2].1["result"]["output"]["message"], "emit");
    assert!(seen[2].1["duration_ms"].as_f64().is_some());
    assert_eq!(seen[3].1["result"]["status"], "validation_error");
}

#[test]
fn timeouts_come_from_the_plan_then_the_spec_then_the_default() {
    let remaining = |env: &Env, tool: &str| {
        let called = env.call(tool, json!({}));
        called.assert_success()["remaining_ms"].as_u64().unwrap()
    };
    // The spec asks for 7 s; the host default is 30 s in fixture plans.
    let env = Env::new(&fixture_plan(""));
    let spec = remaining(&env, "deadline");
    assert!((5_000..=7_000).contains(&spec), "{spec}");
    // A plan rule beats the spec.
    env.set_plan(&fixture_plan("[policy.tools.deadline]\ntimeout_secs = 3\n"));
    let plan = remaining(&env, "deadline");
    assert!((1_000..=3_000).contains(&plan), "{plan}");
    // Without either, the host default applies: `sleep` has no spec timeout,
    // so a 1 s default stops a 60 s sleep, and says so.
    let env = Env::new("[host]\ndefault_timeout_secs = 1\n[[tools]]\nmodule = \"fixture\"\n");
    let called = env.call("sleep", json!({"ms": 60_000}));
    assert_eq!(called.status(), "timeout", "{}", called.result);
    called.assert_says("timed out after 1s");
    let env = Env::new("[host]\ndefault_timeout_secs = 11\n[[tools]]\nmodule = \"fixture\"\n");
    let spec_again = remaining(&env, "deadline");
    assert!(
        spec_again <= 7_000,
        "the spec's 7 s beats the default 11 s: {spec_again}"
    );
}

#[test]
fn a_terminal_user_is_asked_and_the_answer_counts() {
    use std::io::Read;
    // `script` (util-linux/bsdutils) gives the host a terminal; .ci/run
    // installs it, so its absence is a failure, not a skip.
    let env = Env::new(&fixture_plan("[policy.tools.echo]\ndecision = \"ask\"\n"));
    let run = |answer: &str| {
        let cmd = format!(
            "{} --plan {} call --json echo '{{\"message\":\"hi\"}}'",
            env!("CARGO_BIN_EXE_toolhost"),
            env.plan.display()
        );
        let mut child = std::process::Command::new("script")
            .args(["-qfec", &cmd, "/dev/null"])
            .current_dir(env.path())
            .env("TOOLHOST_MODULE_PATH", common::target_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("`script` (util-linux) must be installed");
        let mut stdin = child.stdin.take().expect("stdin");
        let mut stdout = child.stdout.take().expect("stdout");
        // Answer once the prompt is up: read until it appears.
        let mut seen = Vec::new();
        let mut chunk = [0u8; 512];
        while !String::from_utf8_lossy(&seen).contains("Allow? [y/N]") {
            let n = stdout.read(&mut chunk).expect("read the terminal");
            assert!(
                n > 0,
                "the host ended without asking: {}",
                String::from_utf8_lossy(&seen)
            );
            seen.extend_from_slice(&chunk[..n]);
        }
        let _ = writeln!(stdin, "{answer}");
        stdout.read_to_end(&mut seen).expect("read the rest");
        child.wait().expect("script ends");
        String::from_utf8_lossy(&seen).to_string()
    };
    let yes = run("y");
    assert!(yes.contains("Allow? [y/N]"), "{yes}");
    assert!(yes.contains("\"status\": \"success\""), "{yes}");
    let no = run("n");
    assert!(no.contains("\"status\": \"policy_denied\""), "{no}");
    assert!(no.contains("declined"), "{no}");
}
