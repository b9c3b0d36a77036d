//! The control plane of a plan: the files that decide what the agent may do
//! on its next run. Two uses: [`pinned_files`] are what `toolhost trust`
//! hashes beside the plan (what the host executes or loads), and
//! [`protected_paths`] is the set every module receives at mount and must
//! not change (see `toolhost_core::protected`).

use std::path::{Path, PathBuf};

use toolhost_core::wire::ProtectedPath;

use super::{ModuleSource, Plan, PROJECT_FILE};

/// The lock file `toolhost pin` writes beside the plan.
pub const LOCK_FILE: &str = "toolhost.lock";

/// Files the plan makes the host execute or load, absolute, in plan order,
/// without duplicates: hook programs and the script arguments they name
/// (an argument with a `/` that names an existing file), `path =` modules,
/// and `[tools.mcp]` commands given as a path. Bare program names
/// (`python3`) are looked up on `PATH` and are not pinned.
pub fn pinned_files(plan: &Plan) -> Vec<PathBuf> {
    let dir = plan.dir();
    let mut out: Vec<PathBuf> = Vec::new();
    let mut push = |p: PathBuf| {
        if !out.contains(&p) {
            out.push(p);
        }
    };
    for hook in &plan.hooks {
        for (i, arg) in hook.command.iter().enumerate() {
            if let Some(file) = path_like(arg, &dir) {
                if i == 0 || file.is_file() {
                    push(file);
                }
            }
        }
    }
    for entry in &plan.tools {
        match &entry.source {
            ModuleSource::Path(path) => push(path.clone()),
            ModuleSource::Mcp(mcp) => {
                if let Some(file) = mcp.command.first().and_then(|p| path_like(p, &dir)) {
                    push(file);
                }
            }
            ModuleSource::Name(_) => {}
        }
    }
    out
}

/// A command word that names a file (it has a `/`), made absolute against
/// the plan's folder as the hook runner does.
fn path_like(word: &str, dir: &Path) -> Option<PathBuf> {
    if !word.contains('/') {
        return None;
    }
    Some(super::normalize(&dir.join(word)))
}

/// The control-plane set handed to every module at mount: the plan, a
/// `toolhost.toml` in every folder discovery would search (from the current
/// folder and from the working folder up), the lock file, the pinned files,
/// the user's toolhost config folder (trust records, the user's plan), the
/// audit log; the state folder and token files as secret.
pub fn protected_paths(plan: &Plan) -> Vec<ProtectedPath> {
    let mut out = Vec::new();
    // Each entry once: the two discovery chains are one when the working
    // folder is the current one (the usual case), and every module looks
    // up each entry's real location (several system calls a path) at
    // mount.
    let mut add = |path: &Path, folder: bool, secret: bool| {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let entry = ProtectedPath {
            path: super::normalize(&path).to_string_lossy().into_owned(),
            folder,
            secret,
        };
        if !out.contains(&entry) {
            out.push(entry);
        }
    };
    if plan.file.is_file() {
        add(&plan.file, false, false);
    }
    add(&plan.dir().join(LOCK_FILE), false, false);
    let cwd = std::env::current_dir().ok();
    for start in cwd.iter().chain(std::iter::once(&plan.working_dir)) {
        for dir in start.ancestors() {
            add(&dir.join(PROJECT_FILE), false, false);
        }
    }
    for file in pinned_files(plan) {
        add(&file, false, false);
    }
    if let Some(config) = super::discover::user_config_dir() {
        add(&config, true, false);
    }
    if let Some(log) = &plan.host.audit_log {
        add(Path::new(log), false, false);
    }
    add(&plan.state_dir(), true, true);
    for file in &plan.secret_files {
        add(file, false, true);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_paths_list_each_entry_once() {
        // The plan's folder is the current one, so the working folder is
        // too: discovery's two chains of folders are the same chain.
        let cwd = std::env::current_dir().expect("current folder");
        let plan = Plan::parse("", &cwd.join("p.toml")).expect("plan");
        let paths = protected_paths(&plan);
        let project = super::super::normalize(&cwd.join(PROJECT_FILE))
            .to_string_lossy()
            .into_owned();
        assert!(paths.iter().any(|p| p.path == project), "{paths:?}");
        for (i, entry) in paths.iter().enumerate() {
            assert!(!paths[..i].contains(entry), "{entry:?} twice in {paths:?}");
        }
    }
}
