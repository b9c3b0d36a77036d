//! `dist` and `install`: toolhost as an installed tool.
//!
//! `cargo install` can only install binaries, never the module cdylibs the
//! binary loads, so both tasks lay out one tree:
//!
//! ```text
//! bin/toolhost
//! lib/toolhost/libtoolhost_{filesystem,bash,web}.so
//! share/toolhost/mount-plans/*.toml
//! share/doc/toolhost/{README.md,LICENSE-MIT,LICENSE-APACHE}
//! ```
//!
//! The binary finds its modules in `<exe dir>/../lib/toolhost` when a plan
//! names no `module_path`, and its default plan is built in, so the tree
//! works wherever it is unpacked. `dist` packs it as a tarball; `install`
//! copies it under a prefix (default `~/.local`).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

use crate::tasks::{root, run};

/// The modules that ship: every module crate in `modules/`.
pub const MODULES: &[&str] = &["filesystem", "bash", "web"];

/// Which build to pack.
#[derive(clap::Args, Debug, Clone)]
pub struct Build {
    /// Pack the debug build instead of the release build.
    #[arg(long)]
    pub debug: bool,
    /// Use what is already built in target/ instead of running cargo build.
    #[arg(long)]
    pub no_build: bool,
}

impl Build {
    fn profile_dir(&self) -> PathBuf {
        root()
            .join("target")
            .join(if self.debug { "debug" } else { "release" })
    }

    /// Builds the binary and the shipped modules (unless `--no-build`).
    fn build(&self) -> anyhow::Result<()> {
        if self.no_build {
            return Ok(());
        }
        let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        cmd.arg("build").args(["-p", "toolhost"]);
        for module in MODULES {
            cmd.args(["-p", &format!("toolhost-{module}")]);
        }
        if !self.debug {
            cmd.arg("--release");
        }
        run(&mut cmd)
    }
}

/// The files of the tree: (source, path inside the tree, executable).
fn layout(build: &Build) -> anyhow::Result<Vec<(PathBuf, PathBuf, bool)>> {
    let target = build.profile_dir();
    let mut files = vec![(target.join("toolhost"), PathBuf::from("bin/toolhost"), true)];
    for module in MODULES {
        let lib = format!(
            "{}toolhost_{module}{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        );
        files.push((target.join(&lib), Path::new("lib/toolhost").join(&lib), false));
    }
    // The bash module starts every command under this program and looks
    // for it beside its own file (modules/bash/src/process/launch.rs).
    files.push((
        target.join("toolhost-bash-reaper"),
        PathBuf::from("lib/toolhost/toolhost-bash-reaper"),
        true,
    ));
    let plans = root().join("mount-plans");
    let mut plan_files: Vec<PathBuf> = std::fs::read_dir(&plans)
        .with_context(|| format!("cannot list {}", plans.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    plan_files.sort();
    for plan in plan_files {
        let name = plan.file_name().map(PathBuf::from).unwrap_or_default();
        files.push((plan, Path::new("share/toolhost/mount-plans").join(name), false));
    }
    for doc in ["README.md", "LICENSE-MIT", "LICENSE-APACHE"] {
        files.push((root().join(doc), Path::new("share/doc/toolhost").join(doc), false));
    }
    for (source, _, _) in &files {
        if !source.is_file() {
            bail!(
                "{} is missing: build first ({}), or drop --no-build",
                source.display(),
                if build.debug {
                    "cargo build --workspace"
                } else {
                    "cargo build --release --workspace"
                }
            );
        }
    }
    Ok(files)
}

/// The tarball's name: `toolhost-<version>-<arch>-<os>`.
fn dist_name() -> String {
    format!(
        "toolhost-{}-{}-{}",
        toolhost_version(),
        std::env::consts::ARCH,
        std::env::consts::OS
    )
}

/// The host's version (xtask's own is 0.0.0): the workspace version.
fn toolhost_version() -> String {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap_or_default();
    manifest
        .parse::<toml::Table>()
        .ok()
        .and_then(|t| {
            t.get("workspace")?
                .get("package")?
                .get("version")?
                .as_str()
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Builds and packs `<out>/toolhost-<version>-<arch>-<os>.tar.gz` (default
/// `target/dist/`): the tree under one top folder. Returns the tarball.
pub fn dist(build: &Build, out_dir: Option<&Path>) -> anyhow::Result<PathBuf> {
    build.build()?;
    let files = layout(build)?;
    let out_dir = out_dir
        .map(Path::to_path_buf)
        .unwrap_or_else(|| root().join("target/dist"));
    std::fs::create_dir_all(&out_dir).with_context(|| format!("cannot create {}", out_dir.display()))?;
    let name = dist_name();
    let tarball = out_dir.join(format!("{name}.tar.gz"));
    // Written beside, renamed when complete: never a half tarball under the name.
    let partial = out_dir.join(format!(".{name}.tar.gz.partial"));
    let file = File::create(&partial).with_context(|| format!("cannot create {}", partial.display()))?;
    let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(
        file,
        flate2::Compression::default(),
    ));
    tar.mode(tar::HeaderMode::Deterministic);
    for (source, inside, _) in &files {
        tar.append_path_with_name(source, Path::new(&name).join(inside))
            .with_context(|| format!("cannot pack {}", source.display()))?;
    }
    tar.into_inner()
        .and_then(|gz| gz.finish())
        .and_then(|f| f.sync_all())
        .with_context(|| format!("cannot finish {}", partial.display()))?;
    std::fs::rename(&partial, &tarball).with_context(|| format!("cannot write {}", tarball.display()))?;
    println!("{}", tarball.display());
    Ok(tarball)
}

/// Builds and copies the tree under `prefix` (default `~/.local`), each
/// file written beside its place and renamed over it, so a toolhost that
/// is running while it is replaced keeps its old, whole file.
pub fn install(build: &Build, prefix: Option<&Path>) -> anyhow::Result<()> {
    let prefix = match prefix {
        Some(p) => std::path::absolute(p)?,
        None => match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
            Some(home) => PathBuf::from(home).join(".local"),
            None => bail!("HOME is not set: give --prefix DIR"),
        },
    };
    build.build()?;
    let files = layout(build)?;
    for (source, inside, executable) in &files {
        let dest = prefix.join(inside);
        let dir = dest.parent().unwrap_or(&prefix);
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let partial = dir.join(format!(
            ".{}.partial",
            dest.file_name().map(|n| n.to_string_lossy()).unwrap_or_default()
        ));
        std::fs::copy(source, &partial)
            .with_context(|| format!("cannot copy {} to {}", source.display(), partial.display()))?;
        let mode = if *executable { 0o755 } else { 0o644 };
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&partial, std::fs::Permissions::from_mode(mode))?;
        std::fs::rename(&partial, &dest).with_context(|| format!("cannot write {}", dest.display()))?;
    }
    let bin = prefix.join("bin");
    println!("installed toolhost under {}", prefix.display());
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d == bin))
        .unwrap_or(false);
    if !on_path {
        println!(
            "note: {} is not on PATH; add it to run `toolhost` by name",
            bin.display()
        );
    }
    println!("try: cd any/project && toolhost init && toolhost check");
    Ok(())
}
