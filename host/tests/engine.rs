//! Stage 6 is one engine, whichever thread runs the tool: the same calls
//! through `Pipeline::call` (a lent blocking thread) and through
//! `Pipeline::call_here` (the caller's own thread) get the same answers:
//! success, a panic, a deadline a tool honours, a deadline it ignores
//! (abandoned after the grace period), a cancel from the client and the
//! host's shutdown, against the real fixture module.

mod common;

use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use toolhost::cancel::CancelToken;
use toolhost::context::ProgressSink;
use toolhost::pipeline::{Call, Pipeline};
use toolhost_core::ToolResult;

const PLAN: &str = "[[tools]]\nmodule = \"fixture\"\n\
    [policy.tools.stubborn_sleep]\ntimeout_secs = 1\n\
    [policy.tools.sleep]\ntimeout_secs = 1\n";

/// Which way a call goes through stage 6.
#[derive(Clone, Copy, Debug)]
enum Way {
    Awaited,
    Here,
}

/// What stops a long call, once its tool runs.
#[derive(Clone, Copy, Debug)]
enum Stop {
    Nothing,
    Client,
    Shutdown,
}

/// The part of an answer both ways must agree on.
fn gist(result: &ToolResult) -> Value {
    json!({
        "status": result.status.to_string(),
        "code": result.error.as_ref().map(|e| e.code.clone()),
        "retryable": result.error.as_ref().map(|e| e.retryable),
        "abandoned": result.metadata.extra.get("abandoned"),
        "output": result.output,
    })
}

/// Runs one call `way`, stopping it with `stop` once the tool reports
/// progress (its readiness signal), and returns the answer.
fn run(host: &common::InProcess, way: Way, name: &str, input: Value, stop: Stop) -> ToolResult {
    let shutdown = CancelToken::new();
    let pipeline = Arc::new(Pipeline::new(host.host.clone(), shutdown.clone()));
    let cancel = CancelToken::new();
    let (ran_tx, ran) = mpsc::channel();
    let ran_tx = Mutex::new(ran_tx);
    let progress: ProgressSink = Arc::new(move |_| {
        if let Ok(tx) = ran_tx.lock() {
            let _ = tx.send(());
        }
    });
    let call = Call {
        name: name.into(),
        input,
        cancel: Some(cancel.clone()),
        progress: Some(progress),
        ..Call::default()
    };
    let (tx, answered) = mpsc::channel();
    let runtime = host.runtime.handle().clone();
    let caller = std::thread::spawn(move || match way {
        Way::Awaited => {
            let _ = tx.send(runtime.block_on(pipeline.call(call)));
        }
        Way::Here => pipeline.call_here(
            &runtime,
            call,
            Box::new(move |result| {
                let _ = tx.send(result);
            }),
        ),
    });
    match stop {
        Stop::Nothing => {}
        Stop::Client | Stop::Shutdown => {
            ran.recv_timeout(Duration::from_secs(30))
                .expect("the tool reports progress once it runs");
            match stop {
                Stop::Client => cancel.cancel(),
                _ => shutdown.cancel(),
            }
        }
    }
    let result = answered
        .recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| panic!("{name} {way:?}: never answered"));
    caller.join().expect("caller");
    result
}

#[test]
fn both_ways_through_stage_6_answer_alike() {
    let host = common::InProcess::with_host("cancel_grace_ms = 200\n", PLAN);
    let cases: [(&str, Value, Stop, &str); 6] = [
        ("echo", json!({"message": "hi"}), Stop::Nothing, "success"),
        ("panic", json!({}), Stop::Nothing, "error"),
        ("sleep", json!({"ms": 60_000}), Stop::Nothing, "timeout"),
        ("stubborn_sleep", json!({"ms": 1_600}), Stop::Nothing, "timeout"),
        ("sleep", json!({"ms": 60_000}), Stop::Client, "cancelled"),
        ("sleep", json!({"ms": 60_000}), Stop::Shutdown, "cancelled"),
    ];
    for (name, input, stop, status) in cases {
        let awaited = run(&host, Way::Awaited, name, input.clone(), stop);
        let here = run(&host, Way::Here, name, input, stop);
        let (a, h) = (gist(&awaited), gist(&here));
        assert_eq!(a["status"], status, "{name} {stop:?} awaited: {awaited:?}");
        if name == "sleep" {
            // A stopped sleep's partial output says how long it slept.
            for key in ["status", "code", "retryable", "abandoned"] {
                assert_eq!(a[key], h[key], "{name} {stop:?} {key}: {awaited:?} / {here:?}");
            }
        } else {
            assert_eq!(a, h, "{name} {stop:?}: the two ways differ");
        }
    }
}

#[test]
fn an_abandoned_call_is_marked_so_both_ways() {
    let host = common::InProcess::with_host("cancel_grace_ms = 200\n", PLAN);
    for way in [Way::Awaited, Way::Here] {
        let result = run(&host, way, "stubborn_sleep", json!({"ms": 1_600}), Stop::Nothing);
        assert_eq!(
            result.metadata.extra.get("abandoned"),
            Some(&json!(true)),
            "{way:?}: {result:?}"
        );
        assert!(
            result.message().contains("did not stop within 0.2s"),
            "{way:?}: {result:?}"
        );
    }
}
