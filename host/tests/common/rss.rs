//! The peak memory of a host process under test, read from
//! `/proc/PID/status` (`VmHWM`: the resident set's high-water mark, so a
//! peak between two samples is not missed).

use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The budget every flood test holds the host to.
pub const HOST_RSS_BUDGET_KIB: u64 = 100 * 1024;

/// `VmHWM` of `pid`, in KiB (`None` once it has exited).
pub fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Runs `cmd` to completion (killed after `limit`, which fails the test),
/// sampling its peak memory until it exits: its output and that peak.
pub fn run_measured(mut cmd: Command, limit: Duration) -> (Output, u64) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start toolhost");
    let pid = child.id();
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            let _ = pipe.read_to_end(&mut out);
            out
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("stderr")));
    let started = Instant::now();
    let mut peak = 0;
    let status = loop {
        // Sampled before the exit is reaped: a zombie has no memory left.
        if let Some(kib) = peak_kib(pid) {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("toolhost ran past {limit:?} (peak {peak} KiB)");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let output = Output {
        status,
        stdout: stdout.join().expect("stdout"),
        stderr: stderr.join().expect("stderr"),
    };
    (output, peak)
}

/// Fails the test when `peak_kib` is over the budget.
pub fn assert_within_budget(peak_kib: u64, what: &str) {
    assert!(peak_kib > 0, "{what}: no memory sample was taken");
    assert!(
        peak_kib < HOST_RSS_BUDGET_KIB,
        "{what}: the host's resident set peaked at {peak_kib} KiB, over the {HOST_RSS_BUDGET_KIB} KiB budget"
    );
}
