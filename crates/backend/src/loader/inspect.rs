//! Looking at a library before loading it.
//!
//! `dlopen` runs a library's constructors (`.init_array`) before the host
//! can ask whether it is a toolhost module at all, so a plan naming any
//! `.so` would run that file's code during `check` or `list`. Reading the
//! ELF dynamic symbol table first, with a parser and without mapping the
//! file for execution, refuses such files before any of their code runs.

use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use object::{Object, ObjectKind, ObjectSymbol};

use super::error::ModuleError;

/// The symbol every toolhost library exports (abi_stable's mangled name of
/// the root module loader; `export_module!` emits it).
pub const ROOT_MODULE_SYMBOL: &str = abi_stable::library::ROOT_MODULE_LOADER_NAME;

/// Checks that `path` is a shared library exporting the toolhost root
/// module, without executing anything from it.
pub fn exports_root_module(path: &Path, label: &str) -> Result<(), ModuleError> {
    let not_a_library = |detail: String| ModuleError::NotALibrary {
        label: label.to_string(),
        path: path.to_path_buf(),
        detail,
    };
    // Non-blocking, so a FIFO named as a module cannot hang the open; only
    // a regular file is read, and only the parts the parser asks for (the
    // headers and the dynamic symbol table, not a 9 MB library whole:
    // reading it all cost `toolhost list` milliseconds per module).
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| not_a_library(e.to_string()))?;
    let meta = opened.metadata().map_err(|e| not_a_library(e.to_string()))?;
    if !meta.is_file() {
        return Err(not_a_library("it is not a regular file".into()));
    }
    let cache = object::ReadCache::new(opened);
    let file = object::File::parse(&cache).map_err(|e| not_a_library(format!("not an object file ({e})")))?;
    if file.kind() != ObjectKind::Dynamic {
        return Err(not_a_library(format!(
            "it is a {:?} object, not a shared library",
            file.kind()
        )));
    }
    // Exported = a defined, global entry of the dynamic symbol table (what
    // `dlsym` would find).
    let exported = file.dynamic_symbols().any(|symbol| {
        symbol.is_definition()
            && symbol.is_global()
            && symbol.name_bytes().ok() == Some(ROOT_MODULE_SYMBOL.as_bytes())
    });
    if exported {
        return Ok(());
    }
    Err(ModuleError::NoRootModule {
        label: label.to_string(),
        path: path.to_path_buf(),
    })
}
