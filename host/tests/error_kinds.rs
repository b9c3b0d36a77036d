//! Start-up errors as the user reads them, after the host's `String`
//! errors became kinds (issue #19 item 5): an isolated module's worker
//! that reports its own failure is quoted as is (it already names the
//! module), and one that hangs in its first mount is killed at the start
//! deadline with a message that says so. Real `toolhost check`, real
//! worker processes, real libraries.

mod common;

use common::{module_file, Env};

/// The line of `toolhost check`'s output that names `needle`.
fn line_with(out: &std::process::Output, needle: &str) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{text}"))
        .to_string()
}

/// A shared library that is not a toolhost module, run in a worker: the
/// worker's own refusal reaches the user once, not wrapped in a second
/// "module '…':" (the supervisor used to decide that by looking at the
/// message's first words).
#[test]
fn a_workers_own_report_is_quoted_once() {
    let library = module_file("toolhost_fixture_ctor_side_effect");
    let env = Env::new(&format!(
        "[[tools]]\npath = \"{}\"\nisolation = \"process\"\n",
        library.display()
    ));
    let out = env.run(&["check"]);
    assert!(!out.status.success(), "check passed on a non-module");
    let line = line_with(&out, "is not a toolhost module");
    assert_eq!(line.matches("module '").count(), 1, "{line}");
    assert!(
        line.contains("module 'libtoolhost_fixture_ctor_side_effect.so': "),
        "{line}"
    );
}

/// A worker whose first mount hangs is killed at the start deadline, and
/// the plan's check says so in full.
#[test]
fn a_first_mount_that_hangs_is_killed_and_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("hang-mount");
    std::fs::write(&marker, "").expect("marker");
    let env = Env::new(&format!(
        "[[tools]]\npath = \"{}\"\nisolation = \"process\"\n[tools.config]\nhang_mount_if = \"{}\"\n",
        module_file("toolhost_fixture_crashy").display(),
        marker.display()
    ));
    let out = env
        .command()
        .arg("check")
        .env("TOOLHOST_WORKER_START_TIMEOUT_MS", "300")
        .output()
        .expect("run toolhost check");
    assert!(!out.status.success(), "check passed with a hung mount");
    let line = line_with(&out, "did not finish");
    assert!(
        line.contains(
            "module 'libtoolhost_fixture_crashy.so': its worker did not finish opening and mounting \
             the library within 300 ms, so the host killed it"
        ),
        "{line}"
    );
}
