//! Opening the library under test, one named step at a time.

use std::path::Path;

use abi_stable::library::{lib_header_from_path, LibraryError};
use toolhost_core::abi::{abi_series, loads_in_this_host, ModuleRef, ABI_VERSION};

use crate::validate::check::{names, CheckResult};

/// Opens `path` as toolhost does (`lib_header_from_path`, the 0.y rule,
/// then abi_stable's layout check), handing a result to `report` for the
/// `loading.library` and `loading.abi_version` steps. `None` when it failed.
pub fn open(path: &Path, report: &mut dyn FnMut(CheckResult)) -> Option<ModuleRef> {
    let header = match lib_header_from_path(path) {
        Ok(header) => header,
        Err(e) => {
            let message = match e {
                LibraryError::OpenError { err, .. } => {
                    format!("cannot load {}: {err}", path.display())
                }
                LibraryError::GetSymbolError { .. } => format!(
                    "{} exports no toolhost root module; build it with toolhost_core::export_module!",
                    path.display()
                ),
                other => first_lines(&other.to_string(), 3),
            };
            report(CheckResult::fail(names::LOADING_LIBRARY, None, message));
            return None;
        }
    };
    report(CheckResult::pass(
        names::LOADING_LIBRARY,
        None,
        format!("{} exports a toolhost root module", path.display()),
    ));

    let built_against = header.version_strings().version.as_str().to_string();
    let mismatch = format!(
        "built against toolhost-core {built_against}, but this toolhost speaks {ABI_VERSION}; \
         rebuild the module against toolhost-core {}",
        abi_series()
    );
    if !loads_in_this_host(&built_against) {
        report(CheckResult::fail(names::LOADING_ABI_VERSION, None, mismatch));
        return None;
    }
    match header.init_root_module::<ModuleRef>() {
        Ok(module) => {
            report(CheckResult::pass(
                names::LOADING_ABI_VERSION,
                None,
                format!("built against toolhost-core {built_against}; layouts match this host"),
            ));
            Some(module)
        }
        Err(LibraryError::AbiInstability(report_text)) => {
            let mut result = CheckResult::fail(
                names::LOADING_ABI_VERSION,
                None,
                format!(
                    "claims toolhost-core {built_against}, but its types do not match this host's \
                     layout: it was built against a modified toolhost-core"
                ),
            );
            result.details = vec![format!(
                "abi_stable's layout report begins:\n{}",
                first_lines(&report_text.to_string(), 20)
            )];
            report(result);
            None
        }
        Err(other) => {
            report(CheckResult::fail(
                names::LOADING_ABI_VERSION,
                None,
                format!("{mismatch} ({})", first_lines(&other.to_string(), 3)),
            ));
            None
        }
    }
}

/// At most `n` lines of `text` (abi_stable's reports run to thousands).
fn first_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().take(n).collect();
    let mut out = lines.join("\n");
    if text.lines().count() > n {
        out.push_str("\n…");
    }
    out
}
