//! Soak (issue #20): 10,000 mixed MCP calls in one `toolhost serve` over
//! stdio (echo, read_file, list, tool errors, unknown tools, validation
//! errors), with the server's resident memory after 1k, 5k and 10k calls.
//! The target: flat within 10 % from 1k to 10k (after warm-up).

use std::time::Instant;

use serde_json::{json, Value};

use crate::mcp::{Server, Setup};
use crate::report::{Bench, Row, Stats};

const CALLS: usize = 10_000;
const SAMPLES: [usize; 3] = [1_000, 5_000, 10_000];

/// The `i`th call of the mix: the method, its params, and whether the
/// answer must be a tool error (`isError`) or a JSON-RPC error.
fn call(i: usize) -> (&'static str, Value, Expect) {
    match i % 8 {
        0 | 1 => (
            "tools/call",
            json!({"name": "echo", "arguments": {"message": format!("soak {i}")}}),
            Expect::Success,
        ),
        2 | 3 => (
            "tools/call",
            json!({"name": "read_file", "arguments": {"file_path": "small.txt"}}),
            Expect::Success,
        ),
        4 => ("tools/list", json!({}), Expect::Success),
        5 => (
            "tools/call",
            json!({"name": "read_file", "arguments": {"file_path": format!("missing-{i}.txt")}}),
            Expect::ToolError,
        ),
        6 => (
            "tools/call",
            json!({"name": format!("no_such_tool_{i}"), "arguments": {}}),
            Expect::AnyError,
        ),
        _ => (
            "tools/call",
            json!({"name": "echo", "arguments": {"message": 42}}),
            Expect::AnyError,
        ),
    }
}

#[derive(Clone, Copy)]
enum Expect {
    Success,
    ToolError,
    AnyError,
}

fn check(response: &Value, expect: Expect) -> bool {
    let tool_error = response["result"]["isError"] == json!(true);
    let rpc_error = response.get("error").is_some();
    match expect {
        Expect::Success => response.get("result").is_some() && !tool_error,
        Expect::ToolError => tool_error,
        Expect::AnyError => tool_error || rpc_error,
    }
}

/// Runs the soak row.
pub fn run(b: &mut Bench) -> anyhow::Result<()> {
    let Setup { bin, dir, modules } = Setup::new(b)?;
    let plan = dir.path().join("soak.toml");
    std::fs::write(
        &plan,
        format!(
            "[host]\nmodule_path = [{modules:?}]\n[[tools]]\nmodule = \"fixture\"\n\
             [[tools]]\nmodule = \"filesystem\"\n[tools.config]\nallowed_read_paths = [\".\"]\n"
        ),
    )?;
    let mut server = Server::start(&bin, &plan, dir.path())?;
    let started = Instant::now();
    let mut rss = Vec::new();
    for i in 0..CALLS {
        let (method, params, expect) = call(i);
        let response = server.request(method, params)?;
        anyhow::ensure!(
            check(&response, expect),
            "call {i} ({method}) answered {response}"
        );
        if SAMPLES.contains(&(i + 1)) {
            rss.push(server.rss_kib()?);
        }
    }
    let took = started.elapsed();
    server.stop();
    let mib = |kib: u64| kib as f64 / 1024.0;
    let growth = (rss[2] as f64 / rss[0].max(1) as f64 - 1.0) * 100.0;
    b.rows.push(Row {
        group: "mcp",
        name: format!(
            "soak, 10k mixed calls: RSS at 1k/5k/10k {:.1}/{:.1}/{:.1} MiB ({growth:+.1} %)",
            mib(rss[0]),
            mib(rss[1]),
            mib(rss[2])
        ),
        stats: Stats::of(vec![took]),
        target: Some("≤ +10 %".into()),
        met: Some(growth <= 10.0),
        value: None,
    });
    Ok(())
}
