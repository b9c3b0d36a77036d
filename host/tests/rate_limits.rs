//! `[[limits]]`: token-bucket rate limits by principal and tool, checked by
//! the real `toolhost` binary over MCP stdio, `toolhost batch` and `serve
//! --http` with two principals' tokens. The call past the burst is refused
//! `rate_limited` (retryable, with `retry_after_ms`) before any work is done
//! for it, calls pass again once the bucket refills, globs pick the tools,
//! each principal has its own buckets, and the audit log records the
//! refusal.

mod common;

use std::time::Duration;

use common::serve::{call, client, toolhost_meta, HttpServer};
use common::{fixture_plan, Env};
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::RunningService;
use rmcp::RoleClient;
use serde_json::{json, Value};

/// The audit log's records (not the intent records) for `tool`.
fn records(env: &Env, tool: &str) -> Vec<Value> {
    std::fs::read_to_string(env.path().join("audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["tool"] == json!(tool))
        .collect()
}

/// Asserts `result` is a rate-limit refusal by `limit`; its retry_after_ms.
fn assert_refused(result: &CallToolResult, limit: &str, max_wait_ms: u64) -> u64 {
    let meta = toolhost_meta(result);
    assert_eq!(result.is_error, Some(true), "{meta}");
    assert_eq!(meta["code"], json!("rate_limited"), "{meta}");
    assert_eq!(meta["retryable"], json!(true), "{meta}");
    assert_eq!(meta["details"]["limit"], json!(limit), "{meta}");
    let wait = meta["details"]["retry_after_ms"]
        .as_u64()
        .expect("retry_after_ms");
    assert!((1..=max_wait_ms).contains(&wait), "retry_after_ms {wait}: {meta}");
    wait
}

fn assert_ok(result: &CallToolResult) {
    assert_eq!(result.is_error, Some(false), "{}", toolhost_meta(result));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_mcp_the_call_past_the_burst_waits_for_the_refill() {
    let env = Env::new(&fixture_plan(
        "[[limits]]\ntools = [\"ec*\"]\nper_second = 2\nburst = 3\n\n\
         [[limits]]\nname = \"writes\"\ntools = [\"write_key\"]\nper_second = 0.1\nburst = 1\n",
    ));
    let plan = std::fs::read_to_string(&env.plan).expect("plan");
    env.set_plan(&plan.replace("[host]\n", "[host]\naudit_log = \"audit.jsonl\"\n"));
    let (client, _) = client(env.command(), ()).await;
    let echo = json!({"message": "hi"});
    for _ in 0..3 {
        assert_ok(&call(&client, "echo", echo.clone()).await);
    }
    let wait = assert_refused(&call(&client, "echo", echo.clone()).await, "limits[0]", 500);
    // The glob covers echo only: sleep is not limited.
    for _ in 0..5 {
        assert_ok(&call(&client, "sleep", json!({"ms": 1})).await);
    }
    // After the advertised wait, the bucket has a token again.
    tokio::time::sleep(Duration::from_millis(wait + 20)).await;
    assert_ok(&call(&client, "echo", echo.clone()).await);

    // A refused side-effecting call does no work: no intent record, and
    // the tool never ran (one write, one refusal).
    assert_ok(&call(&client, "write_key", json!({"key": "k"})).await);
    assert_refused(
        &call(&client, "write_key", json!({"key": "k"})).await,
        "writes",
        10_000,
    );
    client.cancel().await.expect("close");

    let echoes: Vec<Value> = records(&env, "echo")
        .into_iter()
        .filter(|r| r.get("phase").is_none())
        .collect();
    let refused: Vec<&Value> = echoes
        .iter()
        .filter(|r| r["status"] != json!("success"))
        .collect();
    assert_eq!(echoes.len(), 5, "{echoes:?}");
    assert_eq!(refused.len(), 1, "{echoes:?}");
    assert_eq!(refused[0]["decision"], json!("rate_limited"), "{}", refused[0]);
    assert_eq!(refused[0]["error_code"], json!("rate_limited"), "{}", refused[0]);
    assert_eq!(
        refused[0]["rate_limit"]["limit"],
        json!("limits[0]"),
        "{}",
        refused[0]
    );
    assert_eq!(
        refused[0]["rate_limit"]["retry_after_ms"],
        json!(wait),
        "{}",
        refused[0]
    );
    let writes = records(&env, "write_key");
    let intents = writes.iter().filter(|r| r["phase"] == json!("intent")).count();
    assert_eq!(intents, 1, "only the admitted write is intended: {writes:?}");
    assert_eq!(writes.len(), 3, "intent + success + refusal: {writes:?}");
}

#[test]
fn a_batch_past_the_burst_has_exactly_the_burst_admitted() {
    let env = Env::new(&fixture_plan(
        "[[limits]]\ntools = [\"echo\"]\nper_second = 1\nburst = 3\n",
    ));
    let lines: Vec<Value> = (0..5)
        .map(|i| json!({"name": "echo", "input": {"message": format!("m{i}")}}))
        .chain([json!({"name": "sleep", "input": {"ms": 1}})])
        .collect();
    let (results, code) = env.batch(&lines, &[]);
    assert_eq!(code, 1, "refused calls fail the batch: {results:?}");
    let status = |r: &Value| r["error"]["code"].as_str().unwrap_or("success").to_string();
    let admitted = results[..5].iter().filter(|r| status(r) == "success").count();
    let limited: Vec<&Value> = results[..5]
        .iter()
        .filter(|r| status(r) == "rate_limited")
        .collect();
    assert_eq!((admitted, limited.len()), (3, 2), "{results:?}");
    for refused in limited {
        assert_eq!(refused["error"]["retryable"], json!(true), "{refused}");
        let wait = refused["error"]["details"]["retry_after_ms"]
            .as_u64()
            .expect("retry_after_ms");
        assert!((1..=1000).contains(&wait), "{refused}");
    }
    assert_eq!(
        status(&results[5]),
        "success",
        "sleep is not limited: {results:?}"
    );
}

const ALICE: &str = "alice-rate-token-0123456789";
const BOB: &str = "bob-rate-token-9876543210";

async fn connect(url: &str, token: &str) -> RunningService<RoleClient, ()> {
    common::serve::http_client(url, token).await
}

async fn echo(client: &RunningService<RoleClient, ()>) -> CallToolResult {
    let mut arguments = JsonObject::new();
    arguments.insert("message".into(), json!("hi"));
    client
        .call_tool(CallToolRequestParams::new("echo").with_arguments(arguments))
        .await
        .expect("tools/call")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_each_principal_has_its_own_buckets() {
    let env = Env::new(&fixture_plan(
        "[[principals]]\nname = \"alice\"\ntoken_env = \"RATE_TEST_ALICE\"\n\n\
         [[principals]]\nname = \"bob\"\ntoken_env = \"RATE_TEST_BOB\"\n\n\
         [[limits]]\nper_second = 0.2\nburst = 2\n\n\
         [[limits]]\nname = \"bob-echo\"\nprincipal = \"bob\"\ntools = [\"echo\"]\nper_second = 0.2\nburst = 1\n",
    ));
    let mut cmd = env.command();
    cmd.args(["serve", "--http", "127.0.0.1:0"])
        .env("RATE_TEST_ALICE", ALICE)
        .env("RATE_TEST_BOB", BOB);
    let server = HttpServer::start(cmd);
    let alice = connect(&server.url, ALICE).await;
    let bob = connect(&server.url, BOB).await;

    // Alice spends her own bucket of two…
    assert_ok(&echo(&alice).await);
    assert_ok(&echo(&alice).await);
    assert_refused(&echo(&alice).await, "limits[0]", 5_000);
    // …which leaves Bob's untouched; his own echo limit has a burst of one.
    assert_ok(&echo(&bob).await);
    let refused = echo(&bob).await;
    assert_refused(&refused, "bob-echo", 5_000);
    assert_eq!(toolhost_meta(&refused)["details"]["principal"], json!("bob"));
    alice.cancel().await.expect("close");
    bob.cancel().await.expect("close");
    drop(server);
}

#[test]
fn check_lists_the_limits_and_refuses_bad_ones() {
    let env = Env::new(&fixture_plan(
        "[[limits]]\nprincipal = \"local\"\ntools = [\"echo\", \"sleep\"]\nper_second = 2.5\nburst = 4\n",
    ));
    let out = env.run(&["check"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("limits: 1 (per host)"), "{stdout}");
    assert!(
        stdout.contains("limits[0]: principal 'local', tools [echo, sleep]: 2.5 call(s)/s, burst 4"),
        "{stdout}"
    );
    env.set_plan(&fixture_plan(
        "[[limits]]\nprincipal = \"nobody\"\nper_second = 1\nburst = 1\n",
    ));
    let out = env.run(&["check"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("warn  limits[0]: principal 'nobody' is neither in [[principals]]"),
        "{stdout}"
    );
    for (entry, says) in [
        ("per_second = 1\nburst = 1\nrate = 3", "unknown field `rate`"),
        ("per_second = 0\nburst = 1", "per_second must be a positive"),
        ("per_second = 1\nburst = 0", "burst must be at least 1"),
        ("per_second = 1", "missing field `burst`"),
        ("per_second = 1\nburst = 1\ntools = [\"[\"]", "tools:"),
    ] {
        env.set_plan(&fixture_plan(&format!("[[limits]]\n{entry}\n")));
        let out = env.run(&["check"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{entry}: {stderr}");
        assert!(stderr.contains(says), "{entry}: {stderr}");
    }
}
