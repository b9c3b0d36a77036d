//! Where a plan's state lives when the plan does not say: in the user's
//! state folder, outside the workspace, so that the tools an agent runs in
//! the workspace never see the HTTP token, the stores or the audit
//! stamps there.
//!
//! `$XDG_STATE_HOME/toolhost/<project id>` (an absolute `XDG_STATE_HOME`,
//! as the XDG spec asks), else `~/.local/state/toolhost/<project id>`. The
//! project id is the plan folder's name (letters, digits, `-`, `_`, `.`
//! kept) and the first 16 hex digits of the SHA-256 of the plan's real
//! path: readable in a listing, and distinct for two projects of the same
//! name. With neither variable set, `.toolhost` beside the plan.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The default state folder of the plan at `plan_file` (which may be the
/// built-in plan's name in the current folder, not a real file).
pub fn default_for(plan_file: &Path) -> PathBuf {
    let base = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".local/state"))
        });
    match base {
        Some(base) => base.join("toolhost").join(project_id(plan_file)),
        None => plan_file
            .parent()
            .map(|p| p.join(".toolhost"))
            .unwrap_or_else(|| PathBuf::from(".toolhost")),
    }
}

/// `<folder name>-<16 hex digits>` for the plan's real path.
pub fn project_id(plan_file: &Path) -> String {
    let abs = std::path::absolute(plan_file).unwrap_or_else(|_| plan_file.to_path_buf());
    let real = toolhost_core::protected::real_location(&abs);
    let digest = Sha256::digest(real.as_os_str().as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    let name: String = real
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .take(40)
        .collect();
    let name = name.trim_start_matches('.');
    if name.is_empty() {
        hex
    } else {
        format!("{name}-{hex}")
    }
}

/// Creates the state folder (and missing parents) with mode 0700, so only
/// this user can read tokens and stores in it. An existing folder is left
/// as it is.
pub fn create(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_names_the_folder_and_tells_same_names_apart() {
        let a = project_id(Path::new("/srv/a/proj/toolhost.toml"));
        let b = project_id(Path::new("/srv/b/proj/toolhost.toml"));
        assert!(a.starts_with("proj-") && b.starts_with("proj-"), "{a} {b}");
        assert_ne!(a, b);
        assert_eq!(a.len(), "proj-".len() + 16);
        assert_eq!(project_id(Path::new("/x y!/p.toml")).len(), "xy-".len() + 16);
    }
}
