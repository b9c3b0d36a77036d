//! `Pipeline::call_here`: every stage on the caller's own thread, with the
//! watchdog keeping deadlines, cancellation and abandonment (what the MCP
//! stdio server's direct calls use), against the real fixture module.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolhost::cancel::CancelToken;
use toolhost::pipeline::{Answer, Call, Pipeline};
use toolhost_core::{Status, ToolResult};

/// What an answer brought, and on which thread it came.
type Answered = (ToolResult, ThreadId);

fn answer_into(tx: mpsc::Sender<Answered>, count: Arc<AtomicUsize>) -> Answer {
    Box::new(move |result| {
        count.fetch_add(1, Ordering::SeqCst);
        let _ = tx.send((result, std::thread::current().id()));
    })
}

fn call(name: &str, input: Value) -> Call {
    Call {
        name: name.into(),
        input,
        ..Call::default()
    }
}

/// A progress sink that signals the first report: the tool is running.
fn started() -> (toolhost::context::ProgressSink, mpsc::Receiver<()>) {
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let sink: toolhost::context::ProgressSink = Arc::new(move |_| {
        if let Ok(tx) = tx.lock() {
            let _ = tx.send(());
        }
    });
    (sink, rx)
}

/// Runs `call` with `call_here` on a thread of its own; returns the answer
/// channel, the answer count and the calling thread's handle.
fn spawn_here(
    host: &common::InProcess,
    call: Call,
) -> (
    mpsc::Receiver<Answered>,
    Arc<AtomicUsize>,
    std::thread::JoinHandle<ThreadId>,
) {
    let (tx, rx) = mpsc::channel();
    let count = Arc::new(AtomicUsize::new(0));
    let answer = answer_into(tx, count.clone());
    let pipeline = host.pipeline.clone();
    let runtime = host.runtime.handle().clone();
    let thread = std::thread::spawn(move || {
        pipeline.call_here(&runtime, call, answer);
        std::thread::current().id()
    });
    (rx, count, thread)
}

fn fixture(extra: &str) -> common::InProcess {
    common::InProcess::new(&format!("[[tools]]\nmodule = \"fixture\"\n{extra}"))
}

#[test]
fn a_call_runs_and_is_answered_on_the_calling_thread() {
    let host = fixture("");
    let (rx, count, thread) = spawn_here(&host, call("echo", json!({"message": "here"})));
    let (result, answered_on) = rx.recv_timeout(Duration::from_secs(10)).expect("answered");
    let caller = thread.join().expect("caller");
    assert_eq!(result.status, Status::Success, "{result:?}");
    assert_eq!(result.output["message"], "here");
    assert_eq!(answered_on, caller, "answered on the thread that called");
    assert_eq!(count.load(Ordering::SeqCst), 1);
}

#[test]
fn refusals_are_answered_without_running_the_tool() {
    let host = fixture("[policy.tools.echo]\ndecision = \"deny\"\n");
    let (rx, _, thread) = spawn_here(&host, call("echo", json!({"message": "x"})));
    let (denied, _) = rx.recv_timeout(Duration::from_secs(10)).expect("answered");
    thread.join().expect("caller");
    assert_eq!(denied.status, Status::PolicyDenied, "{denied:?}");

    let (rx, _, thread) = spawn_here(&host, call("echo", json!({"message": 1})));
    let (invalid, _) = rx.recv_timeout(Duration::from_secs(10)).expect("answered");
    thread.join().expect("caller");
    assert_eq!(invalid.status, Status::ValidationError, "{invalid:?}");

    let (rx, _, thread) = spawn_here(&host, call("ech", json!({})));
    let (unknown, _) = rx.recv_timeout(Duration::from_secs(10)).expect("answered");
    thread.join().expect("caller");
    assert!(
        unknown.message().contains("echo"),
        "suggests the close name: {unknown:?}"
    );
}

#[test]
fn a_panicking_tool_is_an_error_and_the_thread_goes_on() {
    let host = fixture("");
    let (rx, _, thread) = spawn_here(&host, call("panic", json!({"message": "boom"})));
    let (result, _) = rx.recv_timeout(Duration::from_secs(10)).expect("answered");
    thread.join().expect("the calling thread survives");
    assert_eq!(result.status, Status::Error, "{result:?}");
    assert_eq!(result.error.as_ref().map(|e| e.code.as_str()), Some("panicked"));
}

#[test]
fn the_deadline_stops_a_cooperative_tool_with_a_timeout() {
    let host = fixture("[policy.tools.sleep]\ntimeout_secs = 1\n");
    let started = Instant::now();
    let (rx, _, thread) = spawn_here(&host, call("sleep", json!({"ms": 60_000})));
    let (result, _) = rx.recv_timeout(Duration::from_secs(10)).expect("answered");
    thread.join().expect("caller");
    assert_eq!(result.status, Status::Timeout, "{result:?}");
    assert!(result.message().contains("timed out after 1s"), "{result:?}");
    assert!(
        result.output["slept_ms"].as_u64().is_some(),
        "partial output kept"
    );
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(5),
        "{took:?}"
    );
}

