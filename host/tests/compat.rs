//! ABI compatibility across SDK releases (issue #19 item 4).
//!
//! The ABI has its own version, apart from toolhost-core's crate version: a
//! module built against the previous SDK release (toolhost-core 0.1.0,
//! frozen under fixtures/sdk-0.1.0) must load and work in today's host, and
//! a module built against another ABI version must be refused with one
//! short paragraph.

mod common;

use common::{module_file, Env};
use serde_json::json;

#[test]
fn a_module_built_against_the_previous_sdk_release_loads_and_works() {
    let lib = module_file("toolhost_fixture_compat_sdk_0_1_0");
    let env = Env::new(&format!("[[tools]]\npath = \"{}\"\n", lib.display()));
    let out = env.run(&["check"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("ok    compat_v010 0.1.0"), "{stdout}");

    let called = env.call("shout", json!({"text": "still here"}));
    let output = called.assert_success();
    assert_eq!(output["text"], "STILL HERE");
    assert_eq!(output["sdk"], "0.1.0");

    // Its input is still validated by today's host from the old schema.
    let refused = env.call("shout", json!({"text": 7}));
    assert_eq!(refused.status(), "validation_error", "{}", refused.result);
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
            .contains("was built against toolhost ABI 0.0.7, but this host speaks toolhost ABI 0.1.0"),
        "{stderr}"
    );
    assert!(paragraph[0].contains("Rebuild the module against a toolhost-core release that speaks ABI 0.1"));
    assert!(
        stderr.lines().count() < 5,
        "one paragraph, not a report:\n{stderr}"
    );
}
