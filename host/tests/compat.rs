//! ABI compatibility across SDK releases.
//!
//! The ABI has its own version, apart from toolhost-core's crate version: a
//! module loads in every host that speaks the ABI version it was built
//! against, and is refused with one short paragraph by any other. ABI 0.2
//! added the per-call state method to the context (and 0.3 the granted one
//! to the coordinator), so a module built against the first SDK release
//! (toolhost-core 0.1.0, ABI 0.1, frozen
//! under fixtures/sdk-0.1.0) is refused and must be rebuilt.

mod common;

use common::{module_file, Env};

#[test]
fn a_module_built_against_the_previous_abi_is_refused_with_a_rebuild_hint() {
    let lib = module_file("toolhost_fixture_compat_sdk_0_1_0");
    let env = Env::new(&format!("[[tools]]\npath = \"{}\"\n", lib.display()));
    let out = env.run(&["call", "shout", r#"{"text": "still here"}"#]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let paragraph: Vec<&str> = stderr.lines().filter(|l| l.contains("toolhost ABI")).collect();
    assert_eq!(paragraph.len(), 1, "{stderr}");
    assert!(
        paragraph[0]
            .contains("was built against toolhost ABI 0.1.0, but this host speaks toolhost ABI 0.3.0"),
        "{stderr}"
    );
    assert!(paragraph[0].contains("Rebuild the module against a toolhost-core release that speaks ABI 0.3"));
}

#[test]
fn a_module_built_against_another_abi_version_gets_one_paragraph() {
    let env = Env::new(&format!(
        "[[tools]]\npath = \"{}\"\n",
        module_file("toolhost_fixture_abi_old").display()
    ));
    let out = env.run(&["call", "anything", "{}"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let paragraph: Vec<&str> = stderr.lines().filter(|l| l.contains("toolhost ABI")).collect();
    assert_eq!(paragraph.len(), 1, "{stderr}");
    assert!(
        paragraph[0]
            .contains("was built against toolhost ABI 0.0.7, but this host speaks toolhost ABI 0.3.0"),
        "{stderr}"
    );
    assert!(paragraph[0].contains("Rebuild the module against a toolhost-core release that speaks ABI 0.3"));
    assert!(
        stderr.lines().count() < 5,
        "one paragraph, not a report:\n{stderr}"
    );
}
