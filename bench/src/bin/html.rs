//! The HTML→Markdown conversion rows, as a binary of their own.
//!
//! They call the web module's `convert` directly, so this binary links the
//! web module's rlib. The main bench binary links the bash module's rlib
//! (for the policy rows), and every module rlib exports the same toolhost
//! root-module symbol: the two cannot share one binary. `toolhost-bench
//! html` runs this one and its table follows the main table.

#![forbid(unsafe_code)]

#[path = "../html.rs"]
mod html;
#[path = "../report.rs"]
#[allow(dead_code)]
mod report;

fn main() -> anyhow::Result<()> {
    let quick = std::env::args().skip(1).any(|a| a == "--quick");
    let target_dir = std::env::current_exe()?
        .parent()
        .map(std::path::PathBuf::from)
        .ok_or_else(|| anyhow::anyhow!("the bench binary has no folder"))?;
    let mut bench = report::Bench {
        target_dir,
        rows: Vec::new(),
        quick,
    };
    html::run(&mut bench)?;
    bench.print();
    Ok(())
}
