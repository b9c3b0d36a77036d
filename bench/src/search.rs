//! Tool search (`[host] tool_discovery = "search"`) over the catalog of
//! 365 real tool definitions (first-party modules, three npm servers run,
//! seventeen captured; see `toolhost_testkit::catalog`): recall@3 of the
//! labelled queries (target ≥ 90%), the time of one search (target p50 ≤
//! 1 ms), and what `tools/list` then costs a model's context (target ≤
//! 2,000 tokens, counted as bytes / 4).

use std::sync::Arc;
use std::time::Duration;

use toolhost::cancel::CancelToken;
use toolhost::host::Host;
use toolhost::pipeline::Pipeline;
use toolhost::plan::Plan;
use toolhost::surface::Surface;
use toolhost_testkit::catalog;

use crate::report::Bench;

pub fn run(b: &mut Bench) -> anyhow::Result<()> {
    // Stdio MCP servers run under the toolhost binary's reaper.
    toolhost::isolate::set_worker_program(b.target_dir.join("toolhost"));
    let dir = tempfile::tempdir()?;
    let work = dir.path().canonicalize()?;
    let plan_file = work.join("plan.toml");
    let host_keys = format!(
        "tool_discovery = \"search\"\nalways_on = [\"read_file\", \"grep\"]\nworking_dir = {:?}\nmodule_path = [{:?}]",
        work.display().to_string(),
        b.target_dir.display().to_string()
    );
    std::fs::write(&plan_file, catalog::plan(&host_keys, &work))?;
    let host = Arc::new(Host::open(Plan::load(&plan_file)?)?);
    let tools = host.tools().len();
    let pipeline = Pipeline::new(host.clone(), CancelToken::new());
    let viewer = Surface::viewer(&host.plan, &host.plan.governance.host_principal, [None, None], "")
        .map_err(|r| anyhow::anyhow!("{:?}", r.error))?;
    let queries = catalog::queries();

    let mut hits = 0;
    for (query, expect) in &queries {
        let found = pipeline.surface().search(&host, &viewer, query, 3);
        if found.iter().any(|t| expect.iter().any(|e| e == t.name())) {
            hits += 1;
        }
    }
    let recall = hits as f64 / queries.len() as f64;
    b.value_row(
        "search",
        format!("recall@3, {} labelled queries over {tools} tools", queries.len()),
        format!("{:.1}%", recall * 100.0),
        "≥ 90%",
        recall >= 0.9,
    );

    let mut next = 0;
    let stats = b.time(50, b.n(5_000), || {
        let (query, _) = &queries[next % queries.len()];
        next += 1;
        let found = pipeline.surface().search(&host, &viewer, query, 3);
        assert!(!found.is_empty() || query.is_empty());
    });
    b.row(
        "search",
        format!("tool_search ranking, one query over {tools} tools"),
        stats,
        Some(Duration::from_millis(1)),
    );

    let listed = pipeline
        .list_tools(None, None)
        .map_err(|r| anyhow::anyhow!("{:?}", r.error))?;
    let bytes = serde_json::to_string(&listed)?.len();
    b.value_row(
        "search",
        format!("tools/list under search: {} tools listed", listed.len()),
        format!("{} tok", bytes / 4),
        "≤ 2000 tok",
        bytes / 4 <= 2000,
    );
    let mut all_host_keys = host_keys.replace("tool_discovery = \"search\"", "tool_discovery = \"all\"");
    all_host_keys.push('\n');
    let all_file = work.join("all.toml");
    std::fs::write(&all_file, catalog::plan(&all_host_keys, &work))?;
    let all_host = Arc::new(Host::open(Plan::load(&all_file)?)?);
    let everything = Pipeline::new(all_host.clone(), CancelToken::new())
        .list_tools(None, None)
        .map_err(|r| anyhow::anyhow!("{:?}", r.error))?;
    let all_bytes = serde_json::to_string(&everything)?.len();
    b.value_row(
        "search",
        format!("tools/list without search: {} tools listed", everything.len()),
        format!("{} tok", all_bytes / 4),
        "-",
        true,
    );
    all_host.shutdown();
    host.shutdown();
    Ok(())
}
