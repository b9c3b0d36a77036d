//! Rate limits: what the `[[limits]]` stage adds to a call. The same echo
//! call runs through the whole pipeline of two hosts loaded side by side,
//! one without limits and one with a limit that applies to the call (and
//! never refuses it), in alternating rounds of the same run so drift
//! affects both; the difference of the medians must stay within 20 µs.

use std::time::{Duration, Instant};

use toolhost::pipeline::Pipeline;

use crate::echo_pipeline;
use crate::report::{fmt, Bench, Stats};

/// The most the stage may add to a call.
const BOUND: Duration = Duration::from_micros(20);

pub fn run(b: &mut Bench) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let limit = "[[limits]]\ntools = [\"echo\"]\nper_second = 1e9\nburst = 1000000000\n";
    let pipelines = [("plain", ""), ("limited", limit)]
        .map(|(name, extra)| echo_pipeline::open(dir.path(), &b.target_dir, name, extra));
    let pipelines = pipelines.into_iter().collect::<anyhow::Result<Vec<_>>>()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let call = |pipeline: &Pipeline| echo_pipeline::echo(&runtime, pipeline);
    let (rounds, per_round) = (10, b.n(2_000) / 10 + 1);
    let mut times = [Vec::new(), Vec::new()];
    for _ in 0..200 {
        call(&pipelines[0].1);
        call(&pipelines[1].1);
    }
    for _ in 0..rounds {
        for (i, (_, pipeline)) in pipelines.iter().enumerate() {
            for _ in 0..per_round {
                let t = Instant::now();
                call(pipeline);
                times[i].push(t.elapsed());
            }
        }
    }
    let [plain, limited] = times.map(Stats::of);
    b.row("rate-limit", "pipeline call: echo, no [[limits]]", plain, None);
    b.row(
        "rate-limit",
        "pipeline call: echo, one [[limits]] entry that applies",
        limited,
        None,
    );
    let added = limited.median.saturating_sub(plain.median);
    b.value_row(
        "rate-limit",
        "added per call by the rate-limit stage (difference of the medians)",
        fmt(added),
        &format!("≤ {}", fmt(BOUND)),
        added <= BOUND,
    );
    for (host, _) in pipelines {
        host.shutdown();
    }
    Ok(())
}
