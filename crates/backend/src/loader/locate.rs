//! Finding a module's library file by name on the module path.

use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
use std::path::{Path, PathBuf};

use super::error::ModuleError;

/// File names a module called `name` may have, most specific first:
/// `libtoolhost_<name>.so`, then `lib<name>.so` (dashes become underscores,
/// as cargo does for library names).
pub fn candidate_files(name: &str) -> [String; 2] {
    let stem = name.replace('-', "_");
    [
        format!("{DLL_PREFIX}toolhost_{stem}{DLL_SUFFIX}"),
        format!("{DLL_PREFIX}{stem}{DLL_SUFFIX}"),
    ]
}

/// The first existing candidate on `search`, or an error saying where it
/// looked and how to fix it.
pub fn find(name: &str, search: &[PathBuf]) -> Result<PathBuf, ModuleError> {
    let files = candidate_files(name);
    for dir in search {
        for file in &files {
            let path = dir.join(file);
            if path.is_file() {
                return Ok(path);
            }
        }
    }
    let dirs = if search.is_empty() {
        "no folders (module_path is empty and TOOLHOST_MODULE_PATH is unset)".to_string()
    } else {
        search
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    Err(ModuleError::NotFound {
        name: name.to_string(),
        looked_for: files.join(" or "),
        dirs,
    })
}

/// Whether `path` names an existing regular file.
pub fn exists(path: &Path) -> Result<(), ModuleError> {
    let reason = match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => return Ok(()),
        Ok(_) => "is not a regular file".to_string(),
        Err(e) => format!("cannot be read: {e}"),
    };
    Err(ModuleError::Unreadable {
        path: path.to_path_buf(),
        reason,
    })
}
