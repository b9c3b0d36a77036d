//! The third-party path, end to end: scaffold a module into a temporary
//! folder, run its own tests, validate it (which builds it in release),
//! mount it by explicit `path` next to the fixture module, and call its
//! tool through the real `toolhost` binary.
//!
//! The scaffold builds into `target/third-party` with the workspace's
//! Cargo.lock, so its dependencies compile once and are reused afterwards.

mod common;

use std::process::Command;

use common::{build, cargo, library, root, target_dir, validate, with_outcome};
use serde_json::Value;

#[test]
fn a_scaffolded_module_builds_validates_and_mounts() {
    build(&["toolhost-fixture", "toolhost"]);
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let dir = tmp.path().join("acme");
    let scaffold = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["new-module", "acme", "--dir"])
        .arg(&dir)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        scaffold.status.success(),
        "{}",
        String::from_utf8_lossy(&scaffold.stderr)
    );
    for file in [
        "Cargo.toml",
        "src/lib.rs",
        "src/word_count.rs",
        "README.md",
        "mount-plan.toml",
        "ci/validate-module.yml",
    ] {
        assert!(dir.join(file).is_file(), "{file} was not scaffolded");
    }
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_default();
    assert!(manifest.contains("toolhost-core = { path ="), "{manifest}");
    assert!(!manifest.contains("toolhost ="), "depends on toolhost-core only");
    // serde, serde_json and schemars come through toolhost-core's re-exports
    // (issue #19): an author's manifest names one crate.
    for other in ["schemars", "serde", "serde_json"] {
        assert!(
            !manifest
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("{other} "))),
            "the scaffold must not list {other}:\n{manifest}"
        );
    }
    std::fs::copy(root().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap_or_else(|e| panic!("{e}"));
    let module_target = target_dir().join("third-party");

    // Its own tests pass (release, to share the build below).
    let status = cargo()
        .args(["test", "--release", "--quiet"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", &module_target)
        .status()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(status.success(), "the scaffolded crate's tests fail");

    // validate-module on the crate folder: builds in release, everything passes.
    let output = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["validate-module", "--strict", "--format", "json"])
        .arg(&dir)
        .env("CARGO_TARGET_DIR", &module_target)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("no report ({e}): {}", String::from_utf8_lossy(&output.stderr)));
    assert_eq!(with_outcome(&report, "fail"), Vec::<String>::new(), "{report:#}");
    assert_eq!(with_outcome(&report, "warn"), Vec::<String>::new(), "{report:#}");
    assert_eq!(output.status.code(), Some(0));
    let so = module_target.join("release/libtoolhost_acme.so");
    assert!(so.is_file(), "{} was not built", so.display());

    // Validating the file gives the same verdict.
    let (code, _, _) = validate(&[so.to_string_lossy().as_ref(), "--strict"]);
    assert_eq!(code, 0);

    // Mount it by path next to the fixture, and call both through toolhost.
    let plan = tmp.path().join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "[host]\nworking_dir = \".\"\n\n[[tools]]\npath = {}\n\n[[tools]]\npath = {}\n[tools.config]\nmax_text_bytes = 4096\n",
            toml_string(&library("toolhost_fixture").to_string_lossy()),
            toml_string(&so.to_string_lossy()),
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let toolhost = target_dir().join("debug/toolhost");
    let call = |tool: &str, input: &str| -> (Option<i32>, Value) {
        let out = Command::new(&toolhost)
            .arg("--plan")
            .arg(&plan)
            .args(["call", tool, input])
            .current_dir(tmp.path())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", toolhost.display()));
        let result = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "toolhost call {tool}: no JSON ({e}): {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (out.status.code(), result)
    };
    let (code, result) = call("word_count", r#"{"text": "one two three\nfour"}"#);
    assert_eq!(code, Some(0), "{result:#}");
    assert_eq!(result["output"]["words"], 4, "{result:#}");
    assert_eq!(result["output"]["lines"], 2, "{result:#}");
    let (code, result) = call("echo", r#"{"message": "hi"}"#);
    assert_eq!(code, Some(0), "{result:#}");
    // The plan's config reached the module: 5000 bytes exceed max_text_bytes.
    let big = serde_json::json!({ "text": "x".repeat(5000) }).to_string();
    let (code, result) = call("word_count", &big);
    assert_eq!(code, Some(1));
    assert_eq!(result["status"], "validation_error", "{result:#}");
}

fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}
