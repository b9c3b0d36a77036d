//! Bash benchmarks: `true` through the bash tool (in-process pipeline, real
//! cdylib) against a raw spawn of `/bin/bash -c true`, side by side; and the
//! host's RSS growth while `yes` floods a command for 10 s (3 s in quick
//! mode).

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolhost::cancel::CancelToken;
use toolhost::host::Host;
use toolhost::pipeline::{Call, Pipeline};
use toolhost::plan::Plan;

use crate::report::{Bench, Stats};

pub fn run(b: &mut Bench) -> anyhow::Result<()> {
    if !b.target_dir.join("libtoolhost_bash.so").exists() {
        anyhow::bail!("libtoolhost_bash.so is not built in {}", b.target_dir.display());
    }
    let dir = tempfile::tempdir()?;
    // Two mounts of the module: the sandbox off (the ≤ 1.5× raw target)
    // and on with the default plan's layers (its added cost is reported).
    let modules = b.target_dir.display().to_string();
    let plan_with = |name: &str, sandbox: &str, extra: &str| -> anyhow::Result<Plan> {
        let file = dir.path().join(name);
        let text = format!(
            "[host]\nmodule_path = [{:?}]\n[[tools]]\nmodule = \"bash\"\n[tools.config]\n\
             sandbox = \"{sandbox}\"\n{extra}\n",
            modules
        );
        std::fs::write(&file, &text)?;
        Ok(Plan::load(&file)?)
    };
    let open = |name: &str, sandbox: &str, extra: &str| -> anyhow::Result<(Arc<Host>, Pipeline)> {
        let host = Arc::new(Host::open(plan_with(name, sandbox, extra)?)?);
        let pipeline = Pipeline::new(host.clone(), CancelToken::new());
        Ok((host, pipeline))
    };
    let (host, pipeline) = open("bash.toml", "off", "")?;
    let (boxed_host, boxed) = open("bash-sandbox.toml", "workspace-write", "")?;
    // With `rlimits.processes`, each call also gets its own pids cgroup
    // (where this machine lets the host make one).
    let (capped_host, capped) = open(
        "bash-cgroup.toml",
        "workspace-write",
        "rlimits = { processes = 500 }",
    )?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let call_on = |pipeline: &Pipeline, command: &str| {
        runtime.block_on(pipeline.call(Call {
            name: "bash".into(),
            input: json!({ "command": command }),
            ..Call::default()
        }))
    };

    let timed = |pipeline: &Pipeline, what: &str| -> anyhow::Result<Duration> {
        let t = std::time::Instant::now();
        let result = call_on(pipeline, "true");
        let took = t.elapsed();
        anyhow::ensure!(result.success, "{what} failed: {:?}", result.error);
        Ok(took)
    };

    // The ratio: raw and the tool with the sandbox off, interleaved so that
    // drift on the machine hits both alike. The sandboxed mounts are timed
    // in a second loop: their calls leave kernel work behind them (a
    // finished call's network namespace torn down by a kernel worker),
    // which would otherwise land on these two.
    let n = b.n(300);
    let (mut tool, mut raw) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n + 10 {
        let t = std::time::Instant::now();
        let status = Command::new("/bin/bash")
            .args(["-c", "true"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()?;
        let raw_t = t.elapsed();
        anyhow::ensure!(status.status.success(), "bash -c true failed");
        let tool_t = timed(&pipeline, "bash tool")?;
        if i >= 10 {
            raw.push(raw_t);
            tool.push(tool_t);
        }
    }
    // The sandbox's added cost: off, on, and on with a pids cgroup,
    // interleaved.
    let mut off = Vec::with_capacity(n);
    let mut sandboxed = Vec::with_capacity(n);
    let mut limited = Vec::with_capacity(n);
    for i in 0..n + 10 {
        let off_t = timed(&pipeline, "bash tool")?;
        let boxed_t = timed(&boxed, "sandboxed bash tool")?;
        let capped_t = timed(&capped, "bash tool with a pids cgroup")?;
        if i >= 10 {
            off.push(off_t);
            sandboxed.push(boxed_t);
            limited.push(capped_t);
        }
    }
    let raw = Stats::of(raw);
    b.row("bash", "raw spawn: /bin/bash -c true (piped output)", raw, None);
    let tool = Stats::of(tool);
    b.ratio_row(
        "bash",
        "bash tool: `true` through the pipeline (sandbox off)",
        tool,
        raw,
        1.5,
    );
    // Against the sandbox-off median of the second loop, taken beside them.
    let off = Stats::of(off);
    let sandboxed = Stats::of(sandboxed);
    let added = sandboxed.median.saturating_sub(off.median);
    println!(
        "bash: the sandbox (workspace-write, network off) adds {:.2} ms to the median `true` (off: {:.2} ms beside it)",
        added.as_secs_f64() * 1000.0,
        off.median.as_secs_f64() * 1000.0
    );
    // Target: the sandbox adds at most 3 ms to the sandbox-off median.
    b.row(
        "bash",
        format!(
            "bash tool: `true`, sandbox workspace-write (+{:.2} ms over off)",
            added.as_secs_f64() * 1000.0
        ),
        sandboxed,
        Some(off.median + Duration::from_millis(3)),
    );
    let limited = Stats::of(limited);
    b.row(
        "bash",
        format!(
            "bash tool: `true`, sandbox + rlimits.processes (pids cgroup) (+{:.2} ms over off)",
            limited.median.saturating_sub(off.median).as_secs_f64() * 1000.0
        ),
        limited,
        Some(off.median + Duration::from_millis(3)),
    );

    // RSS growth while `yes` floods for 10 s (quick: 3 s).
    let secs = if b.quick { 3 } else { 10 };
    let before = rss_kib();
    let t = std::time::Instant::now();
    let result = runtime.block_on(pipeline.call(Call {
        name: "bash".into(),
        input: json!({ "command": "yes", "timeout": secs }),
        ..Call::default()
    }));
    let took = t.elapsed();
    let grown = rss_kib().saturating_sub(before);
    let bytes = result.output["stdout_bytes"].as_u64().unwrap_or(0);
    println!(
        "bash: `yes` for {secs} s: {} MiB streamed, host RSS grew {grown} KiB (cap 30000 B per stream)",
        bytes / (1024 * 1024)
    );
    // Shown as a "duration" row: the KiB figure is in the name.
    b.row(
        "bash",
        format!(
            "`yes` {secs} s: RSS +{grown} KiB ({} MiB streamed)",
            bytes / (1024 * 1024)
        ),
        Stats::of(vec![took]),
        Some(Duration::from_secs(secs + 3)),
    );
    host.shutdown();
    boxed_host.shutdown();
    capped_host.shutdown();
    mount_rows(b, &plan_with)?;
    Ok(())
}

/// Load + mount + cleanup of the module with the sandbox on: with the spawn
/// probe at every mount (its stamp removed first), and with the probe
/// skipped by this boot's stamp (see the module README).
fn mount_rows(
    b: &mut Bench,
    plan_with: &dyn Fn(&str, &str, &str) -> anyhow::Result<Plan>,
) -> anyhow::Result<()> {
    let plan = plan_with("bash-mount.toml", "workspace-write", "")?;
    let stamp = plan
        .state_dir()
        .join("modules/bash")
        .join(toolhost_bash::sandbox::stamp::FILE);
    let n = b.n(50);
    let probed = b.time(3, n, || {
        let _ = std::fs::remove_file(&stamp);
        let host = Host::open(plan.clone()).expect("plan loads");
        host.shutdown();
    });
    b.row(
        "bash",
        "load + mount + cleanup, sandbox on: spawn probe",
        probed,
        None,
    );
    if !stamp.exists() {
        // A module without the stamp (an older build), or a probe that
        // found a layer missing: there is no second row to measure.
        println!(
            "bash: no probe stamp at {}; the stamped row is skipped",
            stamp.display()
        );
        return Ok(());
    }
    let stamped = b.time(3, n, || {
        let host = Host::open(plan.clone()).expect("plan loads");
        host.shutdown();
    });
    b.row(
        "bash",
        "load + mount + cleanup, sandbox on: probe skipped (stamp)",
        stamped,
        None,
    );
    Ok(())
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}
