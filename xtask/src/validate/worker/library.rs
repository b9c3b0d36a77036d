//! Opening the library under test, one named step at a time.
//!
//! The opening itself is the host's ([`toolhost::loader::open_root`]): the
//! validator refuses exactly what `toolhost` refuses, and this file only
//! maps the kind of refusal to a check name.

use std::path::Path;

use toolhost::loader::{first_lines, open_root, ModuleError};
use toolhost_core::abi::{ModuleRef, ABI_VERSION};

use crate::validate::check::{names, CheckResult};

/// Opens `path` as toolhost does, handing a result to `report` for the
/// `loading.library` and `loading.abi_version` steps. `None` when it failed.
pub fn open(path: &Path, report: &mut dyn FnMut(CheckResult)) -> Option<ModuleRef> {
    match open_root(path, "under test") {
        Ok(module) => {
            report(CheckResult::pass(
                names::LOADING_LIBRARY,
                None,
                format!("{} exports a toolhost root module", path.display()),
            ));
            report(CheckResult::pass(
                names::LOADING_ABI_VERSION,
                None,
                format!("speaks toolhost ABI {ABI_VERSION}; layouts match this host"),
            ));
            Some(module)
        }
        Err(e) if e.is_not_a_module() => {
            report(CheckResult::fail(names::LOADING_LIBRARY, None, e.to_string()));
            None
        }
        Err(e) => {
            report(CheckResult::pass(
                names::LOADING_LIBRARY,
                None,
                format!("{} exports a toolhost root module", path.display()),
            ));
            let mut result = CheckResult::fail(names::LOADING_ABI_VERSION, None, e.to_string());
            if let ModuleError::AbiMismatch {
                report: Some(text), ..
            } = &e
            {
                result.details = vec![format!(
                    "abi_stable's layout report begins:\n{}",
                    first_lines(text, 20)
                )];
            }
            report(result);
            None
        }
    }
}
