//! The workspace's packages as `cargo metadata` reports them: names, where
//! they live, what they depend on, and where their sources are.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// How a dependency is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DepKind {
    /// `[dependencies]`: compiled into the crate.
    Normal,
    /// `[build-dependencies]`: runs while the crate builds.
    Build,
    /// `[dev-dependencies]`: only the crate's tests, examples and benches.
    Dev,
}

/// One dependency of a package.
#[derive(Debug, Clone)]
pub struct Dep {
    /// The package it names.
    pub name: String,
    /// How it is used.
    pub kind: DepKind,
}

/// One workspace package.
#[derive(Debug, Clone)]
pub struct Package {
    /// Its name (`toolhost-core`).
    pub name: String,
    /// Its folder, relative to the workspace root (`core`).
    pub dir: PathBuf,
    /// Everything it depends on, workspace or not.
    pub deps: Vec<Dep>,
    /// The folders holding its targets' root files (`src`, `tests`,
    /// `benches`), absolute, none inside another.
    pub source_dirs: Vec<PathBuf>,
}

/// What went wrong asking cargo.
#[derive(Debug)]
pub struct MetadataError(pub String);

impl std::fmt::Display for MetadataError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cargo metadata: {}", self.0)
    }
}

impl std::error::Error for MetadataError {}

/// The workspace that holds this crate (two folders up from it).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The workspace's packages, from `cargo metadata --no-deps` run with
/// `cargo` (the one running the tests, when it says so in `CARGO`).
pub fn workspace(root: &Path) -> Result<Vec<Package>, MetadataError> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(root)
        .output()
        .map_err(|e| MetadataError(format!("could not run cargo: {e}")))?;
    if !output.status.success() {
        return Err(MetadataError(
            String::from_utf8_lossy(&output.stderr).into_owned(),
        ));
    }
    let json: Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| MetadataError(format!("unreadable output: {e}")))?;
    parse(&json)
}

/// The packages of `cargo metadata`'s JSON.
pub fn parse(json: &Value) -> Result<Vec<Package>, MetadataError> {
    let text = |v: &Value, key: &str| -> Result<String, MetadataError> {
        v.get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| MetadataError(format!("an entry has no `{key}`")))
    };
    let root = PathBuf::from(text(json, "workspace_root")?);
    let packages = json
        .get("packages")
        .and_then(Value::as_array)
        .ok_or_else(|| MetadataError("no `packages`".into()))?;
    let mut out = Vec::with_capacity(packages.len());
    for p in packages {
        let manifest = PathBuf::from(text(p, "manifest_path")?);
        let dir = manifest.parent().unwrap_or(&manifest);
        let mut deps = Vec::new();
        for d in p
            .get("dependencies")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let kind = match d.get("kind").and_then(Value::as_str) {
                Some("dev") => DepKind::Dev,
                Some("build") => DepKind::Build,
                _ => DepKind::Normal,
            };
            deps.push(Dep {
                name: text(d, "name")?,
                kind,
            });
        }
        let mut roots: Vec<PathBuf> = Vec::new();
        for t in p.get("targets").and_then(Value::as_array).into_iter().flatten() {
            // A build script is a program of its own beside the crate (its
            // folder holds `src/`, which would then read as a module).
            let kinds = t.get("kind").and_then(Value::as_array);
            if kinds.is_some_and(|k| k.iter().any(|k| k == "custom-build")) {
                continue;
            }
            let src = PathBuf::from(text(t, "src_path")?);
            if let Some(parent) = src.parent() {
                roots.push(parent.to_path_buf());
            }
        }
        roots.sort();
        roots.dedup();
        let source_dirs = roots
            .iter()
            .filter(|r| !roots.iter().any(|o| o != *r && r.starts_with(o)))
            .cloned()
            .collect();
        out.push(Package {
            name: text(p, "name")?,
            dir: dir.strip_prefix(&root).unwrap_or(dir).to_path_buf(),
            deps,
            source_dirs,
        });
    }
    Ok(out)
}
