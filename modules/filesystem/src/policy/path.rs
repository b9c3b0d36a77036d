//! Input path hygiene and lexical resolution: what a path *says*, before any
//! file system call looks at what it *is*.

use std::borrow::Cow;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use toolhost_core::ToolError;

/// Longest path accepted, in bytes (Linux's PATH_MAX).
pub const MAX_PATH_BYTES: usize = 4096;
/// Longest single name accepted, in bytes (Linux's NAME_MAX).
pub const MAX_NAME_BYTES: usize = 255;

/// Refuses paths that cannot name a file honestly: empty, NUL bytes,
/// overlong, or wrapped in whitespace or quotes (a model's copy slip that
/// would otherwise name a different file).
pub fn check_input(field: &str, raw: &str) -> Result<(), ToolError> {
    if raw.is_empty() {
        return Err(ToolError::invalid_input(format!(
            "{field} is empty; pass a file path"
        )));
    }
    if raw.contains('\0') {
        return Err(ToolError::invalid_input(format!(
            "{field} contains a NUL byte, which no file name can hold; remove it"
        )));
    }
    if raw.len() > MAX_PATH_BYTES {
        return Err(ToolError::invalid_input(format!(
            "{field} is {} bytes long; the limit is {MAX_PATH_BYTES}",
            raw.len()
        )));
    }
    if let Some(long) = Path::new(raw)
        .components()
        .find(|c| c.as_os_str().len() > MAX_NAME_BYTES)
    {
        return Err(ToolError::invalid_input(format!(
            "{field} has a {}-byte name; the limit is {MAX_NAME_BYTES} bytes per name",
            long.as_os_str().len()
        )));
    }
    if raw.trim() != raw {
        return Err(ToolError::invalid_input(format!(
            "{field} {raw:?} starts or ends with whitespace; pass the path without it"
        )));
    }
    let quoted = |q: char| raw.starts_with(q) || raw.ends_with(q);
    if quoted('"') || quoted('\'') || quoted('`') {
        return Err(ToolError::invalid_input(format!(
            "{field} {raw:?} is wrapped in quotes; pass the bare path"
        )));
    }
    Ok(())
}

/// Expands a leading `~` or `~/` and makes the path absolute against `base`.
/// `~user` is refused rather than guessed.
pub fn absolutize(raw: &str, base: &Path, home: Option<&Path>) -> Result<PathBuf, ToolError> {
    let joined = if raw == "~" || raw.starts_with("~/") {
        let home = home.ok_or_else(|| {
            ToolError::invalid_input(format!(
                "cannot expand ~ in {raw:?}: HOME is not set; use an absolute path"
            ))
        })?;
        home.join(raw.trim_start_matches('~').trim_start_matches('/'))
    } else if raw.starts_with('~') {
        return Err(ToolError::invalid_input(format!(
            "{raw:?}: only `~` and `~/…` are expanded (not `~user`); use an absolute path"
        )));
    } else {
        base.join(raw)
    };
    if is_normal(&joined) {
        return Ok(joined);
    }
    Ok(normalize(&joined))
}

/// Whether `path` is already what [`normalize`] makes of it: absolute, with
/// no empty, `.` or `..` component and no trailing `/`.
pub fn is_normal(path: &Path) -> bool {
    let bytes = path.as_os_str().as_bytes();
    match bytes {
        b"/" => true,
        [b'/', rest @ ..] => rest
            .split(|&b| b == b'/')
            .all(|c| !c.is_empty() && c != b"." && c != b".."),
        _ => false,
    }
}

/// [`normalize`], borrowing a path that is already normal.
pub fn normalized(path: &Path) -> Cow<'_, Path> {
    if is_normal(path) {
        Cow::Borrowed(path)
    } else {
        Cow::Owned(normalize(path))
    }
}

/// Removes `.` and resolves `..` lexically (never above `/`). Symlinks are
/// not consulted here: the handle-relative open refuses any that escape.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::Normal(name) => out.push(name),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// `path` below `root`, compared component by component (never by string
/// prefix: `/x/project2` is not inside `/x/project`).
pub fn below(path: &Path, root: &Path) -> Option<PathBuf> {
    path.strip_prefix(root).ok().map(Path::to_path_buf)
}

/// The path as shown to the model: relative to the working dir when inside
/// it, absolute otherwise.
pub fn display(path: &Path, working_dir: &Path) -> String {
    match path.strip_prefix(working_dir) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => path.to_string_lossy().into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_siblings_are_not_inside() {
        let root = Path::new("/x/project");
        for sibling in [
            "/x/project2",
            "/x/project_backup",
            "/x/project.bak",
            "/x/projectile",
        ] {
            assert!(below(Path::new(sibling), root).is_none(), "{sibling}");
        }
        assert_eq!(below(Path::new("/x/project/a"), root), Some(PathBuf::from("a")));
        assert_eq!(below(Path::new("/x/project"), root), Some(PathBuf::new()));
    }

    #[test]
    fn normalizes_dots_lexically() {
        assert_eq!(
            normalize(Path::new("/a/b/../../../etc/./passwd")),
            PathBuf::from("/etc/passwd")
        );
        let base = Path::new("/w");
        assert_eq!(absolutize("../etc", base, None).ok(), Some(PathBuf::from("/etc")));
        assert_eq!(
            absolutize("~/../../etc/passwd", base, Some(Path::new("/home/u"))).ok(),
            Some(PathBuf::from("/etc/passwd"))
        );
        assert!(absolutize("~root/.ssh", base, Some(Path::new("/home/u"))).is_err());
        assert_eq!(
            absolutize("./~/x", base, None).ok(),
            Some(PathBuf::from("/w/~/x"))
        );
    }

    #[test]
    fn normal_paths_are_recognized() {
        for p in ["/", "/a", "/a/b.c", "/a/..b/.c"] {
            assert!(is_normal(Path::new(p)), "{p}");
            assert_eq!(normalize(Path::new(p)), PathBuf::from(p));
        }
        for p in ["", "a", "/a/", "//a", "/a//b", "/./a", "/a/.", "/a/../b", "/.."] {
            assert!(!is_normal(Path::new(p)), "{p}");
            assert_eq!(normalized(Path::new(p)).as_ref(), normalize(Path::new(p)));
        }
    }

    #[test]
    fn rejects_dirty_inputs() {
        for bad in ["", "a\0b", "a ", " a", "\"a\"", "'a'", "`a`"] {
            assert!(check_input("file_path", bad).is_err(), "{bad:?}");
        }
        assert!(check_input("file_path", &"a".repeat(5000)).is_err());
        assert!(check_input("file_path", &"a".repeat(300)).is_err());
        assert!(check_input("file_path", "src/main.rs").is_ok());
    }
}
