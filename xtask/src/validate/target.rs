//! What to validate: a library file as given, or a crate folder built first
//! (in release, as it would be shipped) to find its cdylib.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context};
use serde_json::Value;

/// The library file for `target`: the file itself, or the cdylib of the
/// crate in the folder `target`, built with `cargo build --release`.
pub fn resolve(target: &Path) -> anyhow::Result<PathBuf> {
    if target.is_file() {
        return target
            .canonicalize()
            .with_context(|| format!("cannot resolve {}", target.display()));
    }
    let manifest = target.join("Cargo.toml");
    if !target.is_dir() || !manifest.is_file() {
        bail!(
            "{} is neither a library file nor a crate folder (with a Cargo.toml)",
            target.display()
        );
    }
    let manifest = manifest.canonicalize()?;
    build(&manifest)
}

/// Builds the crate of `manifest` in release and returns its cdylib.
fn build(manifest: &Path) -> anyhow::Result<PathBuf> {
    eprintln!("validate-module: building {} (release)", manifest.display());
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "build",
            "--release",
            "--message-format=json-render-diagnostics",
            "--manifest-path",
        ])
        .arg(manifest)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .context("cannot run cargo")?;
    if !output.status.success() {
        bail!(
            "`cargo build --release --manifest-path {}` failed",
            manifest.display()
        );
    }
    let mut own = Vec::new();
    let mut all = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if message.get("reason").and_then(Value::as_str) != Some("compiler-artifact") {
            continue;
        }
        let is_cdylib = message
            .pointer("/target/crate_types")
            .and_then(Value::as_array)
            .is_some_and(|types| types.iter().any(|t| t == "cdylib"));
        if !is_cdylib {
            continue;
        }
        let files: Vec<PathBuf> = message
            .get("filenames")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|f| f.ends_with(".so") || f.ends_with(".dylib") || f.ends_with(".dll"))
            .map(PathBuf::from)
            .collect();
        let from_here = message
            .get("manifest_path")
            .and_then(Value::as_str)
            .and_then(|m| Path::new(m).canonicalize().ok())
            .is_some_and(|m| m == manifest);
        if from_here {
            own.extend(files.iter().cloned());
        }
        all.extend(files);
    }
    match (own.as_slice(), all.as_slice()) {
        ([one, ..], _) => Ok(one.clone()),
        ([], [one]) => Ok(one.clone()),
        ([], []) => bail!(
            "{} builds no cdylib; set `crate-type = [\"cdylib\"]` under [lib]",
            manifest.display()
        ),
        ([], many) => bail!(
            "{} builds several cdylibs ({}); name one file instead",
            manifest.display(),
            many.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
