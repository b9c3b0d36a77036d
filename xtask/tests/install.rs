//! `cargo xtask dist` and `cargo xtask install`: the tree they lay out
//! works from an unrelated folder with a clean environment.
//!
//! Packs the debug build already in target/ (`--debug --no-build`): the
//! README's test command builds the workspace first, and a cargo build
//! inside `cargo test` would wait on cargo's own lock.

use std::path::{Path, PathBuf};
use std::process::Command;

fn xtask(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .output()
        .expect("run xtask")
}

fn ok(out: &std::process::Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The installed toolhost, run in `cwd` with only PATH (no toolhost on it)
/// and a HOME with nothing in it.
fn installed(prefix: &Path, home: &Path, cwd: &Path, args: &[&str]) -> std::process::Output {
    Command::new(prefix.join("bin/toolhost"))
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", home)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run the installed toolhost")
}

#[test]
fn installed_toolhost_works_from_any_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let prefix = tmp.path().join("prefix");
    let home = tmp.path().join("home");
    let elsewhere = tmp.path().join("some/project");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();

    let stdout = ok(&xtask(&[
        "install",
        "--debug",
        "--no-build",
        "--prefix",
        prefix.to_str().unwrap(),
    ]));
    assert!(stdout.contains("installed toolhost under"), "{stdout}");
    for file in [
        "bin/toolhost",
        "lib/toolhost/libtoolhost_filesystem.so",
        "lib/toolhost/libtoolhost_bash.so",
        "lib/toolhost/libtoolhost_web.so",
        "lib/toolhost/toolhost-bash-reaper",
        "share/toolhost/mount-plans/default.toml",
        "share/toolhost/mount-plans/readonly.toml",
        "share/doc/toolhost/README.md",
        "share/doc/toolhost/LICENSE-MIT",
        "share/doc/toolhost/LICENSE-APACHE",
    ] {
        assert!(prefix.join(file).is_file(), "{file} was not installed");
    }

    // check: the built-in plan, modules from PREFIX/lib/toolhost.
    let out = installed(&prefix, &home, &elsewhere, &["check"]);
    let stdout = ok(&out);
    assert!(stdout.contains("plan: built-in default plan"), "{stdout}");
    let lib = prefix.join("lib/toolhost");
    for module in ["filesystem", "bash", "web"] {
        let from = format!("({}/libtoolhost_{module}.so)", lib.display());
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(&format!("ok    {module} ")) && l.contains(&from)),
            "{module} not mounted from {from}:\n{stdout}"
        );
    }

    // list and a call, in that folder.
    let stdout = ok(&installed(&prefix, &home, &elsewhere, &["list"]));
    for tool in ["read_file", "bash", "web_fetch"] {
        assert!(
            stdout.lines().any(|l| l.starts_with(tool)),
            "{tool} not listed:\n{stdout}"
        );
    }
    std::fs::write(elsewhere.join("notes.md"), "# Notes\nfirst line\n").unwrap();
    let stdout = ok(&installed(
        &prefix,
        &home,
        &elsewhere,
        &["call", "read_file", r#"{"file_path": "notes.md"}"#],
    ));
    let result: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(result["status"], "success", "{result}");
    assert!(result.to_string().contains("first line"), "{result}");
    // bash starts its commands under the reaper program installed beside it.
    let stdout = ok(&installed(
        &prefix,
        &home,
        &elsewhere,
        &[
            "call",
            "--yes",
            "bash",
            r#"{"command": "echo installed-reaper-ok"}"#,
        ],
    ));
    assert!(stdout.contains("installed-reaper-ok"), "{stdout}");

    // A second install over the first (toolhost replaced in place) works.
    ok(&xtask(&[
        "install",
        "--debug",
        "--no-build",
        "--prefix",
        prefix.to_str().unwrap(),
    ]));
    ok(&installed(&prefix, &home, &elsewhere, &["check"]));
}

#[test]
fn dist_packs_the_same_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let stdout = ok(&xtask(&[
        "dist",
        "--debug",
        "--no-build",
        "--out-dir",
        tmp.path().to_str().unwrap(),
    ]));
    let tarball = PathBuf::from(stdout.trim());
    assert!(tarball.is_file(), "{stdout}");
    let name = tarball
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .trim_end_matches(".tar.gz")
        .to_string();
    let platform = format!("-{}-{}", std::env::consts::ARCH, std::env::consts::OS);
    assert!(
        name.starts_with("toolhost-") && name.ends_with(&platform),
        "{name}"
    );

    // Unpack it and run the binary from the unpacked tree.
    let unpacked = tmp.path().join("unpacked");
    let file = std::fs::File::open(&tarball).unwrap();
    tar::Archive::new(flate2::read::GzDecoder::new(file))
        .unpack(&unpacked)
        .unwrap();
    let top = unpacked.join(&name);
    let mut entries: Vec<String> = walk(&top)
        .into_iter()
        .map(|p| p.strip_prefix(&top).unwrap().display().to_string())
        .collect();
    entries.sort();
    assert_eq!(
        entries,
        [
            "bin/toolhost",
            "lib/toolhost/libtoolhost_bash.so",
            "lib/toolhost/libtoolhost_filesystem.so",
            "lib/toolhost/libtoolhost_web.so",
            "lib/toolhost/toolhost-bash-reaper",
            "share/doc/toolhost/LICENSE-APACHE",
            "share/doc/toolhost/LICENSE-MIT",
            "share/doc/toolhost/README.md",
            "share/toolhost/mount-plans/default.toml",
            "share/toolhost/mount-plans/readonly.toml",
        ]
    );
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let stdout = ok(&installed(&top, &home, tmp.path(), &["check"]));
    assert!(stdout.contains("all 3 module(s) mounted"), "{stdout}");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
