//! Validates every first-party module that is built: the fixture must pass
//! (with its deliberately broken tools excluded, and failing without), the
//! others are reported.

mod common;

use common::{build, library, validate, with_outcome, FAST};

/// Fixture tools that misbehave on purpose, and the check each fails.
const DELIBERATE: [(&str, &str); 3] = [
    ("panic", "behaviour.empty_input [panic]"),
    ("stubborn_sleep", "behaviour.cancel [stubborn_sleep]"),
    ("shape", "behaviour.valid_inputs [shape]"),
];

#[test]
fn the_fixture_passes_without_its_deliberately_broken_tools() {
    build(&["toolhost-fixture"]);
    let path = library("toolhost_fixture").to_string_lossy().into_owned();
    let mut args = vec![path.as_str()];
    args.extend(FAST);
    for (tool, _) in DELIBERATE {
        args.extend(["--skip-tool", tool]);
    }
    let (code, report, _) = validate(&args);
    assert_eq!(with_outcome(&report, "fail"), Vec::<String>::new(), "{report:#}");
    assert_eq!(code, 0);
    assert_eq!(report["ok"], true);
    assert!(with_outcome(&report, "pass").contains(&"behaviour.cancel [sleep]".to_string()));
}

#[test]
fn the_fixtures_broken_tools_fail_where_expected() {
    build(&["toolhost-fixture"]);
    let path = library("toolhost_fixture").to_string_lossy().into_owned();
    let mut args = vec![path.as_str()];
    args.extend(FAST);
    let (code, report, _) = validate(&args);
    assert_eq!(code, 1);
    let failed = with_outcome(&report, "fail");
    for (_, check) in DELIBERATE {
        assert!(
            failed.contains(&check.to_string()),
            "{check} should fail: {failed:?}"
        );
    }
    let deliberate = |f: &String| {
        DELIBERATE
            .iter()
            .any(|(tool, _)| f.ends_with(&format!("[{tool}]")))
    };
    assert!(
        failed.iter().all(deliberate),
        "only the deliberately broken tools fail: {failed:?}"
    );
}

#[test]
fn junit_and_strict() {
    build(&["toolhost-fixture"]);
    let path = library("toolhost_fixture").to_string_lossy().into_owned();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args([
            "validate-module",
            &path,
            "--format",
            "junit",
            "--skip-tool",
            "stubborn_sleep",
        ])
        .args(FAST)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let xml = String::from_utf8_lossy(&output.stdout);
    assert!(xml.starts_with("<?xml"), "{xml}");
    assert!(
        xml.contains("<testcase name=\"behaviour.empty_input [panic]\" classname=\"validate-module.fixture.behaviour\""),
        "{xml}"
    );
    assert!(xml.contains("<failure "), "{xml}");
    assert!(
        xml.contains("<skipped message=\"excluded with --skip-tool\""),
        "{xml}"
    );
    assert_eq!(output.status.code(), Some(1));
}

/// Not an assertion on modules still being written: prints their scores.
#[test]
fn first_party_modules_are_validated() {
    for (package, lib) in [
        ("toolhost-filesystem", "toolhost_filesystem"),
        ("toolhost-bash", "toolhost_bash"),
        ("toolhost-web", "toolhost_web"),
    ] {
        let path = library(lib);
        assert!(
            path.exists(),
            "{} is missing: build the workspace first (`cargo xtask test` does)",
            path.display()
        );
        let path = path.to_string_lossy().into_owned();
        let mut args = vec![path.as_str()];
        args.extend(FAST);
        let (code, report, _) = validate(&args);
        let failed = with_outcome(&report, "fail");
        eprintln!(
            "{package}: {} (warn: {:?})",
            report["summary"],
            with_outcome(&report, "warn")
        );
        assert!(failed.is_empty(), "{package} fails validate-module: {failed:?}");
        assert_eq!(code, 0, "{package}: {}", report["summary"]);
    }
}
