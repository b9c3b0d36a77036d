//! Alias profiles over MCP (`toolhost serve` on stdio, driven by rmcp's
//! client): `[host] list_aliases` lists each alias with its own schema,
//! and a trained call by an alias's name runs like the canonical one.

mod common;

use common::serve::args;
use common::Env;
use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::RunningService;
use rmcp::RoleClient;
use serde_json::{json, Value};

fn plan(list_aliases: bool) -> String {
    format!(
        "[host]\nlist_aliases = {list_aliases}\n\n[[tools]]\nmodule = \"filesystem\"\n\n\
         [[tools]]\nmodule = \"bash\"\n[tools.config]\nsandbox = \"off\"\n"
    )
}

async fn connect(env: &Env) -> RunningService<RoleClient, ()> {
    common::module_file("toolhost_filesystem");
    common::module_file("toolhost_bash");
    common::serve::client(env.command(), ()).await.0
}

fn properties(tool: &Tool) -> Vec<String> {
    tool.input_schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

fn find<'a>(tools: &'a [Tool], name: &str) -> &'a Tool {
    tools
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("{name} is not listed"))
}

fn texts(result: &CallToolResult) -> Vec<String> {
    let wire = serde_json::to_value(result).expect("serializes");
    wire["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn list_aliases_lists_each_alias_with_its_own_schema() {
    let env = Env::new(&plan(true));
    let client = connect(&env).await;
    let tools = client.list_all_tools().await.expect("tools/list");

    let canonical = properties(find(&tools, "grep"));
    assert!(
        canonical.contains(&"case_insensitive".to_string()),
        "{canonical:?}"
    );
    assert!(
        !canonical.contains(&"-i".to_string()),
        "the canonical schema is unchanged"
    );

    let grep = find(&tools, "Grep");
    let theirs = properties(grep);
    for flag in [
        "-i",
        "-A",
        "-B",
        "-C",
        "-n",
        "multiline",
        "type",
        "head_limit",
        "offset",
    ] {
        assert!(
            theirs.contains(&flag.to_string()),
            "Grep lacks {flag}: {theirs:?}"
        );
    }
    let description = grep.description.as_deref().unwrap_or_default();
    assert!(description.contains("runs toolhost's `grep`"), "{description}");
    let hints = grep.annotations.clone().expect("hints");
    assert_eq!(hints.read_only_hint, Some(true), "hints are the canonical tool's");

    assert!(properties(find(&tools, "BashOutput")).contains(&"bash_id".to_string()));
    let bash = find(&tools, "Bash");
    let timeout = bash.input_schema["properties"]["timeout"]["description"]
        .as_str()
        .unwrap_or_default();
    assert!(timeout.contains("milliseconds"), "{timeout}");
    // A plain alias (no profile) is listed with its tool's schema.
    assert_eq!(
        find(&tools, "run_terminal_command").input_schema,
        find(&tools, "bash").input_schema
    );
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn aliases_are_not_listed_by_default_but_still_answer() {
    let env = Env::new(&plan(false));
    std::fs::write(env.path().join("a.txt"), "Hello\nhello\nbye\n").expect("fixture");
    let client = connect(&env).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(
        !names
            .iter()
            .any(|n| ["Grep", "Read", "Bash", "run_terminal_command"].contains(n)),
        "{names:?}"
    );

    let trained = client
        .call_tool(CallToolRequestParams::new("Grep").with_arguments(args(
            json!({"pattern": "HELLO", "-i": true, "output_mode": "content", "path": "a.txt"}),
        )))
        .await
        .expect("tools/call Grep");
    let canonical = client
        .call_tool(CallToolRequestParams::new("grep").with_arguments(args(
            json!({"pattern": "HELLO", "case_insensitive": true, "output_mode": "content", "path": "a.txt"}),
        )))
        .await
        .expect("tools/call grep");
    assert_eq!(trained.is_error, Some(false), "{trained:?}");
    assert_eq!(texts(&trained), texts(&canonical));
    assert!(texts(&trained)[0].contains("a.txt:2:hello"), "{trained:?}");

    let refused = client
        .call_tool(
            CallToolRequestParams::new("Grep")
                .with_arguments(args(json!({"pattern": "x", "--ignore-case": true}))),
        )
        .await
        .expect("a validation error is a result");
    assert_eq!(refused.is_error, Some(true));
    let message = texts(&refused).join("\n");
    assert!(
        message.contains("'--ignore-case'") && message.contains("-i"),
        "{message}"
    );
    client.cancel().await.expect("close");
}
