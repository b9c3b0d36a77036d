//! `toolhost serve` driven by rmcp's own client over stdio: the handshake,
//! the tool list, calls and their errors, progress and cancellation.

mod common;

use std::time::{Duration, Instant};

use common::serve::ProgressTokens;
use common::{fixture_plan, Env};
use rmcp::model::{CallToolRequestParams, ClientRequest, Request};
use rmcp::service::{PeerRequestOptions, RunningService};
use rmcp::RoleClient;
use serde_json::{json, Value};

async fn connect(env: &Env) -> (RunningService<RoleClient, ProgressTokens>, ProgressTokens) {
    let client = ProgressTokens::default();
    let (running, _) = common::serve::client(env.command(), client.clone()).await;
    (running, client)
}

use common::serve::args;

#[tokio::test]
async fn initialize_list_and_call() {
    let env = Env::new(&fixture_plan(""));
    let (client, _) = connect(&env).await;
    let info = client.peer_info().expect("server info");
    let server = info.server_info.clone().expect("serverInfo");
    assert_eq!(server.name, "toolhost");
    assert_eq!(server.version, env!("CARGO_PKG_VERSION"));

    let tools = client.list_all_tools().await.expect("tools/list");
    let echo = tools.iter().find(|t| t.name == "echo").expect("echo listed");
    let hints = echo.annotations.clone().expect("annotations");
    assert_eq!(hints.read_only_hint, Some(true));
    assert_eq!(hints.destructive_hint, Some(false));
    let shape = tools.iter().find(|t| t.name == "shape").expect("shape listed");
    assert!(shape.output_schema.is_some());

    let result = client
        .call_tool(CallToolRequestParams::new("echo").with_arguments(args(json!({"message": "hi"}))))
        .await
        .expect("tools/call");
    assert_eq!(result.is_error, Some(false));
    assert_eq!(
        result.structured_content,
        Some(json!({"message": "hi", "data": null}))
    );

    let invalid = client
        .call_tool(CallToolRequestParams::new("echo").with_arguments(args(json!({"nope": 1}))))
        .await
        .expect("a validation error is a result, not a protocol error");
    assert_eq!(invalid.is_error, Some(true));
    let meta = invalid.meta.expect("meta");
    assert_eq!(meta.0["toolhost"]["status"], json!("validation_error"));

    client.cancel().await.expect("close");
}

#[tokio::test]
async fn progress_and_cancellation() {
    let env = Env::new(&fixture_plan("").replacen("[host]\n", "[host]\naudit_log = \"audit.jsonl\"\n", 1));
    let (client, seen) = connect(&env).await;

    // Progress: rmcp's client attaches a progress token to every request.
    let result = client
        .call_tool(CallToolRequestParams::new("sleep").with_arguments(args(json!({"ms": 500}))))
        .await
        .expect("tools/call");
    assert_eq!(result.is_error, Some(false));
    assert!(
        seen.wait_for(1, Duration::from_secs(5)).await,
        "no progress arrived"
    );

    // Cancel a long call once it is running (its first progress is the
    // signal): notifications/cancelled stops the tool.
    seen.clear();
    let request = ClientRequest::CallToolRequest(Request::new(
        CallToolRequestParams::new("sleep").with_arguments(args(json!({"ms": 60_000}))),
    ));
    let handle = client
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .expect("send");
    assert!(
        seen.wait_for(1, Duration::from_secs(10)).await,
        "the long call never reported progress"
    );
    let started = Instant::now();
    handle.cancel(Some("test".into())).await.expect("cancel");
    // The server goes on serving, promptly.
    let after = client
        .call_tool(CallToolRequestParams::new("echo").with_arguments(args(json!({"message": "after"}))))
        .await
        .expect("tools/call after cancel");
    assert_eq!(after.is_error, Some(false));
    assert!(started.elapsed() < Duration::from_secs(5));

    // The tool itself stopped: the cancelled call is recorded with the
    // sleep's own partial output, well inside the 1.5 s grace after which
    // the host would abandon it (an abandoned call has no output, "null").
    let audit = env.path().join("audit.jsonl");
    let record = wait_for_record(&audit, "sleep", Duration::from_secs(10)).await;
    assert_eq!(record["status"], "cancelled", "{record}");
    assert!(
        record["output_bytes"].as_u64().unwrap_or(0) > 4,
        "the tool returned nothing: {record}"
    );
    assert!(
        record["duration_ms"].as_f64().unwrap_or(f64::MAX) < 59_000.0,
        "{record}"
    );
    client.cancel().await.expect("close");
}

/// The audit record of the last `tool` call that is not a success, once it
/// has been written (the record is written when the call has finished).
async fn wait_for_record(audit: &std::path::Path, tool: &str, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let found = std::fs::read_to_string(audit).ok().and_then(|log| {
            log.lines()
                .rev()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .find(|r| r["tool"] == tool && r["status"] != "success")
        });
        if let Some(record) = found {
            return record;
        }
        assert!(
            Instant::now() < deadline,
            "no record of the cancelled call in {}",
            audit.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
