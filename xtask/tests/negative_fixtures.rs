//! Each negative fixture fails the check that names its failure class, and
//! the validator itself survives panics, aborts and hangs.

mod common;

use common::{build, library, message, validate, with_outcome, FAST};

const FIXTURES: [&str; 10] = [
    "toolhost-bad-mount-panic",
    "toolhost-bad-duplicate-names",
    "toolhost-bad-invalid-schema",
    "toolhost-bad-missing-description",
    "toolhost-bad-panic-on-empty",
    "toolhost-bad-abort",
    "toolhost-bad-hang",
    "toolhost-fixture-abi-old",
    "toolhost-fixture-abi-mismatch",
    "toolhost-fixture-ctor-side-effect",
];

fn validate_bad(lib: &str) -> serde_json::Value {
    build(&FIXTURES);
    let path = library(lib);
    let path = path.to_string_lossy();
    let mut args = vec![path.as_ref()];
    args.extend(FAST);
    let (code, report, _) = validate(&args);
    assert_eq!(code, 1, "validate-module must exit 1 on {lib}: {report:#}");
    assert_eq!(report["ok"], false);
    report
}

fn assert_fails(report: &serde_json::Value, check: &str) {
    let failed = with_outcome(report, "fail");
    assert!(
        failed.iter().any(|f| f == check),
        "expected {check} to fail; failed: {failed:?}"
    );
}

#[test]
fn mount_panic_fails_mount() {
    let report = validate_bad("toolhost_bad_mount_panic");
    assert_fails(&report, "mount.mount");
    assert!(message(&report, "mount.mount", None).contains("panicked"));
    assert!(with_outcome(&report, "skip").contains(&"behaviour.empty_input".to_string()));
}

#[test]
fn duplicate_names_fail_names_unique() {
    let report = validate_bad("toolhost_bad_duplicate_names");
    assert_fails(&report, "names.unique");
    assert!(message(&report, "names.unique", None).contains("twin"));
}

#[test]
fn invalid_schema_fails_meta_schema() {
    let report = validate_bad("toolhost_bad_invalid_schema");
    assert_fails(&report, "input_schema.meta_schema [broken_schema]");
    assert!(message(&report, "input_schema.meta_schema", Some("broken_schema")).contains("strnig"));
}

#[test]
fn missing_descriptions_fail() {
    let report = validate_bad("toolhost_bad_missing_description");
    assert_fails(&report, "descriptions.present [mute]");
    assert_fails(&report, "input_schema.property_descriptions [mute]");
}

#[test]
fn panic_on_empty_input_fails_empty_input() {
    let report = validate_bad("toolhost_bad_panic_on_empty");
    assert_fails(&report, "behaviour.empty_input [fragile]");
    assert!(message(&report, "behaviour.empty_input", Some("fragile")).contains("panicked"));
}

#[test]
fn a_panic_on_the_empty_string_fails_boundary_inputs() {
    let report = validate_bad("toolhost_bad_panic_on_empty");
    assert_fails(&report, "behaviour.boundary_inputs [initial]");
    let found = message(&report, "behaviour.boundary_inputs", Some("initial"));
    assert!(
        found.contains("/word = \"\"") && found.contains("panicked"),
        "{found}"
    );
    // The other behaviour checks never try the empty string.
    for check in [
        "behaviour.empty_input",
        "behaviour.valid_inputs",
        "behaviour.wrong_types",
    ] {
        assert!(
            !with_outcome(&report, "fail").contains(&format!("{check} [initial]")),
            "{check} [initial] should pass: {report:#}"
        );
    }
}

#[test]
fn abort_fails_the_check_it_happened_in() {
    let report = validate_bad("toolhost_bad_abort");
    assert_fails(&report, "behaviour.empty_input [abort]");
    let m = message(&report, "behaviour.empty_input", Some("abort"));
    assert!(m.contains("SIGABRT") && m.contains("on {}"), "{m}");
    // The static checks ran in their own process and are unaffected.
    assert!(with_outcome(&report, "pass").contains(&"names.snake_case [abort]".to_string()));
}

#[test]
fn a_hang_fails_cancel() {
    let report = validate_bad("toolhost_bad_hang");
    assert_fails(&report, "behaviour.cancel [hang]");
    assert_fails(&report, "behaviour.empty_input [hang]");
    assert!(message(&report, "behaviour.cancel", Some("hang")).contains("ignored cancel"));
}

#[test]
fn an_old_abi_fails_abi_version() {
    for lib in ["toolhost_fixture_abi_old", "toolhost_fixture_abi_mismatch"] {
        let report = validate_bad(lib);
        assert_fails(&report, "loading.abi_version");
        assert!(with_outcome(&report, "skip").contains(&"mount.mount".to_string()));
    }
}

#[test]
fn a_foreign_library_fails_loading_without_running_its_constructor() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let marker = dir.path().join("constructor-ran");
    build(&FIXTURES);
    let path = library("toolhost_fixture_ctor_side_effect");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_xtask"))
        .arg("validate-module")
        .arg(&path)
        .args(FAST)
        .args(["--format", "json"])
        .env("TOOLHOST_FIXTURE_CTOR_MARKER", &marker)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}): {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    assert_eq!(output.status.code(), Some(1), "{report:#}");
    assert_fails(&report, "loading.library");
    assert!(message(&report, "loading.library", None).contains("is not a toolhost module"));
    assert!(
        !marker.exists(),
        "validate-module ran the constructor of a library that is not a module"
    );
}

#[test]
fn a_missing_file_is_a_usage_error() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["validate-module", "/nonexistent/libnothing.so"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("neither a library file nor a crate folder"));
}
