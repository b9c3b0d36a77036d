//! Telemetry: what metrics and a span per call add to a call. The same
//! echo call runs through the whole pipeline with telemetry off, then with
//! Prometheus metrics recorded, then with a span per call exported as well
//! (to a loopback port nothing listens on: every export fails, which is
//! the collector a call must never wait for).
//!
//! Turning either on is process-wide and cannot be undone, so the three
//! run one after another (not in alternating rounds), and this area runs
//! last.

use std::time::{Duration, Instant};

use toolhost::pipeline::Pipeline;

use crate::echo_pipeline;
use crate::report::{fmt, Bench, Stats};

/// The most metrics and a span may add to a call.
const BOUND: Duration = Duration::from_micros(20);

pub fn run(b: &mut Bench) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let closed = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
    let modules = b.target_dir.clone();
    let open = |name: &str, extra: &str| echo_pipeline::open(dir.path(), &modules, name, extra);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let call = |pipeline: &Pipeline| echo_pipeline::echo(&runtime, pipeline);
    let n = b.n(5_000);
    let measure = |pipeline: &Pipeline| {
        for _ in 0..200 {
            call(pipeline);
        }
        Stats::of(
            (0..n)
                .map(|_| {
                    let t = Instant::now();
                    call(pipeline);
                    t.elapsed()
                })
                .collect(),
        )
    };
    let (host, off_pipeline) = open("off", "")?;
    let off = measure(&off_pipeline);
    b.row("telemetry", "pipeline call: echo, telemetry off", off, None);
    toolhost_telemetry::metrics::enable();
    let metrics = measure(&off_pipeline);
    b.row(
        "telemetry",
        "pipeline call: echo, metrics recorded",
        metrics,
        None,
    );
    host.shutdown();
    let (host, traced_pipeline) = open(
        "traced",
        &format!("[host.telemetry]\notlp_endpoint = \"http://{closed}\"\nexport_interval_ms = 100\n"),
    )?;
    let traced = measure(&traced_pipeline);
    b.row(
        "telemetry",
        "pipeline call: echo, metrics + a span per call (collector unreachable)",
        traced,
        None,
    );
    let added = traced.median.saturating_sub(off.median);
    b.value_row(
        "telemetry",
        "added per call by metrics and a span (difference of the medians)",
        fmt(added),
        &format!("≤ {}", fmt(BOUND)),
        added <= BOUND,
    );
    host.shutdown();
    Ok(())
}
