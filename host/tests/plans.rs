//! Every ready plan in mount-plans/ loads and offers what it promises.

mod common;

use std::path::PathBuf;

use common::{target_dir, Called};
use serde_json::json;

fn plan(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../mount-plans")
        .join(name)
}

fn toolhost(plan_file: &PathBuf, dir: &std::path::Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_toolhost"));
    cmd.arg("--plan")
        .arg(plan_file)
        .current_dir(dir)
        .env("TOOLHOST_MODULE_PATH", target_dir())
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::null());
    cmd
}

fn tools(plan_file: &PathBuf, dir: &std::path::Path) -> Vec<String> {
    let out = toolhost(plan_file, dir)
        .args(["list", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    listed
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn every_plan_passes_check() {
    let dir = tempfile::tempdir().unwrap();
    let plans = std::fs::read_dir(plan("")).unwrap();
    let mut seen = 0;
    for entry in plans {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let out = toolhost(&path, dir.path()).arg("check").output().unwrap();
            assert!(
                out.status.success(),
                "{} fails check:\n{}\n{}",
                path.display(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            seen += 1;
        }
    }
    assert!(seen >= 2);
}

#[test]
fn the_default_plan_reads_files_asks_before_bash_and_keeps_quiet() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    let default = plan("default.toml");
    let names = tools(&default, dir.path());
    for tool in [
        "read_file",
        "write_file",
        "edit_file",
        "list_directory",
        "glob",
        "grep",
        "bash",
        "web_fetch",
    ] {
        assert!(names.contains(&tool.to_string()), "{tool} missing: {names:?}");
    }
    assert!(
        !names.contains(&"web_search".to_string()),
        "no search backend is configured"
    );

    let out = toolhost(&default, dir.path())
        .args(["call", "read_file", r#"{"file_path": "notes.txt"}"#])
        .output()
        .unwrap();
    let called = Called::from_output(out);
    let text = called.assert_success().to_string();
    assert!(text.contains("alpha") && text.contains("beta"), "{text}");
    assert!(
        called.stderr.trim().is_empty(),
        "a plain call logs nothing: {}",
        called.stderr
    );

    // bash is irreversible: asked about, so refused with nobody to ask…
    let out = toolhost(&default, dir.path())
        .args(["call", "bash", r#"{"command": "echo hi"}"#])
        .output()
        .unwrap();
    assert_eq!(Called::from_output(out).status(), "approval_required");
    // …and run when approved.
    let out = toolhost(&default, dir.path())
        .args(["call", "Bash", r#"{"command": "echo hi"}"#, "--approve", "bash"])
        .output()
        .unwrap();
    let called = Called::from_output(out);
    assert!(called.assert_success().to_string().contains("hi"));

    // The .git folder is denied even inside the working folder.
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    std::fs::write(dir.path().join(".git/config"), "[core]\n").unwrap();
    let out = toolhost(&default, dir.path())
        .args(["call", "read_file", r#"{"file_path": ".git/config"}"#])
        .output()
        .unwrap();
    assert_eq!(Called::from_output(out).status(), "policy_denied");
}

#[test]
fn the_readonly_plan_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("keep.txt"), "original\n").unwrap();
    let readonly = plan("readonly.toml");
    let names = tools(&readonly, dir.path());
    assert!(names.contains(&"read_file".to_string()) && !names.contains(&"bash".to_string()));
    let out = toolhost(&readonly, dir.path())
        .args([
            "call",
            "write_file",
            &json!({"file_path": "new.txt", "content": "x"}).to_string(),
        ])
        .output()
        .unwrap();
    assert_eq!(Called::from_output(out).status(), "policy_denied");
    assert!(!dir.path().join("new.txt").exists());
    let out = toolhost(&readonly, dir.path())
        .args(["call", "read_file", r#"{"file_path": "keep.txt"}"#])
        .output()
        .unwrap();
    Called::from_output(out).assert_success();
}
