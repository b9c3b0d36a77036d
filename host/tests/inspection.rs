//! A library is inspected before it is loaded (issue #20): a `.so` that is
//! not a toolhost module is refused from its ELF symbol table, so its
//! constructors never run during `check` or `list`.

mod common;

use std::path::Path;
use std::process::Command;

use common::{module_file, Env};

const MARKER_VAR: &str = "TOOLHOST_FIXTURE_CTOR_MARKER";

/// The fixture's constructor really does write its marker when the library
/// is loaded by the dynamic loader (here through `LD_PRELOAD` into `true`),
/// so a missing marker below means "not loaded", not "fixture broken".
#[test]
fn the_fixture_constructor_writes_its_marker_when_loaded() {
    let lib = module_file("toolhost_fixture_ctor_side_effect");
    let dir = tempfile::tempdir().expect("temp dir");
    let marker = dir.path().join("ran");
    let status = Command::new("true")
        .env("LD_PRELOAD", &lib)
        .env(MARKER_VAR, &marker)
        .status()
        .expect("run true");
    assert!(status.success());
    assert!(marker.is_file(), "LD_PRELOAD must run the fixture's constructor");
}

fn assert_refused_without_running(env: &Env, command: &str, marker: &Path) {
    let out = env
        .command()
        .arg(command)
        .env(MARKER_VAR, marker)
        .output()
        .expect("run toolhost");
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "`{command}` must fail: {all}");
    assert!(all.contains("is not a toolhost module"), "`{command}`: {all}");
    assert!(
        !marker.exists(),
        "`toolhost {command}` ran the constructor of a library that is not a module"
    );
}

#[test]
fn check_and_list_refuse_a_foreign_library_without_running_its_constructor() {
    let lib = module_file("toolhost_fixture_ctor_side_effect");
    let env = Env::new(&format!("[[tools]]\npath = \"{}\"\n", lib.display()));
    let marker = env.path().join("constructor-ran");
    assert_refused_without_running(&env, "check", &marker);
    assert_refused_without_running(&env, "list", &marker);
}

#[test]
fn files_that_are_not_shared_libraries_are_refused_by_the_parser() {
    let env = Env::new("");
    let text = env.path().join("libnotes.so");
    std::fs::write(&text, "not an ELF file\n").expect("write");
    // A (position-independent) executable parses as ELF but exports no root
    // module; it must not be mapped either.
    let exe = env!("CARGO_BIN_EXE_toolhost");
    for (path, expect) in [
        (text.display().to_string(), "not an object file"),
        (exe.to_string(), "is not a toolhost module"),
    ] {
        env.set_plan(&format!("[[tools]]\npath = \"{path}\"\n"));
        let out = env.run(&["check"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!out.status.success(), "{stdout}");
        assert!(stdout.contains(expect), "{path}: {stdout}");
    }
}

/// A FIFO (or any non-regular file) named as a module is refused at once
/// (the locator accepts only regular files, and the inspection opens
/// non-blocking and checks again), so `list` neither hangs waiting for a
/// writer nor reads an endless device.
#[test]
fn a_fifo_or_device_named_as_a_module_is_refused_without_hanging() {
    let dir = tempfile::tempdir().expect("temp dir");
    let fifo = dir.path().join("module.so");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("run mkfifo");
    assert!(made.success(), "mkfifo failed");
    for path in [fifo.as_path(), Path::new("/dev/zero")] {
        let env = Env::new(&format!("[[tools]]\npath = \"{}\"\n", path.display()));
        let mut child = env
            .command()
            .arg("list")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run toolhost");
        // Bounded wait: a hang (the old blocking open or a whole-file read of
        // /dev/zero) fails the test instead of stalling the suite.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break status;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                panic!("`toolhost list` hung on {}", path.display());
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let out = child.wait_with_output().expect("output");
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!status.success(), "{}: {all}", path.display());
        assert!(all.contains("not a regular file"), "{}: {all}", path.display());
    }
}
