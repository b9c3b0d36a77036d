//! Issue #16, items 1–4 over HTTP: the real `toolhost serve --http` with two
//! principals and their tokens, driven by rmcp's MCP client. Each principal
//! sees only its grants; an expired grant, a per-run call limit, a missing
//! scope and an effect above the grant refuse with reasons; `_meta` carries
//! the request context; audit records name principal, grant, policy
//! version and context.

mod common;

use common::serve::{toolhost_meta, HttpServer};
use common::{module_file, Env};
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject, RequestMetaObject};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-9876543210";
const SERVER: &str = "server-token-governance";

fn sha256_hex(text: &str) -> String {
    toolhost::pipeline::audit::sha256_hex(text.as_bytes())
}

fn plan() -> String {
    format!(
        r#"[host]
audit_log = "audit.jsonl"
default_timeout_secs = 30

[[tools]]
module = "fixture"

[[tools]]
module = "governed"

[policy]
version = "2026-11-23.1"

[[principals]]
name = "alice"
token_env = "GOV_TEST_ALICE"

[[principals]]
name = "bob"
token_sha256 = "{bob}"

[[grants]]
name = "alice-basic"
principal = "alice"
tools = ["echo", "write_key"]
max_effect = "mutation"
max_calls = 2

[[grants]]
name = "alice-vault"
principal = "alice"
tools = ["vault_*"]

[[grants]]
name = "bob-current"
principal = "bob"
tools = ["greet", "launch"]
max_effect = "mutation"

[[grants]]
name = "bob-old"
principal = "bob"
tools = ["old_greet"]
expires_at = "2020-01-01T00:00:00Z"

[[grants]]
name = "bob-vault"
principal = "bob"
tools = ["vault_read"]
scopes = ["vault:read"]
"#,
        bob = sha256_hex(BOB)
    )
}

/// Starts `toolhost serve --http 127.0.0.1:0`; returns it and its URL once
/// it printed that it listens.
fn serve(env: &Env) -> (HttpServer, String) {
    let mut cmd = env.command();
    cmd.args(["serve", "--http", "127.0.0.1:0"])
        .env("TOOLHOST_TOKEN", SERVER)
        .env("GOV_TEST_ALICE", ALICE);
    let server = HttpServer::start(cmd);
    let url = server.url.clone();
    (server, url)
}

async fn connect(url: &str, token: &str) -> RunningService<RoleClient, ()> {
    common::serve::http_client(url, token).await
}

async fn names(client: &RunningService<RoleClient, ()>) -> Vec<String> {
    let mut names: Vec<String> = client
        .list_all_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    names.sort();
    names
}

async fn call(
    client: &RunningService<RoleClient, ()>,
    tool: &str,
    input: Value,
    run: Option<&str>,
) -> CallToolResult {
    let mut params = CallToolRequestParams::new(tool.to_string());
    params.arguments = Some(match input {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    });
    if let Some(run) = run {
        let mut meta = RequestMetaObject::new();
        meta.0.insert("toolhost/run_id".into(), json!(run));
        meta.0.insert("tenant".into(), json!("acme"));
        params.meta = Some(meta);
    }
    client.call_tool(params).await.expect("tools/call")
}

