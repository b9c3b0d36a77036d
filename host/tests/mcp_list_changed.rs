//! `tools/list_changed` from a mounted MCP server reaches the registry: a
//! real server (the official TypeScript SDK, `tests/node/changing_tools.mjs`)
//! adds, renames and removes tools at runtime, and a client of the host
//! sees the new list, reaches new tools, gets `unknown_tool` with
//! suggestions for removed ones, and keeps the plan's aliases and
//! `[policy.tools.X]` settings across every refresh.

mod common;
mod mcp_peer;

use std::time::{Duration, Instant};

use common::Env;
use mcp_peer::{call, node_peer, serve, text, toolhost_meta};
use rmcp::model::{CallToolResult, Tool};
use rmcp::service::RunningService;
use rmcp::RoleClient;
use serde_json::json;

/// Lists the host's tools until `ready` holds for the list (the host
/// refreshes on its own thread after the server's notification).
async fn list_until(
    client: &RunningService<RoleClient, ()>,
    what: &str,
    ready: impl Fn(&[Tool]) -> bool,
) -> Vec<Tool> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let tools = client.list_all_tools().await.expect("tools/list");
        if ready(&tools) {
            return tools;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not seen within 20s; the host lists {:?}",
            tools.iter().map(|t| t.name.to_string()).collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

fn has(tools: &[Tool], name: &str) -> bool {
    tools.iter().any(|t| t.name == name)
}

fn assert_unknown(result: &CallToolResult, suggestion: &str) {
    let meta = toolhost_meta(result);
    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert_eq!(meta["code"], json!("unknown_tool"), "{meta}");
    let suggestions = meta["details"]["suggestions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        suggestions.contains(&json!(suggestion)),
        "expected {suggestion} among the suggestions: {meta}"
    );
}

#[test]
fn a_changed_tool_list_reaches_the_registry_with_aliases_and_policy_reapplied() {
    let env = Env::new(&format!(
        "[[tools]]\nprefix = \"ch__\"\n[tools.mcp]\ncommand = [\"node\", \"{}\"]\n\n\
         [policy.tools.ch__alpha]\naliases = [\"first\"]\n\n\
         [policy.tools.ch__beta]\neffect = \"read_only\"\n",
        node_peer("changing_tools.mjs")
    ));
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let (client, _) = serve(&env, ()).await;

        assert_eq!(text(&call(&client, "first", json!({})).await), "alpha");

        // A tool appears, with the plan's effect for it.
        call(&client, "ch__mutate", json!({"add": "beta"})).await;
        let tools = list_until(&client, "ch__beta added", |t| has(t, "ch__beta")).await;
        let beta = tools.iter().find(|t| t.name == "ch__beta").expect("ch__beta");
        assert_eq!(
            beta.annotations.as_ref().and_then(|a| a.read_only_hint),
            Some(true),
            "[policy.tools.ch__beta] effect = \"read_only\" is applied to the new tool: {beta:?}"
        );
        assert_eq!(text(&call(&client, "ch__beta", json!({})).await), "beta");
        // The refresh replaced every tool of the server: the plan's alias
        // for the unchanged one still reaches it.
        assert_eq!(text(&call(&client, "first", json!({})).await), "alpha");

        // A rename: the old name is unknown (with the new one suggested
        // beside the others), and so is its alias.
        call(&client, "ch__mutate", json!({"rename": ["alpha", "alphabet"]})).await;
        list_until(&client, "ch__alpha renamed", |t| {
            has(t, "ch__alphabet") && !has(t, "ch__alpha")
        })
        .await;
        assert_unknown(&call(&client, "ch__alpha", json!({})).await, "ch__alphabet");
        let alias = call(&client, "first", json!({})).await;
        assert_eq!(toolhost_meta(&alias)["code"], json!("unknown_tool"), "{alias:?}");
        assert_eq!(text(&call(&client, "ch__alphabet", json!({})).await), "alphabet");

        // A removal.
        call(&client, "ch__mutate", json!({"remove": "beta"})).await;
        list_until(&client, "ch__beta removed", |t| !has(t, "ch__beta")).await;
        assert_unknown(&call(&client, "ch__beta", json!({})).await, "ch__mutate");

        // The tool comes back under its old name: so does its alias.
        call(&client, "ch__mutate", json!({"rename": ["alphabet", "alpha"]})).await;
        list_until(&client, "ch__alpha back", |t| has(t, "ch__alpha")).await;
        assert_eq!(text(&call(&client, "first", json!({})).await), "alpha");

        client.cancel().await.expect("close");
    });
}
