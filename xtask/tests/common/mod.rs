//! Helpers shared by the xtask integration tests.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(".."))
}

/// The workspace's target folder.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| if p.is_relative() { root().join(p) } else { p })
        .unwrap_or_else(|| root().join("target"))
}

/// `cargo`, as the test was run with.
pub fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

/// Builds these packages (debug) so their libraries exist; a no-op when fresh.
pub fn build(packages: &[&str]) {
    let mut cmd = cargo();
    cmd.args(["build", "--quiet"]).current_dir(root());
    for p in packages {
        cmd.args(["-p", p]);
    }
    let status = cmd.status().unwrap_or_else(|e| panic!("cannot run cargo: {e}"));
    assert!(status.success(), "cargo build {packages:?} failed");
}

/// The debug library of a package's lib name (`toolhost_fixture`).
pub fn library(lib: &str) -> PathBuf {
    target_dir().join("debug").join(format!("lib{lib}.so"))
}

/// Runs `xtask validate-module ARGS --format json`; the exit code and report.
pub fn validate(args: &[&str]) -> (i32, Value, Output) {
    let output = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .arg("validate-module")
        .args(args)
        .args(["--format", "json"])
        .current_dir(root())
        .output()
        .unwrap_or_else(|e| panic!("cannot run xtask: {e}"));
    let code = output.status.code().unwrap_or(-1);
    let report = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "validate-module {args:?} printed no JSON report ({e}); exit {code}\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (code, report, output)
}

/// The checks of a report with this outcome, as `name [tool]` strings.
pub fn with_outcome(report: &Value, outcome: &str) -> Vec<String> {
    report["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["outcome"] == outcome)
        .map(|c| match c["tool"].as_str() {
            Some(tool) => format!("{} [{tool}]", c["name"].as_str().unwrap_or("")),
            None => c["name"].as_str().unwrap_or("").to_string(),
        })
        .collect()
}

/// The message of one check.
pub fn message(report: &Value, name: &str, tool: Option<&str>) -> String {
    report["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["name"] == name && c["tool"].as_str() == tool)
        .and_then(|c| c["message"].as_str())
        .unwrap_or("")
        .to_string()
}

/// Timeouts that keep hanging fixtures quick.
pub const FAST: [&str; 4] = ["--call-timeout-ms", "3000", "--cancel-bound-ms", "1500"];
