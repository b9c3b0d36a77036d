//! Opening a library and checking that it speaks our ABI, with short,
//! actionable errors instead of abi_stable's full layout report.
//!
//! The host and `xtask validate-module` both open libraries through
//! [`open_root`], so they refuse the same files for the same reasons.

use std::path::Path;

use abi_stable::library::{lib_header_from_path, LibraryError};
use toolhost_core::abi::{loads_in_this_host, ModuleRef};
use toolhost_core::Manifest;

use super::error::ModuleError;
use super::inspect;

/// A library that passed every load-time check.
pub struct Library {
    /// The root module (manifest and mount).
    pub module: ModuleRef,
    /// What the library says about itself.
    pub manifest: Manifest,
}

/// Inspects `path` (no code runs until it is known to export the toolhost
/// root module), then opens it with `lib_header_from_path` (never the
/// per-type singleton `load_from_file`, which would hand every later plugin
/// the first one), applies the 0.y rule and abi_stable's layout check.
/// `label` names the module in messages.
pub fn open_root(path: &Path, label: &str) -> Result<ModuleRef, ModuleError> {
    inspect::exports_root_module(path, label)?;
    let header = lib_header_from_path(path).map_err(|e| match e {
        LibraryError::OpenError { err, .. } => ModuleError::NotALibrary {
            label: label.to_string(),
            path: path.to_path_buf(),
            detail: err.to_string(),
        },
        LibraryError::GetSymbolError { .. } => ModuleError::NoRootModule {
            label: label.to_string(),
            path: path.to_path_buf(),
        },
        other => ModuleError::Abi {
            label: label.to_string(),
            path: path.to_path_buf(),
            detail: first_lines(&other.to_string(), 3),
        },
    })?;

    let built_against = header.version_strings().version.as_str().to_string();
    let mismatch = |layout_differs: bool, report: Option<String>| ModuleError::AbiMismatch {
        label: label.to_string(),
        path: path.to_path_buf(),
        built_against: built_against.clone(),
        layout_differs,
        report,
    };
    if !loads_in_this_host(&built_against) {
        return Err(mismatch(false, None));
    }
    header.init_root_module::<ModuleRef>().map_err(|e| match e {
        LibraryError::AbiInstability(report) => {
            let report = report.to_string();
            tracing::debug!(module = label, file = %path.display(), "abi_stable layout report:\n{report}");
            mismatch(true, Some(report))
        }
        LibraryError::IncompatibleVersionNumber { .. } => mismatch(false, None),
        other => ModuleError::Abi {
            label: label.to_string(),
            path: path.to_path_buf(),
            detail: first_lines(&other.to_string(), 3),
        },
    })
}

/// [`open_root`], then the manifest: valid JSON with a semver version.
pub fn open(path: &Path, label: &str) -> Result<Library, ModuleError> {
    let module = open_root(path, label)?;
    let manifest_error = |detail: String| ModuleError::Manifest {
        label: label.to_string(),
        path: path.to_path_buf(),
        detail,
    };
    let manifest_text = (module.manifest())();
    let manifest: Manifest = serde_json::from_str(manifest_text.as_str())
        .map_err(|e| manifest_error(format!("its manifest is not valid JSON: {e}")))?;
    if semver::Version::parse(&manifest.version).is_err() {
        return Err(manifest_error(format!(
            "its version '{}' is not semver",
            manifest.version
        )));
    }
    Ok(Library { module, manifest })
}

/// At most `n` lines of `text` (abi_stable's reports run to thousands).
pub fn first_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().take(n).collect();
    let mut out = lines.join("\n");
    if text.lines().count() > n {
        out.push_str("\n…");
    }
    out
}
