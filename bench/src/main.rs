//! `cargo xtask bench` runs this (built in release): every area's
//! measurements, printed as one table of medians. `--quick` takes fewer
//! samples; a name argument runs only that area.

// Unsafe only where a measurement needs a system call std does not wrap
// (wait4 for a child's peak RSS), each allowed where it is used.
#![deny(unsafe_code)]

mod alias;
mod bash;
mod bash_policy;
mod echo_pipeline;
mod filesystem;
mod host;
mod isolation;
mod mcp;
mod mcp_http;
mod mcp_reference;
mod oauth;
mod pipeline;
mod rate_limit;
mod redact;
mod report;
mod search;
mod soak;
mod state;
mod telemetry;
mod web;

use std::path::PathBuf;

use report::Bench;

/// The HTML conversion rows run in their own binary (see `src/bin/html.rs`:
/// the web and bash module rlibs cannot be linked into one binary); its
/// table is printed when it ends.
fn html_rows(b: &mut Bench) -> anyhow::Result<()> {
    let mut cmd = std::process::Command::new(b.target_dir.join("toolhost-bench-html"));
    if b.quick {
        cmd.arg("--quick");
    }
    let status = cmd.status()?;
    anyhow::ensure!(status.success(), "toolhost-bench-html failed: {status}");
    Ok(())
}

/// One bench area: adds its rows to the table.
type Area = fn(&mut Bench) -> anyhow::Result<()>;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let only: Vec<&str> = args
        .iter()
        .filter(|a| !a.starts_with("--"))
        .map(String::as_str)
        .collect();
    let target_dir = std::env::current_exe()?
        .parent()
        .map(PathBuf::from)
        .ok_or_else(|| anyhow::anyhow!("the bench binary has no folder"))?;
    let mut bench = Bench {
        target_dir,
        rows: Vec::new(),
        quick,
    };
    let areas = [
        ("host", host::run as Area),
        ("pipeline", pipeline::run),
        ("filesystem", filesystem::run),
        ("bash", bash::run),
        ("bash-policy", bash_policy::run),
        ("web", web::run),
        ("html", html_rows),
        ("mcp", mcp::run),
        ("isolation", isolation::run),
        ("soak", soak::run),
        ("alias", alias::run),
        ("state", state::run),
        ("redact", redact::run),
        ("rate-limit", rate_limit::run),
        ("oauth", oauth::run),
        ("search", search::run),
        // Last: it turns telemetry on for the rest of the process.
        ("telemetry", telemetry::run),
    ];
    for (name, run) in areas {
        if only.is_empty() || only.contains(&name) {
            if let Err(e) = run(&mut bench) {
                eprintln!("bench area '{name}' failed: {e:#}");
            }
        }
    }
    println!(
        "machine: {} cores, {}",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| s.lines().find(|l| l.starts_with("model name")).map(|l| l
                .split(':')
                .nth(1)
                .unwrap_or("")
                .trim()
                .to_string()))
            .unwrap_or_else(|| "unknown CPU".into())
    );
    bench.print();
    Ok(())
}
