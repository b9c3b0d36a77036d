//! Pipeline benchmarks: a batch of 100 independent 10 ms sleeps at
//! concurrency 64 (scheduling and parallel execution, end to end).

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolhost::cancel::CancelToken;
use toolhost::host::Host;
use toolhost::pipeline::{Call, Pipeline};
use toolhost::plan::Plan;

use crate::report::Bench;

pub fn run(b: &mut Bench) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("batch.toml");
    std::fs::write(
        &file,
        format!(
            "[host]\nbatch_concurrency = 64\nmodule_path = [{:?}]\n[[tools]]\nmodule = \"fixture\"\n",
            b.target_dir.display().to_string()
        ),
    )?;
    let host = Arc::new(Host::open(Plan::load(&file)?)?);
    let pipeline = Arc::new(Pipeline::new(host.clone(), CancelToken::new()));
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let stats = b.time(2, b.n(20), || {
        let calls = (0..100)
            .map(|_| Call {
                name: "sleep".into(),
                input: json!({"ms": 10}),
                ..Call::default()
            })
            .collect();
        let results = runtime.block_on(pipeline.batch(calls, |_, _| {}));
        assert!(results.iter().all(|r| r.success));
    });
    b.row(
        "pipeline",
        "batch: 100 independent 10 ms sleeps, concurrency 64",
        stats,
        Some(Duration::from_millis(200)),
    );
    host.shutdown();
    Ok(())
}
