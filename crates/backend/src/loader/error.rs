//! Why a plan entry did not load, as a kind callers branch on.
//!
//! The host prints the message; `xtask validate-module` maps the kind to
//! its check names (`loading.library`, `loading.abi_version`, …), so the two
//! never disagree on what counts as "not a module" or "wrong ABI".

use std::path::PathBuf;

use toolhost_core::abi::{abi_series, ABI_VERSION};

/// One plan entry that could not be found, opened, checked or mounted.
#[derive(Debug, thiserror::Error)]
pub enum ModuleError {
    /// No candidate file on the module path.
    #[error(
        "module '{name}' not found: looked for {looked_for} in {dirs}. Build the module (cargo build --release), \
         add its folder to host.module_path or TOOLHOST_MODULE_PATH, or give `path = \"…\"` in the plan"
    )]
    NotFound {
        /// The plan's module name.
        name: String,
        /// The file names tried.
        looked_for: String,
        /// The folders searched, as shown.
        dirs: String,
    },
    /// The plan's `path` cannot be read as a regular file.
    #[error("module file {} {reason}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The file is not a shared library of this platform (checked before any
    /// of its code runs).
    #[error("module '{label}': cannot load {}: {detail}. Is it a shared library built for this platform?", path.display())]
    NotALibrary {
        /// The entry's label.
        label: String,
        /// The file.
        path: PathBuf,
        /// What the parser or the dynamic loader said.
        detail: String,
    },
    /// A shared library without the toolhost root module symbol; it was not
    /// loaded, so none of its constructors ran.
    #[error(
        "module '{label}': {} is not a toolhost module (it exports no toolhost root module; \
         was it built with toolhost_core::export_module!?)",
        path.display()
    )]
    NoRootModule {
        /// The entry's label.
        label: String,
        /// The file.
        path: PathBuf,
    },
    /// The library speaks another ABI version.
    #[error(
        "module '{label}' ({}) was built against toolhost ABI {built_against}, but this host speaks \
         toolhost ABI {host}{}. Rebuild the module against a toolhost-core release that speaks ABI {series}.",
        path.display(), layout_note(*.layout_differs),
        host = ABI_VERSION, series = abi_series()
    )]
    AbiMismatch {
        /// The entry's label.
        label: String,
        /// The file.
        path: PathBuf,
        /// The ABI version the library declares.
        built_against: String,
        /// Whether the version matched but abi_stable's layout check failed.
        layout_differs: bool,
        /// abi_stable's full layout report (thousands of lines; logged at
        /// debug, never shown by default).
        report: Option<String>,
    },
    /// abi_stable refused the library for another reason.
    #[error("module '{label}' ({}): {detail}", path.display())]
    Abi {
        /// The entry's label.
        label: String,
        /// The file.
        path: PathBuf,
        /// abi_stable's message.
        detail: String,
    },
    /// The manifest is missing, malformed, or does not fit the plan.
    #[error("module '{label}' ({}): {detail}", path.display())]
    Manifest {
        /// The entry's label.
        label: String,
        /// The file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// An isolated module's worker could not be started or mounted; the
    /// message names the entry already.
    #[error(transparent)]
    Isolated(#[from] crate::isolate::error::SupervisorError),
    /// A mounted MCP server could not be connected to, initialized or
    /// listed; the message names the entry already.
    #[error(transparent)]
    McpSource(#[from] crate::source::mcp::error::SourceError),
    /// The module's `mount` (or a tool spec it registered) failed.
    #[error("module '{label}': {detail}")]
    Mount {
        /// The entry's label.
        label: String,
        /// What failed.
        detail: String,
    },
}

fn layout_note(layout_differs: bool) -> &'static str {
    if layout_differs {
        ", and its types do not match this host's layout (it claims a compatible version, \
         so it was built against a modified toolhost-core; RUST_LOG=debug shows the full report)"
    } else {
        ""
    }
}

impl ModuleError {
    /// Whether the library was refused before its ABI was judged (not a
    /// file, not a library, no root module): `validate-module`'s
    /// `loading.library` step.
    pub fn is_not_a_module(&self) -> bool {
        matches!(
            self,
            ModuleError::NotFound { .. }
                | ModuleError::Unreadable { .. }
                | ModuleError::NotALibrary { .. }
                | ModuleError::NoRootModule { .. }
        )
    }
}
