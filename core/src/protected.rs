//! The control plane a module must leave alone.
//!
//! Every wall toolhost builds around an agent is decided by files: the plan,
//! the hooks it runs, the libraries it loads, the state folder (tokens,
//! stores), the audit log. If a tool could change them, an agent could
//! loosen its own next run. The host hands each module the set at mount
//! ([`crate::wire::HostInfo::protected_paths`]); [`Protected`] compiles it
//! once and answers, per path, whether it is covered.
//!
//! Entries are kept in two forms, as the host wrote them and canonical (a
//! symlinked home or temp folder), so a module that already knows a path's
//! real location (it opened the file beneath a root) asks with
//! [`Protected::covering`] and pays only a hash lookup and a few prefix
//! tests; [`Protected::is_protected`] resolves a path first, for modules
//! that do not.

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use crate::wire::ProtectedPath;

/// The compiled control-plane set of one mount.
#[derive(Debug, Default, Clone)]
pub struct Protected {
    /// Files, by exact path (both forms).
    files: HashSet<OsString>,
    /// Secret files (token files), by exact path (both forms).
    secret_files: HashSet<OsString>,
    /// Folders: everything below is covered; `true` when secret.
    folders: Vec<(PathBuf, bool)>,
}

/// What covers a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    /// Not to be changed (readable).
    Protected,
    /// Not to be changed, read or listed.
    Secret,
}

impl Protected {
    /// Compiles the host's list (relative or empty entries are ignored: the
    /// host always sends absolute paths).
    pub fn new(list: &[ProtectedPath]) -> Protected {
        let mut out = Protected::default();
        for entry in list {
            let path = Path::new(&entry.path);
            if !path.is_absolute() {
                continue;
            }
            let lexical = normalize(path);
            let real = real_location(&lexical);
            for form in [lexical, real] {
                if entry.folder {
                    if !out.folders.iter().any(|(f, _)| *f == form) {
                        out.folders.push((form, entry.secret));
                    }
                } else if entry.secret {
                    out.secret_files.insert(form.into_os_string());
                } else {
                    out.files.insert(form.into_os_string());
                }
            }
        }
        out
    }

    /// Whether nothing is protected (a host older than the set).
    pub fn is_empty(&self) -> bool {
        self.files.is_empty() && self.secret_files.is_empty() && self.folders.is_empty()
    }

    /// What covers `abs`, an absolute path with no `.` or `..` (as written,
    /// or its real location): no file system access.
    pub fn covering(&self, abs: &Path) -> Option<Coverage> {
        let key: &OsStr = abs.as_os_str();
        if self.secret_files.contains(key) {
            return Some(Coverage::Secret);
        }
        let mut found = self.files.contains(key).then_some(Coverage::Protected);
        for (folder, secret) in &self.folders {
            if below(abs, folder) {
                if *secret {
                    return Some(Coverage::Secret);
                }
                found = Some(Coverage::Protected);
            }
        }
        found
    }

    /// Whether `path` (relative paths against the current folder) is, or
    /// once created would be, part of the control plane: resolved to its
    /// real location first (symlinks followed, a missing file by its
    /// parent), so a link to a protected file is protected too.
    pub fn is_protected(&self, path: &Path) -> bool {
        self.covering_real(path).is_some()
    }

    /// Whether `path` must not even be read (the state folder, token files).
    pub fn is_secret(&self, path: &Path) -> bool {
        self.covering_real(path) == Some(Coverage::Secret)
    }

    fn covering_real(&self, path: &Path) -> Option<Coverage> {
        let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let abs = normalize(&abs);
        self.covering(&abs)
            .or_else(|| self.covering(&real_location(&abs)))
    }

    /// Every entry, for modules that hand the set on (a sandbox binding
    /// files read-only): `(path, folder, secret)`, both forms.
    pub fn entries(&self) -> impl Iterator<Item = (&Path, bool, bool)> {
        let files = self
            .files
            .iter()
            .map(|f| (Path::new(f.as_os_str()), false, false));
        let secret = self
            .secret_files
            .iter()
            .map(|f| (Path::new(f.as_os_str()), false, true));
        let folders = self.folders.iter().map(|(f, s)| (f.as_path(), true, *s));
        files.chain(secret).chain(folders)
    }
}

/// Whether `path` is `folder` or below it (whole components).
fn below(path: &Path, folder: &Path) -> bool {
    let (p, f) = (path.as_os_str().as_bytes(), folder.as_os_str().as_bytes());
    p.starts_with(f) && (p.len() == f.len() || p[f.len()] == b'/' || f.ends_with(b"/"))
}

/// Removes `.` and resolves `..` lexically (no file system access: it
/// serves paths that may not exist yet).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Where `path` really is: canonical when it exists; a dangling symlink by
/// its target (writing through it would create the target); a missing name
/// by its parent's real location plus the name. Bounded (40 links, as the
/// kernel's own limit).
pub fn real_location(path: &Path) -> PathBuf {
    let mut path = normalize(path);
    for _ in 0..40 {
        if let Ok(real) = std::fs::canonicalize(&path) {
            return real;
        }
        if let Ok(target) = std::fs::read_link(&path) {
            let base = path.parent().unwrap_or(Path::new("/")).to_path_buf();
            path = normalize(&base.join(target));
            continue;
        }
        break;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) if parent != path => real_location(parent).join(name),
        _ => path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &Path, folder: bool, secret: bool) -> ProtectedPath {
        ProtectedPath {
            path: path.to_string_lossy().into_owned(),
            folder,
            secret,
        }
    }

    #[test]
    fn files_folders_links_and_missing_names() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir(root.join("state")).unwrap();
        std::fs::write(root.join("plan.toml"), "").unwrap();
        std::os::unix::fs::symlink(root.join("plan.toml"), root.join("link")).unwrap();
        std::os::unix::fs::symlink(root.join("sub/toolhost.toml"), root.join("dangling")).unwrap();
        let set = Protected::new(&[
            entry(&root.join("plan.toml"), false, false),
            entry(&root.join("sub/toolhost.toml"), false, false),
            entry(&root.join("state"), true, true),
        ]);
        assert!(set.is_protected(&root.join("plan.toml")));
        assert!(set.is_protected(&root.join("./x/../plan.toml")));
        assert!(set.is_protected(&root.join("link")), "a link to a protected file");
        assert!(
            set.is_protected(&root.join("dangling")),
            "a dangling link to a missing one"
        );
        assert!(
            set.is_protected(&root.join("sub/toolhost.toml")),
            "not created yet"
        );
        assert!(set.is_secret(&root.join("state/http-1.token")));
        assert!(!set.is_secret(&root.join("plan.toml")));
        assert!(!set.is_protected(&root.join("state2")), "whole components");
        assert!(!set.is_protected(&root.join("other.toml")));
    }
}
