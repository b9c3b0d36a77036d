//! Long calls: with `max_duration_secs` in the plan, a tool's progress
//! starts its timeout again (an inactivity timeout) up to that hard cap, and
//! `timeout_secs = "none"` lets a call run until it is cancelled. The real
//! binary runs the fixture's `sleep` (progress every `every_ms`, or none)
//! in the host, in an isolated worker, and behind a mounted MCP server (a
//! second toolhost serving over stdio), whose progress notifications move
//! the outer host's deadline.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::raw_stdio::RawServe;
use common::{target_dir, Env};
use serde_json::{json, Value};

/// Where the fixture's `sleep` runs.
#[derive(Clone, Copy, Debug)]
enum Backend {
    InProcess,
    Worker,
    Mounted,
}

const BACKENDS: [Backend; 3] = [Backend::InProcess, Backend::Worker, Backend::Mounted];

/// A plan mounting the fixture through `backend`, with `rule` as the
/// `[policy.tools.<sleep>]` table, and an audit log; the tool's name.
fn env_for(backend: Backend, rule: &str) -> (Env, &'static str) {
    let env = Env::new("");
    let host = "[host]\ndefault_timeout_secs = 30\ncancel_grace_ms = 1000\naudit_log = \"audit.jsonl\"\n\n";
    let (tools, name) = match backend {
        Backend::InProcess => ("[[tools]]\nmodule = \"fixture\"\n".to_string(), "sleep"),
        Backend::Worker => (
            "[[tools]]\nmodule = \"fixture\"\nisolation = \"process\"\n".to_string(),
            "sleep",
        ),
        Backend::Mounted => {
            let inner = inner_plan(&env);
            (
                format!(
                    "[[tools]]\nprefix = \"in__\"\n[tools.mcp]\ncommand = [\"{}\", \"--plan\", \"{}\", \"serve\"]\n",
                    env!("CARGO_BIN_EXE_toolhost"),
                    inner.display()
                ),
                "in__sleep",
            )
        }
    };
    env.set_plan(&format!("{host}{tools}\n[policy.tools.{name}]\n{rule}\n"));
    (env, name)
}

/// The mounted server's own plan: the fixture with a deadline far away, so
/// only the outer host's bounds can end a call.
fn inner_plan(env: &Env) -> PathBuf {
    let path = env.path().join("inner.toml");
    std::fs::write(
        &path,
        format!(
            "[host]\nmodule_path = [\"{}\"]\ndefault_timeout_secs = 120\n\n[[tools]]\nmodule = \"fixture\"\n",
            target_dir().display()
        ),
    )
    .expect("write the inner plan");
    path
}

/// `toolhost call` and how long it took.
fn timed_call(env: &Env, name: &str, input: Value) -> (common::Called, Duration) {
    let started = Instant::now();
    let called = env.call(name, input);
    (called, started.elapsed())
}

/// The audit record of the last call to `name`.
fn last_record(env: &Env, name: &str) -> Value {
    let text = std::fs::read_to_string(env.path().join("audit.jsonl")).expect("the audit log");
    text.lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r["tool"] == json!(name) && r.get("phase").is_none())
        .unwrap_or_else(|| panic!("no audit record for {name}:\n{text}"))
}

#[test]
fn progress_keeps_a_call_alive_past_its_inactivity_timeout() {
    for backend in BACKENDS {
        let (env, name) = env_for(backend, "timeout_secs = 1\nmax_duration_secs = 30");
        let (called, took) = timed_call(&env, name, json!({"ms": 3000, "every_ms": 200}));
        assert_eq!(
            called.status(),
            "success",
            "{backend:?}: progress every 200 ms must keep a 1 s inactivity timeout from firing: {}",
            called.result
        );
        assert!(took >= Duration::from_millis(2900), "{backend:?}: ran {took:?}");
    }
}

#[test]
fn silence_ends_a_call_at_its_inactivity_timeout() {
    for backend in BACKENDS {
        let (env, name) = env_for(backend, "timeout_secs = 1\nmax_duration_secs = 30");
        let (called, took) = timed_call(&env, name, json!({"ms": 20_000, "every_ms": 0}));
        assert_eq!(called.status(), "timeout", "{backend:?}: {}", called.result);
        let details = &called.result["error"]["details"];
        assert_eq!(
            details["bound"],
            json!("inactivity"),
            "{backend:?}: {}",
            called.result
        );
        assert_eq!(details["limit_ms"], json!(1000), "{backend:?}");
        let after = details["after_ms"].as_u64().expect("after_ms");
        assert!(
            (900..4000).contains(&after),
            "{backend:?}: fired after {after} ms"
        );
        called.assert_says("inactivity timeout");
        assert!(took < Duration::from_secs(20), "{backend:?}: took {took:?}");
        let record = last_record(&env, name);
        assert_eq!(record["status"], json!("timeout"), "{record}");
        assert_eq!(record["timeout"]["bound"], json!("inactivity"), "{record}");
        assert_eq!(record["timeout"]["after_ms"], json!(after), "{record}");
    }
}

