//! `tools/list_changed` from a mounted MCP server reaches the registry: a
//! real server (the official TypeScript SDK, `tests/node/changing_tools.mjs`)
//! adds, renames and removes tools at runtime, and a client of the host
//! sees the new list, reaches new tools, gets `unknown_tool` with
//! suggestions for removed ones, and keeps the plan's aliases and
//! `[policy.tools.X]` settings across every refresh. The host's own client
//! hears `notifications/tools/list_changed` once the registry holds the new
//! list, and lists it then.

mod common;
mod mcp_peer;

use std::sync::Arc;
use std::time::Duration;

use common::serve::{call, client, text, toolhost_meta};
use common::Env;
use mcp_peer::node_peer;
use rmcp::model::{CallToolResult, Tool};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient};
use serde_json::json;

/// Wakes the test when the host says its tool list changed.
#[derive(Clone, Default)]
struct Changes(Arc<tokio::sync::Notify>);

impl ClientHandler for Changes {
    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.0.notify_one();
    }
}

/// Waits for the host's `notifications/tools/list_changed` (sent after the
/// registry took the mounted server's new list), then lists the tools and
/// checks `ready` on them.
async fn list_after_change(
    client: &RunningService<RoleClient, Changes>,
    changes: &Changes,
    what: &str,
    ready: impl Fn(&[Tool]) -> bool,
) -> Vec<Tool> {
    tokio::time::timeout(Duration::from_secs(20), changes.0.notified())
        .await
        .unwrap_or_else(|_| panic!("{what}: the host sent no tools/list_changed within 20s"));
    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(
        ready(&tools),
        "{what}: not in the list after the notification: {:?}",
        tools.iter().map(|t| t.name.to_string()).collect::<Vec<_>>()
    );
    tools
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
        let changes = Changes::default();
        let (client, _) = client(env.command(), changes.clone()).await;

        assert_eq!(text(&call(&client, "first", json!({})).await), "alpha");

        // A tool appears, with the plan's effect for it.
        call(&client, "ch__mutate", json!({"add": "beta"})).await;
        let tools = list_after_change(&client, &changes, "ch__beta added", |t| has(t, "ch__beta")).await;
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
        list_after_change(&client, &changes, "ch__alpha renamed", |t| {
            has(t, "ch__alphabet") && !has(t, "ch__alpha")
        })
        .await;
        assert_unknown(&call(&client, "ch__alpha", json!({})).await, "ch__alphabet");
        let alias = call(&client, "first", json!({})).await;
        assert_eq!(toolhost_meta(&alias)["code"], json!("unknown_tool"), "{alias:?}");
        assert_eq!(text(&call(&client, "ch__alphabet", json!({})).await), "alphabet");

        // A removal.
        call(&client, "ch__mutate", json!({"remove": "beta"})).await;
        list_after_change(&client, &changes, "ch__beta removed", |t| !has(t, "ch__beta")).await;
        assert_unknown(&call(&client, "ch__beta", json!({})).await, "ch__mutate");

        // The tool comes back under its old name: so does its alias.
        call(&client, "ch__mutate", json!({"rename": ["alphabet", "alpha"]})).await;
        list_after_change(&client, &changes, "ch__alpha back", |t| has(t, "ch__alpha")).await;
        assert_eq!(text(&call(&client, "first", json!({})).await), "alpha");

        client.cancel().await.expect("close");
    });
}
