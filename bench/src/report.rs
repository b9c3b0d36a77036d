//! Measuring and reporting: medians over repeated samples, one table row per
//! measurement, with the target it is held to.

use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Shared state of one bench run.
pub struct Bench {
    /// The release target folder (binary and module libraries).
    pub target_dir: PathBuf,
    /// Rows so far, in order.
    pub rows: Vec<Row>,
    /// Fewer samples (for a smoke run in CI).
    pub quick: bool,
}

/// One line of the table.
pub struct Row {
    /// Area (host, filesystem, bash, web, pipeline).
    pub group: &'static str,
    /// What was measured.
    pub name: String,
    /// Sample statistics.
    pub stats: Stats,
    /// The target, in words (`≤ 15 µs`), if there is one.
    pub target: Option<String>,
    /// Whether the target was met.
    pub met: Option<bool>,
    /// A measurement that is not a duration (a rate, a size), shown in the
    /// median's column instead of the sample statistics.
    pub value: Option<String>,
}

/// Median and spread of a sample.
#[derive(Clone, Copy, Debug)]
pub struct Stats {
    /// 50th percentile.
    pub median: Duration,
    /// 10th percentile.
    pub p10: Duration,
    /// 90th percentile.
    pub p90: Duration,
    /// Sample count.
    pub samples: usize,
}

impl Stats {
    /// Statistics of a set of durations.
    pub fn of(mut times: Vec<Duration>) -> Stats {
        times.sort_unstable();
        let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
        Stats {
            median: at(0.5),
            p10: at(0.1),
            p90: at(0.9),
            samples: times.len(),
        }
    }
}

impl Bench {
    /// Scales a sample count down in quick mode.
    pub fn n(&self, full: usize) -> usize {
        if self.quick {
            (full / 10).max(3)
        } else {
            full
        }
    }

    /// Times `f` `samples` times after `warmup` untimed runs.
    pub fn time<F: FnMut()>(&self, warmup: usize, samples: usize, mut f: F) -> Stats {
        for _ in 0..warmup {
            f();
        }
        let times = (0..samples.max(1))
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect();
        Stats::of(times)
    }

    /// Adds a row; `limit` is the target the median must stay within.
    pub fn row(
        &mut self,
        group: &'static str,
        name: impl Into<String>,
        stats: Stats,
        limit: Option<Duration>,
    ) {
        self.rows.push(Row {
            group,
            name: name.into(),
            stats,
            target: limit.map(|l| format!("≤ {}", fmt(l))),
            met: limit.map(|l| stats.median <= l),
            value: None,
        });
    }

    /// Adds a row held to a ratio against a baseline measured in the same run.
    pub fn ratio_row(
        &mut self,
        group: &'static str,
        name: impl Into<String>,
        stats: Stats,
        base: Stats,
        max_ratio: f64,
    ) {
        let ratio = stats.median.as_secs_f64() / base.median.as_secs_f64().max(1e-12);
        self.rows.push(Row {
            group,
            name: format!("{} ({ratio:.2}× baseline {})", name.into(), fmt(base.median)),
            stats,
            target: Some(format!("≤ {max_ratio}×")),
            met: Some(ratio <= max_ratio),
            value: None,
        });
    }

    /// Adds a row for a measurement that is not a duration.
    pub fn value_row(
        &mut self,
        group: &'static str,
        name: impl Into<String>,
        value: String,
        target: &str,
        met: bool,
    ) {
        self.rows.push(Row {
            group,
            name: name.into(),
            stats: Stats::of(vec![Duration::ZERO]),
            target: Some(target.to_string()),
            met: Some(met),
            value: Some(value),
        });
    }

    /// Prints the table.
    pub fn print(&self) {
        println!(
            "{:<11} {:<58} {:>11} {:>11} {:>11} {:>7}  {:<10} met",
            "group", "measurement", "median", "p10", "p90", "n", "target"
        );
        for r in &self.rows {
            let (median, p10, p90, n) = match &r.value {
                Some(value) => (value.clone(), "-".into(), "-".into(), "-".into()),
                None => (
                    fmt(r.stats.median),
                    fmt(r.stats.p10),
                    fmt(r.stats.p90),
                    r.stats.samples.to_string(),
                ),
            };
            println!(
                "{:<11} {:<58} {:>11} {:>11} {:>11} {:>7}  {:<10} {}",
                r.group,
                r.name,
                median,
                p10,
                p90,
                n,
                r.target.as_deref().unwrap_or("-"),
                match r.met {
                    Some(true) => "yes",
                    Some(false) => "NO",
                    None => "",
                }
            );
        }
    }
}

/// A duration in the unit that reads best.
pub fn fmt(d: Duration) -> String {
    let ns = d.as_nanos() as f64;
    if ns < 1_000.0 {
        format!("{ns:.0} ns")
    } else if ns < 1_000_000.0 {
        format!("{:.2} µs", ns / 1e3)
    } else if ns < 1_000_000_000.0 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}
