//! `test` and `bench`: thin wrappers over cargo with the right order.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

/// The workspace root (xtask lives one level below it).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Runs a command in the workspace root, failing on a non-zero exit.
pub fn run(cmd: &mut Command) -> anyhow::Result<()> {
    let shown = format!("{cmd:?}");
    eprintln!("xtask: running {shown}");
    let status = cmd
        .current_dir(root())
        .status()
        .with_context(|| format!("cannot start {shown}"))?;
    if !status.success() {
        bail!("{shown} failed with {status}");
    }
    Ok(())
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

/// Builds every crate (so the cdylibs exist), then runs the tests.
/// `--long` sets TOOLHOST_LONG_TESTS=1: property tests run many more cases.
pub fn test(extra: &[String]) -> anyhow::Result<()> {
    let long = extra.iter().any(|a| a == "--long");
    let extra: Vec<&String> = extra.iter().filter(|a| *a != "--long").collect();
    run(cargo().args(["build", "--workspace", "--all-targets"]))?;
    let mut tests = cargo();
    tests.args(["test", "--workspace"]).args(extra);
    if long {
        tests.env("TOOLHOST_LONG_TESTS", "1");
    }
    run(&mut tests)?;
    let mcp_tests = root().join("tests/mcp");
    if mcp_tests.is_dir() {
        let python = root().join(".venv/bin/python");
        if python.exists() {
            run(Command::new(&python)
                .args(["-m", "pytest", "-q", "tests/mcp"])
                .env("TOOLHOST_BIN", root().join("target/debug/toolhost"))
                .env("TOOLHOST_MODULE_PATH", root().join("target/debug")))?;
        } else {
            eprintln!("xtask: skipping the MCP client tests: no .venv (create it with `python3 -m venv .venv && .venv/bin/pip install -r tests/mcp/requirements.txt`)");
        }
    }
    Ok(())
}

/// Builds in release and runs the bench binary from the workspace root.
pub fn bench(quick: bool, areas: &[String]) -> anyhow::Result<()> {
    run(cargo().args(["build", "--release", "--workspace"]))?;
    let mut cmd = Command::new(root().join("target/release/toolhost-bench"));
    if quick {
        cmd.arg("--quick");
    }
    run(cmd.args(areas))
}
