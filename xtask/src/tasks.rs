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

/// Cargo's target folder: `CARGO_TARGET_DIR` when set (relative to the
/// workspace root, as cargo reads it when run from there), else `target/`.
pub fn target_dir() -> PathBuf {
    target_dir_from(std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from))
}

fn target_dir_from(env: Option<PathBuf>) -> PathBuf {
    match env {
        Some(dir) if dir.is_absolute() => dir,
        Some(dir) if !dir.as_os_str().is_empty() => root().join(dir),
        _ => root().join("target"),
    }
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

/// Builds every crate (so the cdylibs exist), then runs the tests, the
/// docs' snippets (`cargo xtask docs`), loom and the MCP client tests.
/// `--long` sets `TOOLHOST_LONG_TESTS=1`: property tests run many more cases.
pub fn test(extra: &[String]) -> anyhow::Result<()> {
    let long = extra.iter().any(|a| a == "--long");
    let extra: Vec<&String> = extra.iter().filter(|a| *a != "--long").collect();
    run(cargo().args(["build", "--workspace", "--all-targets"]))?;
    let mut tests = cargo();
    if long {
        tests.env("TOOLHOST_LONG_TESTS", "1");
    }
    run(tests.args(["test", "--workspace"]).args(extra))?;
    // The README's and the book's snippets, against the build just tested.
    crate::book::check(&target_dir().join("debug"))?;
    crate::loom::loom()?;
    let mcp_tests = root().join("tests/mcp");
    if mcp_tests.is_dir() {
        let python = root().join(".venv/bin/python");
        if python.exists() {
            run(Command::new(&python)
                .args(["-m", "pytest", "-q", "tests/mcp"])
                .env("TOOLHOST_BIN", target_dir().join("debug/toolhost"))
                .env("TOOLHOST_MODULE_PATH", target_dir().join("debug")))?;
        } else {
            // A suite that cannot run must fail, not pass as skipped.
            bail!("the MCP client tests need .venv: create it with `python3 -m venv .venv && .venv/bin/pip install -r tests/mcp/requirements.txt`");
        }
    }
    // The TypeScript SDK and Inspector interop tests: a missing node or npm
    // package fails them (run `npm ci --prefix tests/node` first).
    if root().join("tests/node").is_dir() {
        run(Command::new("node")
            .args(["--test", "tests/node/"])
            .current_dir(root())
            .env("TOOLHOST_BIN", target_dir().join("debug/toolhost"))
            .env("TOOLHOST_MODULE_PATH", target_dir().join("debug")))?;
    }
    Ok(())
}

/// Builds in release and runs the bench binary from the workspace root.
pub fn bench(quick: bool, areas: &[String]) -> anyhow::Result<()> {
    run(cargo().args(["build", "--release", "--workspace"]))?;
    let mut cmd = Command::new(target_dir().join("release/toolhost-bench"));
    if quick {
        cmd.arg("--quick");
    }
    run(cmd.args(areas))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_folder_follows_cargo_target_dir() {
        assert_eq!(target_dir_from(None), root().join("target"));
        assert_eq!(target_dir_from(Some("".into())), root().join("target"));
        assert_eq!(
            target_dir_from(Some("/elsewhere/t".into())),
            PathBuf::from("/elsewhere/t")
        );
        assert_eq!(target_dir_from(Some("build/t".into())), root().join("build/t"));
    }
}