fn refused(result: &CallToolResult, reason: &str) -> Value {
    let info = toolhost_meta(result);
    assert_eq!(result.is_error, Some(true), "{info}");
    assert_eq!(info["status"], "policy_denied", "{info}");
    assert_eq!(info["code"], "grant_missing", "{info}");
    assert_eq!(info["details"]["reason"], reason, "{info}");
    info
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_principals_see_and_call_only_their_grants() {
    module_file("toolhost_governed");
    let env = Env::new(&plan());
    let (server, url) = serve(&env);

    let alice = connect(&url, ALICE).await;
    let bob = connect(&url, BOB).await;
    assert_eq!(names(&alice).await, ["echo", "vault_read", "write_key"]);
    assert_eq!(names(&bob).await, ["greet", "launch", "old_greet", "vault_read"]);

    // Per-run limit: two calls in run r1, the third refused; r2 starts anew.
    for _ in 0..2 {
        let ok = call(&alice, "echo", json!({"message": "hi"}), Some("r1")).await;
        assert_eq!(ok.is_error, Some(false), "{}", toolhost_meta(&ok));
    }
    let third = call(&alice, "echo", json!({"message": "hi"}), Some("r1")).await;
    let details = refused(&third, "max_calls");
    assert_eq!(details["details"]["run_id"], "r1");
    let other_run = call(&alice, "echo", json!({"message": "hi"}), Some("r2")).await;
    assert_eq!(other_run.is_error, Some(false), "{}", toolhost_meta(&other_run));

    // No grant: named in the refusal.
    let ungranted = call(&alice, "greet", json!({"name": "x"}), None).await;
    let details = refused(&ungranted, "no_grant");
    assert_eq!(details["details"]["missing_grant"]["principal"], "alice");
    assert_eq!(details["details"]["missing_grant"]["tools"], json!(["greet"]));
    // Missing scope: alice's vault grant carries none.
    let unscoped = call(&alice, "vault_read", json!({}), None).await;
    let details = refused(&unscoped, "scope");
    assert_eq!(details["details"]["missing_scopes"], json!(["vault:read"]));
    // Bob: an expired grant, an effect above the grant, a scoped call.
    let expired = call(&bob, "old_greet", json!({"name": "x"}), None).await;
    let details = refused(&expired, "expired");
    assert_eq!(details["details"]["expires_at"], "2020-01-01T00:00:00Z");
    let too_strong = call(&bob, "launch", json!({}), None).await;
    let details = refused(&too_strong, "max_effect");
    assert_eq!(details["details"]["max_effect"], "mutation");
    let scoped = call(&bob, "vault_read", json!({}), None).await;
    assert_eq!(scoped.is_error, Some(false), "{}", toolhost_meta(&scoped));
    let greeted = call(&bob, "greet", json!({"name": "bob"}), None).await;
    assert_eq!(greeted.is_error, Some(false), "{}", toolhost_meta(&greeted));

    // The server's own token is [host] principal 'local', which has no grant.
    let local = connect(&url, SERVER).await;
    assert!(names(&local).await.is_empty());
    let denied = call(&local, "echo", json!({"message": "x"}), None).await;
    let details = refused(&denied, "no_grant");
    assert_eq!(details["details"]["principal"], "local");

    // A token nobody holds gets 401 before any session exists.
    let config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).auth_header("wrong-token");
    assert!(
        ().serve(StreamableHttpClientTransport::from_config(config))
            .await
            .is_err()
    );

    for client in [alice, bob, local] {
        client.cancel().await.expect("close");
    }
    drop(server);

    // Audit: who, under which grant and policy version, in which run.
    let log = std::fs::read_to_string(env.path().join("audit.jsonl")).expect("audit log");
    let records: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).expect("record"))
        .collect();
    let alice_ok = records
        .iter()
        .find(|r| r["principal"] == "alice" && r["status"] == "success")
        .expect("alice's call recorded");
    assert_eq!(alice_ok["grant"], "alice-basic", "{alice_ok}");
    assert_eq!(alice_ok["policy_version"], "2026-11-23.1", "{alice_ok}");
    assert_eq!(alice_ok["context"]["run_id"], "r1", "{alice_ok}");
    assert_eq!(alice_ok["context"]["tenant"], "acme", "{alice_ok}");
    let bob_denied = records
        .iter()
        .find(|r| r["principal"] == "bob" && r["tool"] == "launch")
        .expect("bob's refusal recorded");
    assert_eq!(bob_denied["decision"], "grant_denied", "{bob_denied}");
    assert_eq!(bob_denied["error_code"], "grant_missing", "{bob_denied}");
    let out = env.run(&["audit", "verify", "audit.jsonl"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