#[test]
fn the_hard_cap_ends_a_call_that_keeps_reporting_progress() {
    for backend in BACKENDS {
        let (env, name) = env_for(backend, "timeout_secs = 1\nmax_duration_secs = 2");
        let (called, took) = timed_call(&env, name, json!({"ms": 20_000, "every_ms": 200}));
        assert_eq!(called.status(), "timeout", "{backend:?}: {}", called.result);
        let details = &called.result["error"]["details"];
        assert_eq!(
            details["bound"],
            json!("max_duration"),
            "{backend:?}: {}",
            called.result
        );
        let after = details["after_ms"].as_u64().expect("after_ms");
        assert!(
            (1900..5000).contains(&after),
            "{backend:?}: fired after {after} ms"
        );
        called.assert_says("hard cap of 2s");
        assert!(took < Duration::from_secs(12), "{backend:?}: took {took:?}");
        let record = last_record(&env, name);
        assert_eq!(record["timeout"]["bound"], json!("max_duration"), "{record}");
    }
}

#[test]
fn a_fixed_timeout_still_ignores_progress_without_a_hard_cap() {
    // The default: no max_duration_secs, so the timeout counts from the start.
    let (env, name) = env_for(Backend::InProcess, "timeout_secs = 1");
    let (called, took) = timed_call(&env, name, json!({"ms": 20_000, "every_ms": 100}));
    assert_eq!(called.status(), "timeout", "{}", called.result);
    assert_eq!(called.result["error"]["details"]["bound"], json!("timeout"));
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn no_timeout_runs_until_cancelled() {
    // The host default would end the call after 1 s; "none" lifts it.
    let env = Env::new(
        "[host]\ndefault_timeout_secs = 1\ncancel_grace_ms = 1000\naudit_log = \"audit.jsonl\"\n\n\
         [[tools]]\nmodule = \"fixture\"\n\n\
         [policy.tools.sleep]\ntimeout_secs = \"none\"\n",
    );
    let mut served = RawServe::start(&env, "long-calls");
    served.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "sleep", "arguments": {"ms": 60_000, "every_ms": 0}}}),
    );
    std::thread::sleep(Duration::from_millis(3000));
    // Still running: another call answers meanwhile, and then the cancel
    // ends the silent one.
    served.send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"message": "still here"}}}),
    );
    let echoed = served.answer(2);
    assert_eq!(echoed["result"]["isError"], json!(false), "{echoed}");
    assert!(
        !env.path().join("audit.jsonl").exists()
            || std::fs::read_to_string(env.path().join("audit.jsonl"))
                .unwrap_or_default()
                .lines()
                .all(|l| !l.contains("\"sleep\"")),
        "the silent call ended before it was cancelled"
    );
    // MCP answers nothing to a cancelled request: the audit log says how
    // it ended.
    served.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "test"}}));
    let end = Instant::now() + Duration::from_secs(10);
    let record = loop {
        let text = std::fs::read_to_string(env.path().join("audit.jsonl")).unwrap_or_default();
        let found = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|r| r["tool"] == json!("sleep"));
        if let Some(record) = found {
            break record;
        }
        assert!(Instant::now() < end, "no record of the cancelled call:\n{text}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(record["status"], json!("cancelled"), "{record}");
    let ran = record["duration_ms"].as_f64().expect("duration_ms");
    assert!(
        ran >= 2900.0,
        "ran {ran} ms: it must have outlived the 1 s default"
    );
}

#[test]
fn bad_bounds_are_plan_errors() {
    for (rule, says) in [
        ("timeout_secs = 0", "at least 1"),
        ("timeout_secs = \"never\"", "\"never\" is not a bound"),
        ("max_duration_secs = -3", "-3 is not a number of seconds"),
        (
            "max_duration_secs = 10\nmax_runtime = 5",
            "unknown field `max_runtime`",
        ),
    ] {
        let env = Env::new(&format!(
            "[[tools]]\nmodule = \"fixture\"\n[policy.tools.sleep]\n{rule}\n"
        ));
        let out = env.run(&["check"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{rule}: {stderr}");
        assert!(stderr.contains(says), "{rule}: {stderr}");
    }
}
