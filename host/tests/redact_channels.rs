//! The output guardrail covers every channel a tool's words leave by, one
//! test each: object keys of the output (and so of MCP
//! `structuredContent`), the tool's own metadata, error details, progress
//! messages (`notifications/progress`) and log lines. The crashy fixture's
//! `leaky` tool (mounted with `hostile = true`, in a worker) puts a GitLab
//! token in all of them.

mod common;

use std::sync::{Arc, Mutex};

use common::serve::{args, client};
use common::{module_file, Called, Env};
use rmcp::model::{CallToolRequestParams, ProgressNotificationParam};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use serde_json::json;

const REDACTED: &str = "[REDACTED:gitlab_token]";

fn secret() -> String {
    format!("glpat-{}", "z9x8c7v6b5n4m3l2k1j0")
}

fn env() -> Env {
    Env::new(&format!(
        "[host]\ndefault_timeout_secs = 30\n\n\
         [[tools]]\npath = \"{}\"\nprefix = \"c_\"\n[tools.config]\nhostile = true\n",
        module_file("toolhost_fixture_crashy").display()
    ))
}

fn leaky(env: &Env, fail: bool) -> Called {
    env.call("c_leaky", json!({"secret": secret(), "fail": fail}))
}

/// After a test's own channel is checked: nothing else let it through.
fn assert_nowhere(called: &Called) {
    let text = called.result.to_string();
    assert!(!text.contains(&secret()), "the secret left in the result: {text}");
    assert!(
        !called.stderr.contains(&secret()),
        "the secret reached the log: {}",
        called.stderr
    );
}

#[test]
fn object_keys_of_the_output_are_redacted() {
    let called = leaky(&env(), false);
    assert_eq!(
        called.result["output"],
        json!({ REDACTED: "a secret as a key", "plain": 1 })
    );
    called.assert_success();
    assert_nowhere(&called);
}

#[test]
fn the_tools_metadata_is_redacted() {
    let called = leaky(&env(), false);
    let meta = &called.result["metadata"];
    assert_eq!(meta["note"], json!(format!("used {REDACTED}")), "{meta}");
    assert_eq!(meta[REDACTED], json!(true), "{meta}");
    assert_eq!(meta["redactions"]["gitlab_token"], json!(3), "{meta}");
    assert_nowhere(&called);
}

#[test]
fn error_details_keys_and_values_are_redacted() {
    let called = leaky(&env(), true);
    assert_eq!(called.status(), "error", "{}", called.result);
    assert_eq!(
        called.result["error"]["details"],
        json!({ REDACTED: format!("again {REDACTED}") })
    );
    assert_nowhere(&called);
}

#[test]
fn log_lines_are_redacted() {
    let called = leaky(&env(), false);
    assert!(!called.stderr.contains(&secret()), "{}", called.stderr);
    assert!(
        called.stderr.contains(&format!("token {REDACTED}")),
        "the log line is missing: {}",
        called.stderr
    );
    assert_nowhere(&called);
}

/// Keeps every progress message the host sends.
#[derive(Clone, Default)]
struct Messages(Arc<Mutex<Vec<String>>>);

impl ClientHandler for Messages {
    async fn on_progress(&self, params: ProgressNotificationParam, _: NotificationContext<RoleClient>) {
        if let Some(message) = params.message {
            self.0.lock().expect("messages").push(message);
        }
    }
}

#[tokio::test]
async fn progress_messages_and_structured_content_are_redacted() {
    let env = env();
    let messages = Messages::default();
    let (client, _) = client(env.command(), messages.clone()).await;
    let result = client
        .call_tool(CallToolRequestParams::new("c_leaky").with_arguments(args(json!({"secret": secret()}))))
        .await
        .expect("tools/call");
    // The progress notification precedes the result.
    let seen = messages.0.lock().expect("messages").clone();
    assert_eq!(seen, [format!("cloning with {REDACTED}")], "{seen:?}");
    let structured = result.structured_content.clone().expect("structuredContent");
    assert_eq!(structured, json!({ REDACTED: "a secret as a key", "plain": 1 }));
    let everything = serde_json::to_string(&result).expect("json");
    assert!(!everything.contains(&secret()), "{everything}");
    client.cancel().await.expect("close");
}

/// A first-party tool's structured data (MCP `structuredContent` beside
/// the text) passes the same guardrail: list_directory names the folder
/// it listed there.
#[test]
fn a_first_party_tools_structured_data_is_redacted() {
    let env = Env::new(&format!(
        "[[tools]]\npath = \"{}\"\n",
        module_file("toolhost_filesystem").display()
    ));
    std::fs::create_dir(env.path().join(secret())).expect("a folder named like a secret");
    let called = env.call("list_directory", json!({"path": secret()}));
    called.assert_success();
    assert!(
        called.result["structured"].is_object(),
        "list_directory returns structured data: {}",
        called.result
    );
    assert_eq!(
        called.result["structured"]["entries"], 0,
        "the folder is empty: {}",
        called.result
    );
    assert_nowhere(&called);
}
