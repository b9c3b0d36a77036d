//! Isolation and MCP-source benchmarks (issue #13):
//! - an isolated module's echo against the same echo in-process, through
//!   the whole pipeline; the row is the median of paired differences
//!   (target ≤ 60 µs added);
//! - a read through the reference filesystem server mounted as
//!   `[tools.mcp]` (whole pipeline) against the same server driven
//!   directly by rmcp's client, alternated call by call; the row is the
//!   median of paired differences (target ≤ 0.3 ms added).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::ServiceExt;
use serde_json::json;
use toolhost::cancel::CancelToken;
use toolhost::host::Host;
use toolhost::pipeline::{Call, Pipeline};
use toolhost::plan::Plan;

use crate::report::{Bench, Stats};

fn pipeline_for(dir: &Path, name: &str, plan: &str) -> anyhow::Result<(Arc<Host>, Arc<Pipeline>)> {
    let file = dir.join(name);
    std::fs::write(&file, plan)?;
    let host = Arc::new(Host::open(Plan::load(&file)?)?);
    let pipeline = Arc::new(Pipeline::new(host.clone(), CancelToken::new()));
    Ok((host, pipeline))
}

fn call(name: &str, input: serde_json::Value) -> Call {
    Call {
        name: name.into(),
        input,
        ..Call::default()
    }
}

pub fn run(b: &mut Bench) -> anyhow::Result<()> {
    isolated_echo(b)?;
    mounted_read(b)
}

fn isolated_echo(b: &mut Bench) -> anyhow::Result<()> {
    // The bench binary has no worker subcommand: workers are the release
    // toolhost binary beside it.
    toolhost::isolate::set_worker_program(b.target_dir.join("toolhost"));
    let library = b.target_dir.join("libtoolhost_fixture_crashy.so");
    anyhow::ensure!(
        library.is_file(),
        "{} is missing (cargo build --release --workspace)",
        library.display()
    );
    let dir = tempfile::tempdir()?;
    let entry = |isolation: &str| {
        format!(
            "[[tools]]\npath = {:?}\nisolation = \"{isolation}\"\n",
            library.display().to_string()
        )
    };
    let (in_host, in_process) = pipeline_for(dir.path(), "in.toml", &entry("in-process"))?;
    let (iso_host, isolated) = pipeline_for(dir.path(), "iso.toml", &entry("process"))?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let input = json!({"message": "hello"});
    let once = |p: &Arc<Pipeline>| {
        let started = Instant::now();
        let result = runtime.block_on(p.call(call("echo", input.clone())));
        assert!(result.success, "{result:?}");
        started.elapsed()
    };
    for _ in 0..50 {
        once(&in_process);
        once(&isolated);
    }
    let n = b.n(2000);
    let (mut inside, mut outside, mut added) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..n {
        let a = once(&in_process);
        let c = once(&isolated);
        inside.push(a);
        outside.push(c);
        added.push(c.saturating_sub(a));
    }
    b.row(
        "isolation",
        "echo in-process, whole pipeline",
        Stats::of(inside),
        None,
    );
    b.row(
        "isolation",
        "echo isolated (worker process), whole pipeline",
        Stats::of(outside),
        None,
    );
    b.row(
        "isolation",
        "isolated echo: added cost over in-process (paired)",
        Stats::of(added),
        Some(Duration::from_micros(60)),
    );
    iso_host.shutdown();
    in_host.shutdown();
    Ok(())
}

/// The reference filesystem server from npm (`tests/node`), which the
/// mounted-server rows here and the reference rows of the MCP area drive.
pub(crate) fn filesystem_server() -> anyhow::Result<PathBuf> {
    let bin =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/node/node_modules/.bin/mcp-server-filesystem");
    anyhow::ensure!(
        bin.exists(),
        "{} is missing: npm ci --prefix tests/node --no-audit --no-fund",
        bin.display()
    );
    Ok(bin)
}

fn mounted_read(b: &mut Bench) -> anyhow::Result<()> {
    let server = filesystem_server()?;
    let dir = tempfile::tempdir()?;
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root)?;
    let file = root.join("a.txt");
    std::fs::write(&file, "x".repeat(4096))?;
    let path = file.display().to_string();
    let n = b.n(500);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;

    // Directly: rmcp's client over the server's stdio.
    let client = runtime.block_on(async {
        let mut child = tokio::process::Command::new(&server)
            .arg(&root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            anyhow::bail!("no pipes");
        };
        let client = ().serve((stdout, stdin)).await?;
        Ok((client, child))
    })?;
    let args = json!({"path": path});
    let direct = || {
        let started = Instant::now();
        runtime.block_on(async {
            let params = CallToolRequestParams::new("read_text_file")
                .with_arguments(args.as_object().cloned().unwrap_or_default());
            let result = client.0.call_tool(params).await.expect("the direct call answers");
            assert!(result.is_error != Some(true), "{result:?}");
        });
        started.elapsed()
    };

    // Mounted: the same read through the whole pipeline.
    let (host, pipeline) = pipeline_for(
        dir.path(),
        "mcp.toml",
        &format!(
            "[[tools]]\nprefix = \"fs__\"\n[tools.mcp]\ncommand = [{:?}, {:?}]\n",
            server.display().to_string(),
            root.display().to_string()
        ),
    )?;
    let input = json!({"path": file.display().to_string()});
    let mounted = || {
        let started = Instant::now();
        let result = runtime.block_on(pipeline.call(call("fs__read_text_file", input.clone())));
        assert!(result.success, "{result:?}");
        started.elapsed()
    };
    // Alternated call by call, like the isolated echo above, so that a
    // busy machine weighs on both alike; the bound is the median of the
    // paired differences.
    for _ in 0..30 {
        direct();
        mounted();
    }
    let (mut directly, mut through, mut added) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..n {
        let d = direct();
        let m = mounted();
        directly.push(d);
        through.push(m);
        added.push(m.saturating_sub(d));
    }
    b.row(
        "isolation",
        "filesystem server read, driven directly (rmcp)",
        Stats::of(directly),
        None,
    );
    b.row(
        "isolation",
        "filesystem server read, mounted via [tools.mcp], whole pipeline",
        Stats::of(through),
        None,
    );
    b.row(
        "isolation",
        "mounted server read: added cost over direct (paired)",
        Stats::of(added),
        Some(Duration::from_micros(300)),
    );
    host.shutdown();
    let (client, mut child) = client;
    runtime.block_on(async {
        let _ = client.cancel().await;
        let _ = child.kill().await;
    });
    Ok(())
}
