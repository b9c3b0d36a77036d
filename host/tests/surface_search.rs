//! Tool search over hundreds of real tool definitions (see
//! `toolhost_testkit::catalog`): under `[host] tool_discovery = "search"`,
//! `tools/list` shows `tool_search` and the `always_on` tools only, any tool
//! is callable by name, and `tool_search` finds the labelled tool of at
//! least 90% of the labelled queries within its top three; grants still
//! decide what a principal finds and calls.

mod common;

use common::serve::{call, client, text};
use common::Env;
use serde_json::json;
use toolhost_testkit::catalog;

fn names(result: &serde_json::Value) -> Vec<String> {
    result["output"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("tool_search answered no tools: {result}"))
        .iter()
        .map(|t| t["name"].as_str().expect("a name").to_string())
        .collect()
}

#[test]
fn the_labelled_queries_find_their_tool_in_the_top_three() {
    let scratch = tempfile::tempdir().expect("scratch");
    let env = Env::new(&catalog::plan("tool_discovery = \"search\"", scratch.path()));
    let queries = catalog::queries();
    assert!(queries.len() >= 100, "{} labelled queries", queries.len());
    let lines: Vec<_> = queries
        .iter()
        .map(|(q, _)| json!({"name": "tool_search", "input": {"query": q, "limit": 3}}))
        .collect();
    let (results, code) = env.batch(&lines, &[]);
    assert_eq!(code, 0, "{results:?}");
    let mounted = env.run(&["list", "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&mounted.stdout).expect("list --json");
    let total = listed.as_array().map_or(0, Vec::len);
    assert!(
        total >= 300 && catalog::captured_tools() >= 300,
        "{total} tools mounted"
    );
    let mut misses = Vec::new();
    for ((query, expect), result) in queries.iter().zip(&results) {
        let found = names(result);
        if !found.iter().any(|n| expect.contains(n)) {
            misses.push(format!("{query:?}: wanted one of {expect:?}, got {found:?}"));
        }
    }
    let recall = 1.0 - misses.len() as f64 / queries.len() as f64;
    eprintln!(
        "recall@3 {:.1}% over {} queries and {total} tools; misses:\n{}",
        recall * 100.0,
        queries.len(),
        misses.join("\n")
    );
    assert!(
        recall >= 0.9,
        "recall@3 {:.1}% over {} queries; misses:\n{}",
        recall * 100.0,
        queries.len(),
        misses.join("\n")
    );
}

#[test]
fn search_mode_lists_little_and_any_tool_stays_callable() {
    let scratch = tempfile::tempdir().expect("scratch");
    let env = Env::new(&catalog::plan(
        "tool_discovery = \"search\"\nalways_on = [\"read_file\", \"grep\"]",
        scratch.path(),
    ));
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let (client, _) = client(env.command(), ()).await;
        let listed = client.list_all_tools().await.expect("tools/list");
        let mut names: Vec<String> = listed.iter().map(|t| t.name.to_string()).collect();
        names.sort();
        assert_eq!(names, ["grep", "read_file", "tool_search"]);
        let bytes = serde_json::to_string(&listed).expect("serializes").len();
        assert!(
            bytes / 4 <= 2000,
            "the listed definitions cost {} tokens",
            bytes / 4
        );

        // A tool found by search, called by name though never listed: the
        // real memory server answers.
        let found = call(
            &client,
            "tool_search",
            json!({"query": "read the whole knowledge graph"}),
        )
        .await;
        let found = found.structured_content.expect("structured result");
        assert_eq!(found["tools"][0]["name"], json!("memory__read_graph"), "{found}");
        assert!(
            found["tools"][0]["inputSchema"].is_object(),
            "full definitions: {found}"
        );
        let graph = call(&client, "memory__read_graph", json!({})).await;
        assert!(text(&graph).contains("entities"), "{graph:?}");
        client.cancel().await.expect("close");
    });
}

#[test]
fn grants_decide_what_a_principal_finds_and_calls() {
    let env = Env::new(
        "[host]\ntool_discovery = \"search\"\nprincipal = \"reader\"\n\n\
         [[tools]]\nmodule = \"filesystem\"\n\n[[tools]]\nmodule = \"bash\"\n\n\
         [[grants]]\nprincipal = \"reader\"\ntools = [\"read_file\", \"grep\", \"glob\"]\n",
    );
    let (results, _) = env.batch(
        &[
            json!({"name": "tool_search", "input": {"query": "run a shell command bash", "limit": 10}}),
            json!({"name": "tool_search", "input": {"query": "search file contents regular expression"}}),
            json!({"name": "bash", "input": {"command": "true"}}),
        ],
        &[],
    );
    let shell = names(&results[0]);
    assert!(
        !shell.iter().any(|n| n.starts_with("bash")),
        "a tool outside the grants is not found: {shell:?}"
    );
    assert_eq!(names(&results[1])[0], "grep");
    assert_eq!(
        results[2]["error"]["code"],
        json!("grant_missing"),
        "{}",
        results[2]
    );
}
