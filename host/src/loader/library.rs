//! Opening a library and checking that it speaks our ABI, with short,
//! actionable errors instead of abi_stable's full layout report.

use std::path::Path;

use abi_stable::library::{lib_header_from_path, LibraryError};
use toolhost_core::abi::{abi_series, loads_in_this_host, ModuleRef, ABI_VERSION};
use toolhost_core::Manifest;

/// A library that passed every load-time check.
pub struct Library {
    /// The root module (manifest and mount).
    pub module: ModuleRef,
    /// What the library says about itself.
    pub manifest: Manifest,
}

/// Opens `path` with `lib_header_from_path` (never the per-type singleton
/// `load_from_file`, which would hand every later plugin the first one).
/// `label` names the module in messages.
pub fn open(path: &Path, label: &str) -> Result<Library, String> {
    let header = lib_header_from_path(path).map_err(|e| match e {
        LibraryError::OpenError { err, .. } => format!(
            "module '{label}': cannot load {}: {err}. Is it a shared library built for this platform?",
            path.display()
        ),
        LibraryError::GetSymbolError { .. } => format!(
            "module '{label}': {} is not a toolhost module (it exports no toolhost root module; \
             was it built with toolhost_core::export_module!?)",
            path.display()
        ),
        LibraryError::InvalidAbiHeader(header) => format!(
            "module '{label}': {} was built with an incompatible abi_stable ({header:?}); \
             rebuild it against toolhost-core {ABI_VERSION}",
            path.display()
        ),
        other => format!("module '{label}': cannot load {}: {other}", path.display()),
    })?;

    let built_against = header.version_strings().version.as_str().to_string();
    let mismatch = |detail: &str| {
        format!(
            "module '{label}' ({}) was built against toolhost-core {built_against}, but this host \
             speaks toolhost-core {ABI_VERSION}{detail}. Rebuild the module against toolhost-core {}.",
            path.display(),
            abi_series(),
        )
    };
    if !loads_in_this_host(&built_against) {
        return Err(mismatch(""));
    }

    let module = header.init_root_module::<ModuleRef>().map_err(|e| match e {
        LibraryError::AbiInstability(report) => {
            tracing::debug!(module = label, file = %path.display(), "abi_stable layout report:\n{report}");
            mismatch(
                ", and its types do not match this host's layout (it claims a compatible version, \
                 so it was built against a modified toolhost-core; RUST_LOG=debug shows the full report)",
            )
        }
        LibraryError::IncompatibleVersionNumber { .. } => mismatch(""),
        other => format!("module '{label}' ({}): {other}", path.display()),
    })?;
    let manifest_text = (module.manifest())();
    let manifest: Manifest = serde_json::from_str(manifest_text.as_str()).map_err(|e| {
        format!(
            "module '{label}' ({}): its manifest is not valid JSON: {e}",
            path.display()
        )
    })?;
    if semver::Version::parse(&manifest.version).is_err() {
        return Err(format!(
            "module '{label}' ({}): its version '{}' is not semver",
            path.display(),
            manifest.version
        ));
    }
    Ok(Library { module, manifest })
}
