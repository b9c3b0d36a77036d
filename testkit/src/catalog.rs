//! A host with hundreds of real tool definitions (for the tool-search tests
//! and the bench): the first-party modules,
//! the reference filesystem, memory and everything servers from npm (run
//! for real), and the captured tool lists of seventeen more npm servers
//! (`tests/tool_search/mcp_tools.json`, served by
//! `tests/node/fixture_server.mjs`), each under its own prefix; and the
//! labelled queries over them (`tests/tool_search/queries.json`).

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The servers run from their npm packages rather than from the fixture.
const REAL: &[(&str, &str)] = &[
    ("@modelcontextprotocol/server-filesystem", "dist/index.js"),
    ("@modelcontextprotocol/server-memory", "dist/index.js"),
    ("@modelcontextprotocol/server-everything", "dist/index.js"),
];

/// The labelled queries: (query, acceptable tools).
pub fn queries() -> Vec<(String, Vec<String>)> {
    let labelled = labelled();
    labelled["queries"]
        .as_array()
        .expect("queries")
        .iter()
        .map(|q| {
            let expect = q["expect"].as_array().expect("expect").iter();
            (
                q["query"].as_str().expect("query").to_string(),
                expect.map(|e| e.as_str().expect("name").to_string()).collect(),
            )
        })
        .collect()
}

fn labelled() -> Value {
    let text = std::fs::read_to_string(root().join("tests/tool_search/queries.json")).expect("queries.json");
    serde_json::from_str(&text).expect("queries.json parses")
}

/// How many tool definitions the catalog mounts besides the first-party ones.
pub fn captured_tools() -> usize {
    let text =
        std::fs::read_to_string(root().join("tests/tool_search/mcp_tools.json")).expect("mcp_tools.json");
    let fixture: Value = serde_json::from_str(&text).expect("mcp_tools.json parses");
    fixture["servers"]
        .as_array()
        .expect("servers")
        .iter()
        .map(|s| s["tools"].as_array().map_or(0, Vec::len))
        .sum()
}

/// The plan text mounting the whole catalog; `host` is added to `[host]`,
/// `scratch` is the folder the filesystem and memory servers may use.
pub fn plan(host: &str, scratch: &Path) -> String {
    let node = root().join("tests/node");
    assert!(
        node.join("node_modules/@modelcontextprotocol/server-memory")
            .is_dir(),
        "run `npm ci --prefix tests/node --no-audit --no-fund` first (the README's test command does)"
    );
    let mut plan = format!(
        "[host]\n{host}\n\n[[tools]]\nmodule = \"filesystem\"\n[tools.config]\nallowed_read_paths = [\".\"]\n\
         allowed_write_paths = [\".\"]\n\n[[tools]]\nmodule = \"bash\"\n\n[[tools]]\nmodule = \"web\"\n"
    );
    let labelled = labelled();
    let servers = labelled["servers"].as_object().expect("servers");
    for (package, prefix) in servers {
        let prefix = prefix.as_str().expect("prefix");
        let command = match REAL.iter().find(|(p, _)| p == package) {
            Some((_, bin)) => {
                let mut args = vec![node
                    .join("node_modules")
                    .join(package)
                    .join(bin)
                    .display()
                    .to_string()];
                if package.ends_with("server-filesystem") {
                    args.push(scratch.display().to_string());
                }
                args
            }
            None => vec![
                node.join("fixture_server.mjs").display().to_string(),
                package.clone(),
            ],
        };
        let args: Vec<String> = command.iter().map(|a| format!("{a:?}")).collect();
        plan.push_str(&format!(
            "\n[[tools]]\nprefix = \"{prefix}\"\n[tools.mcp]\ncommand = [\"node\", {}]\n",
            args.join(", ")
        ));
        if package.ends_with("server-memory") {
            plan.push_str(&format!(
                "env = {{ MEMORY_FILE_PATH = {:?} }}\n",
                scratch.join("memory.jsonl").display().to_string()
            ));
        }
    }
    plan
}
