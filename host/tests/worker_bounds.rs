//! What an isolated module's worker sends the host is bounded: the crashy
//! fixture's hostile tools (mounted with `hostile = true`) flood the
//! worker protocol with event names, events, log lines and progress
//! frames, each for at most a few seconds. The host kills the worker at
//! the first frame past a cap, the call answers `module_crashed` naming the
//! `[host.worker_limits]` key, the host's memory stays under budget, and
//! the module answers again on the next call. A worker's log line cannot
//! write a line of its own into the host's log.

mod common;

use std::time::Duration;

use common::rss::{assert_within_budget, run_measured};
use common::{module_file, Called, Env};
use serde_json::{json, Value};

/// The crashy fixture isolated, its hostile tools on, plus `extra` TOML.
fn hostile_plan(limits: &str) -> String {
    format!(
        "[host]\ndefault_timeout_secs = 30\n{limits}\n\
         [[tools]]\npath = \"{}\"\nprefix = \"c_\"\nisolation = \"process\"\n\
         [tools.config]\nhostile = true\n",
        module_file("toolhost_fixture_crashy").display()
    )
}

/// Calls `tool` (a flood of at most `secs` seconds), measuring the host's
/// memory.
fn flood_for(env: &Env, tool: &str, secs: u64) -> Called {
    let mut cmd = env.command();
    cmd.env("RUST_LOG", "warn")
        .args(["call", tool, &json!({"ms": secs * 1000}).to_string()]);
    let (out, peak) = run_measured(cmd, Duration::from_secs(30));
    assert_within_budget(peak, tool);
    Called::from_output(out)
}

/// A flood of at most 4 s.
fn flood(env: &Env, tool: &str) -> Called {
    flood_for(env, tool, 4)
}

fn assert_killed_at(called: &Called, key: &str) {
    assert_eq!(
        called.result["error"]["code"],
        json!("module_crashed"),
        "{}",
        called.result
    );
    assert_eq!(called.result["error"]["retryable"], json!(true));
    let limit = &called.result["error"]["details"]["limit"];
    assert_eq!(limit["key"], json!(key), "{}", called.result);
    assert!(
        limit["seen"].as_u64() > limit["cap"].as_u64(),
        "{}",
        called.result
    );
    called.assert_says(&format!("[host.worker_limits] {key}"));
}

#[test]
fn each_flood_kills_the_worker_at_its_cap_and_the_module_answers_again() {
    // Event names under the default cap. Without one, the host kept every
    // name (past the memory budget within these 8 s).
    let env = Env::new(&hostile_plan(""));
    assert_killed_at(&flood_for(&env, "c_flood_event_names", 8), "max_event_names");
    // The per-second caps, set low enough that a worker on a busy machine
    // still goes past them within the first second.
    env.set_plan(&hostile_plan(
        "[host.worker_limits]\nmax_events_per_second = 500\nmax_log_lines_per_second = 500\n\
         max_frames_per_second = 2000\n",
    ));
    for (tool, key) in [
        ("c_flood_events", "max_events_per_second"),
        ("c_flood_logs", "max_log_lines_per_second"),
        ("c_flood_progress", "max_frames_per_second"),
    ] {
        assert_killed_at(&flood(&env, tool), key);
    }
    let again = env.call("c_echo", json!({"message": "still here"}));
    assert_eq!(again.assert_success(), &json!({"message": "still here"}));
}

/// The per-call caps and the frame size, set in the plan.
#[test]
fn per_call_caps_and_the_frame_size_come_from_the_plan() {
    let env = Env::new(&hostile_plan(
        "[host.worker_limits]\nmax_frames_per_call = 300\nmax_log_lines_per_call = 1000000\n\
         max_frames_per_second = 1000000\n",
    ));
    assert_killed_at(&flood(&env, "c_flood_progress"), "max_frames_per_call");

    env.set_plan(&hostile_plan(
        "[host.worker_limits]\nmax_log_lines_per_call = 200\nmax_log_lines_per_second = 1000000\n\
         max_frames_per_second = 1000000\n",
    ));
    assert_killed_at(&flood(&env, "c_flood_logs"), "max_log_lines_per_call");

    // A line without its newline grows only to the plan's frame size.
    env.set_plan(&hostile_plan("[host.worker_limits]\nmax_frame_bytes = 1048576\n"));
    let called = flood(&env, "c_flood_protocol");
    assert_eq!(
        called.result["error"]["code"],
        json!("module_crashed"),
        "{}",
        called.result
    );
    called.assert_says("longer than the limit of 1048576 bytes ([host.worker_limits] max_frame_bytes)");

    env.set_plan(&hostile_plan("[host.worker_limits]\nmax_frames = 1\n"));
    let out = env.run(&["list"]);
    assert_eq!(out.status.code(), Some(2), "an unknown key is a plan error");
    assert!(String::from_utf8_lossy(&out.stderr).contains("max_frames"));
}

/// A worker's log line with a newline and an escape sequence is one record
/// of the host's log, escaped; its secret is redacted.
#[test]
fn a_worker_log_line_stays_one_record() {
    let env = Env::new(&hostile_plan(""));
    let secret = format!("glpat-{}", "q1w2e3r4t5y6u7i8o9p0");
    let out = env.run(&["call", "c_leaky", &json!({ "secret": secret }).to_string()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let records: Vec<&str> = stderr.lines().filter(|l| l.contains("FORGED-RECORD")).collect();
    assert_eq!(records.len(), 1, "{stderr}");
    assert!(
        records[0].contains("WARN") && records[0].contains("\\nFORGED-RECORD \\x1b]0;pwned\\x07"),
        "the line is not one escaped record: {stderr}"
    );
    assert!(
        !stderr.contains('\x1b'),
        "a raw escape reached the log: {stderr:?}"
    );
    assert!(!stderr.contains(&secret), "{stderr}");
    let result: Value = serde_json::from_slice(&out.stdout).expect("a result");
    assert_eq!(result["status"], json!("success"), "{result}");
}
