//! `loading.*`: the library opens, speaks this host's ABI, and its manifest
//! has a valid name and a semver version.

use serde_json::Value;
use toolhost_core::Manifest;

use crate::validate::check::{names as n, CheckResult, Verdict};
use crate::validate::protocol::{Event, Job};
use crate::validate::worker::{library, sink::Sink};

/// The checks of the load group, in order.
pub const CHECKS: [&str; 4] = [
    n::LOADING_LIBRARY,
    n::LOADING_ABI_VERSION,
    n::LOADING_MANIFEST_NAME,
    n::LOADING_MANIFEST_VERSION,
];

/// Runs the load group.
pub fn run(job: &Job, sink: &Sink) {
    sink.begin(n::LOADING_LIBRARY, None, "open the library");
    let Some(module) = library::open(&job.library, &mut |r| sink.result(r)) else {
        for check in [n::LOADING_MANIFEST_NAME, n::LOADING_MANIFEST_VERSION] {
            sink.result(CheckResult::skip(check, None, "the library does not load"));
        }
        return;
    };
    sink.begin(n::LOADING_MANIFEST_NAME, None, "read the manifest");
    let text = (module.manifest())().into_string();
    let raw: Value = serde_json::from_str(&text).unwrap_or(Value::String(text.clone()));
    sink.send(&Event::Manifest { manifest: raw });
    let manifest: Manifest = match serde_json::from_str(&text) {
        Ok(m) => m,
        Err(e) => {
            let message = format!("the manifest is not a valid Manifest document: {e}");
            sink.result(CheckResult::fail(n::LOADING_MANIFEST_NAME, None, message.clone()));
            sink.result(CheckResult::fail(n::LOADING_MANIFEST_VERSION, None, message));
            return;
        }
    };
    sink.result(manifest_name(&manifest.name));
    sink.result(manifest_version(&manifest.version));
}

/// `loading.manifest_name`: lower-case letters, digits, `_` and `-`,
/// starting with a letter, at most 64 characters (it becomes part of the
/// library's file name, `libtoolhost_<name>.so`).
pub fn manifest_name(name: &str) -> CheckResult {
    let mut v = Verdict::new();
    let valid_chars = name
        .chars()
        .all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_' | '-'));
    if name.is_empty() {
        v.fail("the manifest's name is empty");
    } else if !valid_chars || !name.starts_with(|c: char| c.is_ascii_lowercase()) || name.len() > 64 {
        v.fail(format!(
            "the manifest's name '{name}' is not valid: use lower-case letters, digits, '_' or '-', \
             starting with a letter, at most 64 characters"
        ));
    }
    v.finish(n::LOADING_MANIFEST_NAME, None, format!("'{name}'"))
}

/// `loading.manifest_version`.
pub fn manifest_version(version: &str) -> CheckResult {
    match semver::Version::parse(version) {
        Ok(_) => CheckResult::pass(n::LOADING_MANIFEST_VERSION, None, version.to_string()),
        Err(e) => CheckResult::fail(
            n::LOADING_MANIFEST_VERSION,
            None,
            format!("the manifest's version '{version}' is not semver: {e}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::check::Outcome;

    #[test]
    fn manifest_rules() {
        assert_eq!(manifest_name("acme-tools").outcome, Outcome::Pass);
        assert_eq!(manifest_name("Acme").outcome, Outcome::Fail);
        assert_eq!(manifest_name("").outcome, Outcome::Fail);
        assert_eq!(manifest_version("0.1.0").outcome, Outcome::Pass);
        assert_eq!(manifest_version("1.0").outcome, Outcome::Fail);
    }
}
