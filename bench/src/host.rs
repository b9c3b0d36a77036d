//! Host benchmarks: load + mount per module and for the default plan,
//! per-call pipeline overhead on the echo fixture against a direct call, and
//! the wall time of `toolhost list` as a whole process.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolhost::cancel::CancelToken;
use toolhost::context::CallContext;
use toolhost::host::Host;
use toolhost::pipeline::handoff::Handoff;
use toolhost::pipeline::{Call, Pipeline};
use toolhost::plan::Plan;

use crate::report::{Bench, Stats};

pub fn run(b: &mut Bench) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let modules = b.target_dir.display().to_string();

    // Load + mount, per module, each in a fresh plan.
    let default_plan = Path::new("mount-plans/default.toml");
    for module in ["fixture", "filesystem", "bash", "web"] {
        if !b.target_dir.join(format!("libtoolhost_{module}.so")).exists() {
            continue;
        }
        let file = dir.path().join(format!("{module}.toml"));
        std::fs::write(
            &file,
            format!("[host]\nmodule_path = [{modules:?}]\n[[tools]]\nmodule = \"{module}\"\n"),
        )?;
        let plan = Plan::load(&file)?;
        let stats = b.time(3, b.n(50), || {
            let host = Host::open(plan.clone()).expect("plan loads");
            host.shutdown();
        });
        b.row("host", format!("load + mount + cleanup: {module}"), stats, None);
    }
    if default_plan.exists() {
        let plan = Plan::load(default_plan)?;
        let stats = b.time(3, b.n(50), || {
            let host = Host::open(plan.clone()).expect("default plan loads");
            host.shutdown();
        });
        b.row(
            "host",
            "load + mount + cleanup: default plan",
            stats,
            Some(Duration::from_millis(5)),
        );
    }

    // Per-call overhead on echo: the pipeline against a direct FFI call.
    let file = dir.path().join("fixture.toml");
    let plan = Plan::load(&file)?;
    let host = Arc::new(Host::open(plan)?);
    let tool = host
        .tool("echo")
        .ok_or_else(|| anyhow::anyhow!("echo not mounted"))?;
    let request =
        json!({"tool_call_id": "b", "name": "echo", "input": {"message": "hello"}, "working_dir": "."})
            .to_string();
    let ctx = CallContext {
        cancel: CancelToken::new(),
        deadline: None,
        clock: None,
        progress: None,
        ask: None,
        module: "fixture".into(),
        call_id: "b".into(),
        state: None,
    };
    let direct = b.time(1000, b.n(20_000), || {
        std::hint::black_box(tool.execute_blocking(&request, &ctx));
    });
    b.row("host", "echo: direct in-process FFI call", direct, None);

    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    // The floor under any design that runs tools on a blocking thread: one
    // hand-off there and back, with nothing else; tokio's own for
    // comparison, then the pipeline's (which spins during bursts).
    let spawn_blocking = b.time(1000, b.n(20_000), || {
        runtime.block_on(async { tokio::task::spawn_blocking(|| ()).await.ok() });
    });
    b.row(
        "host",
        "floor: tokio spawn_blocking round trip",
        spawn_blocking,
        None,
    );
    let hands = Arc::new(Handoff::default());
    let handoff = b.time(1000, b.n(20_000), || {
        runtime.block_on(async { hands.run(|| ()).await.ok() });
    });
    b.row("host", "floor: the pipeline's hand-off round trip", handoff, None);
    let pipeline = Pipeline::new(host.clone(), CancelToken::new());
    let through = b.time(1000, b.n(20_000), || {
        let result = runtime.block_on(pipeline.call(Call {
            name: "echo".into(),
            input: json!({"message": "hello"}),
            ..Call::default()
        }));
        assert!(result.success);
    });
    b.row(
        "host",
        "echo: through the pipeline (incl. validation)",
        through,
        None,
    );
    // The same call through the same engine, run on the caller's own
    // thread (what the MCP stdio server does): no hand-off at all.
    let inline = Arc::new(Pipeline::new(host.clone(), CancelToken::new()));
    let handle = runtime.handle().clone();
    let here = b.time(1000, b.n(20_000), || {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let call = Call {
            name: "echo".into(),
            input: json!({"message": "hello"}),
            ..Call::default()
        };
        inline.call_here(
            &handle,
            call,
            Box::new(move |result| {
                let _ = tx.send(result.success);
            }),
        );
        assert_eq!(rx.recv().ok(), Some(true));
    });
    b.row(
        "host",
        "echo: through the pipeline on the caller's thread (call_here)",
        here,
        None,
    );
    let overhead = Stats {
        median: through.median.saturating_sub(direct.median),
        p10: through.p10.saturating_sub(direct.p10),
        p90: through.p90.saturating_sub(direct.p90),
        samples: through.samples,
    };
    b.row(
        "host",
        "echo: pipeline overhead (pipeline − direct)",
        overhead,
        Some(Duration::from_micros(15)),
    );
    // What the stages themselves cost, beside the thread hand-off that the
    // design's blocking-thread execution makes unavoidable.
    let own = Stats {
        median: overhead.median.saturating_sub(handoff.median),
        p10: overhead.p10.saturating_sub(handoff.p10),
        p90: overhead.p90.saturating_sub(handoff.p90),
        samples: through.samples,
    };
    b.row(
        "host",
        "echo: stages' own cost (overhead − hand-off floor)",
        own,
        None,
    );
    host.shutdown();

    // `toolhost list` as a whole process, on the default plan.
    let bin = b.target_dir.join("toolhost");
    if bin.exists() && default_plan.exists() {
        let stats = b.time(3, b.n(30), || {
            let status = Command::new(&bin)
                .args(["--plan", "mount-plans/default.toml", "list"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("toolhost runs");
            assert!(status.success());
        });
        b.row(
            "host",
            "process: toolhost list (default plan)",
            stats,
            Some(Duration::from_millis(20)),
        );
    }
    Ok(())
}