#[test]
fn a_cancel_from_another_thread_stops_the_tool() {
    let host = fixture("");
    let cancel = CancelToken::new();
    let mut sleep = call("sleep", json!({"ms": 60_000}));
    sleep.cancel = Some(cancel.clone());
    let (progress, running) = started();
    sleep.progress = Some(progress);
    let (rx, _, thread) = spawn_here(&host, sleep);
    running
        .recv_timeout(Duration::from_secs(10))
        .expect("the tool reports progress once it runs");
    let cancelled_at = Instant::now();
    cancel.cancel();
    let (result, _) = rx.recv_timeout(Duration::from_secs(10)).expect("answered");
    thread.join().expect("caller");
    assert_eq!(result.status, Status::Cancelled, "{result:?}");
    // The tool itself stopped and returned what it had (not abandoned).
    assert!(result.metadata.extra.get("abandoned").is_none(), "{result:?}");
    assert!(result.output["slept_ms"].as_u64().is_some(), "{result:?}");
    assert!(cancelled_at.elapsed() < Duration::from_secs(2));
}

#[test]
fn a_tool_that_ignores_its_deadline_is_answered_without_and_only_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let audit = dir.path().join("audit.jsonl");
    let host = common::InProcess::with_host(
        &format!(
            "cancel_grace_ms = 300\naudit_log = {:?}\n",
            audit.display().to_string()
        ),
        "[[tools]]\nmodule = \"fixture\"\n[policy.tools.stubborn_sleep]\ntimeout_secs = 1\n",
    );
    let started = Instant::now();
    let (rx, count, thread) = spawn_here(&host, call("stubborn_sleep", json!({"ms": 3_000})));
    let (result, answered_on) = rx.recv_timeout(Duration::from_secs(10)).expect("answered");
    let answered_after = started.elapsed();
    assert_eq!(result.status, Status::Timeout, "{result:?}");
    assert_eq!(result.metadata.extra.get("abandoned"), Some(&json!(true)));
    assert!(
        answered_after >= Duration::from_millis(1_300) && answered_after < Duration::from_millis(2_900),
        "answered after the deadline and the grace, before the tool returned: {answered_after:?}"
    );
    // The tool's thread is still stuck in it; its late result is dropped.
    let caller = thread.join().expect("caller");
    assert!(started.elapsed() >= Duration::from_secs(3));
    assert_ne!(answered_on, caller, "the watchdog's side answered");
    assert!(rx.recv_timeout(Duration::from_millis(200)).is_err());
    assert_eq!(count.load(Ordering::SeqCst), 1, "answered exactly once");
    let records: Vec<Value> = std::fs::read_to_string(&audit)
        .expect("audit log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("audit line"))
        .collect();
    assert_eq!(records.len(), 1, "one record per call: {records:?}");
    assert_eq!(records[0]["status"], "timeout");
}

#[test]
fn shutdown_cancels_calls_running_here() {
    let host = fixture("");
    let shutdown = CancelToken::new();
    let pipeline = Arc::new(Pipeline::new(host.host.clone(), shutdown.clone()));
    let (tx, rx) = mpsc::channel();
    let answer = answer_into(tx, Arc::new(AtomicUsize::new(0)));
    let runtime = host.runtime.handle().clone();
    let (progress, running) = started();
    let mut sleep = call("sleep", json!({"ms": 60_000}));
    sleep.progress = Some(progress);
    let thread = std::thread::spawn(move || {
        pipeline.call_here(&runtime, sleep, answer);
    });
    running
        .recv_timeout(Duration::from_secs(10))
        .expect("the tool reports progress once it runs");
    shutdown.cancel();
    let (result, _) = rx.recv_timeout(Duration::from_secs(10)).expect("answered");
    thread.join().expect("caller");
    assert_eq!(result.status, Status::Cancelled, "{result:?}");
}

#[test]
fn the_module_cap_holds_for_calls_run_here() {
    let host = common::InProcess::new("[[tools]]\nmodule = \"fixture\"\nmax_concurrent = 1\n");
    let calls: Vec<_> = (0..3)
        .map(|i| {
            spawn_here(
                &host,
                call("write_key", json!({"key": format!("k{i}"), "ms": 150})),
            )
        })
        .collect();
    let mut spans = Vec::new();
    for (rx, _, thread) in calls {
        let (result, _) = rx.recv_timeout(Duration::from_secs(10)).expect("answered");
        thread.join().expect("caller");
        assert_eq!(result.status, Status::Success, "{result:?}");
        let start = result.output["start_us"].as_u64().expect("start");
        let end = result.output["end_us"].as_u64().expect("end");
        spans.push((start, end));
    }
    spans.sort();
    for pair in spans.windows(2) {
        assert!(
            pair[0].1 <= pair[1].0,
            "calls overlapped under max_concurrent = 1: {spans:?}"
        );
    }
}
