//! Shared-state benchmarks (issue #17): what an idempotency key adds to a
//! side-effecting call, on the embedded store (SQLite) and on PostgreSQL.
//! The PostgreSQL rows use `TOOLHOST_BENCH_STATE_URL` when set, else a
//! throwaway cluster started from the Debian package (as the fleet tests
//! do); with neither, they are skipped with a message (a bench may skip,
//! a test may not).

use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use toolhost::cancel::CancelToken;
use toolhost::host::Host;
use toolhost::pipeline::{Call, Pipeline};
use toolhost::plan::Plan;
use toolhost_testkit::pg::Cluster;

use crate::report::Bench;

pub fn run(b: &mut Bench) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    rows(b, dir.path(), "sqlite", "")?;
    match postgres() {
        Ok((url, server)) => {
            let outcome = rows(b, dir.path(), "postgres", &format!("state_url = {url:?}\n"));
            drop(server);
            outcome?;
        }
        Err(why) => eprintln!("bench state: skipping the PostgreSQL rows: {why}"),
    }
    Ok(())
}

/// Unkeyed, keyed (a new key per call: claim + run + record) and replayed
/// (one key again: claim finds the result) `write_key` calls.
fn rows(b: &mut Bench, dir: &Path, label: &'static str, host_extra: &str) -> anyhow::Result<()> {
    let file = dir.join(format!("{label}.toml"));
    std::fs::write(
        &file,
        format!(
            "[host]\nmodule_path = [{:?}]\nstate_dir = {:?}\n{host_extra}[[tools]]\nmodule = \"fixture\"\n",
            b.target_dir.display().to_string(),
            dir.join(format!("{label}-state")).display().to_string()
        ),
    )?;
    let host = Arc::new(Host::open(Plan::load(&file)?)?);
    let pipeline = Pipeline::new(host.clone(), CancelToken::new());
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let call = |key: Option<String>| {
        let result = runtime.block_on(pipeline.call(Call {
            name: "write_key".into(),
            input: json!({"key": "bench"}),
            idempotency_key: key,
            ..Call::default()
        }));
        assert!(result.success, "{result:?}");
    };
    let unkeyed = b.time(20, b.n(500), || call(None));
    let mut n = 0u64;
    let keyed = b.time(20, b.n(500), || {
        n += 1;
        call(Some(format!("{label}-{}-{n}", std::process::id())))
    });
    let replay_key = format!("{label}-{}-replay", std::process::id());
    let replayed = b.time(20, b.n(500), || call(Some(replay_key.clone())));
    b.row(
        "state",
        format!("write_key unkeyed ({label} configured)"),
        unkeyed,
        None,
    );
    b.row(
        "state",
        format!("write_key keyed, new key each call, {label}"),
        keyed,
        None,
    );
    b.row(
        "state",
        format!("write_key keyed, replayed, {label}"),
        replayed,
        None,
    );
    eprintln!(
        "bench state: {label}: a new key adds {:?}, a replay costs {:?} (medians; unkeyed {:?})",
        keyed.median.saturating_sub(unkeyed.median),
        replayed.median,
        unkeyed.median
    );
    host.shutdown();
    Ok(())
}

/// A PostgreSQL to measure against, and the cluster to stop after (a
/// throwaway one, fsync on, unless `TOOLHOST_BENCH_STATE_URL` names one).
fn postgres() -> Result<(String, Option<Cluster>), String> {
    if let Ok(url) = std::env::var("TOOLHOST_BENCH_STATE_URL") {
        return Ok((url, None));
    }
    let cluster = Cluster::try_start(true)?;
    Ok((cluster.url(), Some(cluster)))
}
