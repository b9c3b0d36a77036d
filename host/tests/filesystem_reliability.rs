//! Issue #20, the file failures, through the real binary and the real
//! cdylib: hard links to denied or outside files, files the user cannot
//! write, a root swapped for a symlink, "did you mean" through links, real
//! paths longer than PATH_MAX, and grep's memory on a huge line.

mod common;

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

use common::fs_lab::{Lab, SECRET};
use common::Called;
use serde_json::{json, Value};

/// The lab with `outside/secret.txt` and `project/hello.txt`.
fn lab(config: &str) -> Lab {
    let lab = Lab::folders(config);
    std::fs::write(lab.root().join("outside/secret.txt"), format!("{SECRET}\n")).unwrap();
    std::fs::write(lab.project().join("hello.txt"), "hello\n").unwrap();
    lab
}

fn text(called: &Called) -> String {
    called.assert_success().as_str().unwrap_or_default().to_string()
}

fn assert_no_secret(v: &impl ToString) {
    let s = v.to_string();
    assert!(!s.contains(SECRET), "leaked: {s}");
}

// ---------------------------------------------------------------- hard links

#[test]
fn hard_links_to_denied_or_outside_files_are_refused_unless_allowed() {
    let lab = lab("denied_paths = [\".env\"]");
    let p = lab.project();
    std::fs::write(p.join(".env"), format!("{SECRET} env\n")).unwrap();
    std::fs::hard_link(lab.root().join("outside/secret.txt"), p.join("notes.txt")).unwrap();
    std::fs::hard_link(p.join(".env"), p.join("src/config.txt")).unwrap();

    for path in ["notes.txt", "src/config.txt"] {
        let called = lab.call("read_file", json!({"file_path": path}));
        assert_eq!(called.status(), "policy_denied", "{path}: {}", called.result);
        assert_eq!(called.result["error"]["code"], "hard_link", "{}", called.result);
        called.assert_says("allow_hard_links");
        assert_no_secret(&called.result);
    }
    // grep and glob neither search nor list them, and say what they left out.
    let called = lab.call("grep", json!({"pattern": "SECRET", "output_mode": "content"}));
    let out = text(&called);
    assert_no_secret(&out);
    assert!(out.contains("2 hard-linked file(s) skipped"), "{out}");
    let called = lab.call("grep", json!({"pattern": "SECRET", "path": "notes.txt"}));
    assert_eq!(called.result["error"]["code"], "hard_link", "{}", called.result);
    let out = text(&lab.call("glob", json!({"pattern": "**/*.txt"})));
    assert!(!out.contains("notes.txt") && !out.contains("config.txt"), "{out}");
    assert!(out.contains("2 hard-linked file(s) left out"), "{out}");
    let out = text(&lab.call("list_directory", json!({"depth": 2})));
    assert!(out.contains("notes.txt (hard link, not served"), "{out}");
    // Writes and edits refuse them too (the guard off, so only the link stops it).
    lab.set_config("denied_paths = [\".env\"]\nrequire_read_before_write = false");
    let results = lab.batch(&[
        json!({"name": "write_file", "input": {"file_path": "notes.txt", "content": "x"}}),
        json!({"name": "edit_file", "input": {"file_path": "src/config.txt", "old_string": "TOP", "new_string": "x"}}),
    ]);
    for r in &results {
        assert_eq!(r["error"]["code"], "hard_link", "{r}");
        assert_no_secret(r);
    }
    assert_eq!(
        std::fs::read_to_string(lab.root().join("outside/secret.txt")).unwrap(),
        format!("{SECRET}\n")
    );
    // A plan that hard-links on purpose (a package store) opts in.
    lab.set_config("denied_paths = [\".env\"]\nallow_hard_links = true");
    assert!(text(&lab.call("read_file", json!({"file_path": "notes.txt"}))).contains(SECRET));
    let out = text(&lab.call("glob", json!({"pattern": "*.txt"})));
    assert!(out.contains("notes.txt"), "{out}");
}

// ------------------------------------------------------ files one cannot write

#[test]
fn write_and_edit_refuse_a_read_only_file_even_for_root() {
    let lab = lab("");
    let file = lab.project().join("locked.txt");
    std::fs::write(&file, "frozen\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444)).unwrap();
    let results = lab.batch(&[
        json!({"name": "read_file", "input": {"file_path": "locked.txt"}}),
        json!({"name": "write_file", "input": {"file_path": "locked.txt", "content": "thawed\n"}}),
        json!({"name": "edit_file", "input": {"file_path": "locked.txt", "old_string": "frozen", "new_string": "thawed"}}),
    ]);
    for r in &results[1..] {
        assert_eq!(r["error"]["code"], "permission_denied", "{r}");
        assert!(
            r["error"]["message"].as_str().unwrap().contains("not writable"),
            "{r}"
        );
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "frozen\n");
    let meta = std::fs::metadata(&file).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o444);
}

/// Another user's file is replaced only by a caller who may write it, and
/// keeps its owner; a user who may not write it in place cannot replace it
/// through a writable folder. Needs root (CI runs as root) to make files of
/// two users; without root it fails rather than skips.
#[test]
fn another_users_file_keeps_its_owner_or_is_not_replaced() {
    use std::os::unix::fs::{chown, MetadataExt};
    use std::os::unix::process::CommandExt;
    assert!(
        is_root(),
        "this test makes files of two users and must run as root (CI does)"
    );
    let lab = lab("");
    let nobody = 65534;
    // Root replacing a file of uid 65534 that its owner may write: the owner stays.
    let theirs = lab.project().join("theirs.txt");
    std::fs::write(&theirs, "v1\n").unwrap();
    chown(&theirs, Some(nobody), Some(nobody)).unwrap();
    let results = lab.batch(&[
        json!({"name": "read_file", "input": {"file_path": "theirs.txt"}}),
        json!({"name": "write_file", "input": {"file_path": "theirs.txt", "content": "v2\n"}}),
    ]);
    assert_eq!(results[1]["status"], "success", "{}", results[1]);
    let meta = std::fs::metadata(&theirs).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (nobody, nobody));
    assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "v2\n");

    // uid 65534 in a folder it may write, on a root-owned 0644 file: refused.
    for dir in [lab.root(), &lab.project()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let mine = lab.project().join("roots.txt");
    std::fs::write(&mine, "root's\n").unwrap();
    let calls = [
        json!({"name": "read_file", "input": {"file_path": "roots.txt"}}),
        json!({"name": "write_file", "input": {"file_path": "roots.txt", "content": "nobody's\n"}}),
        json!({"name": "write_file", "input": {"file_path": "new.txt", "content": "created\n"}}),
    ];
    let input: String = calls.iter().map(|c| format!("{c}\n")).collect();
    let mut cmd = lab.env.command();
    // Its own state folder, where it may create one.
    cmd.env("XDG_STATE_HOME", lab.root().join("state-65534"));
    cmd.arg("batch").arg("-").uid(nobody).gid(nobody);
    let out = run_with_stdin(cmd, &input);
    let results: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(results.len(), 3, "{out}");
    assert_eq!(results[1]["error"]["code"], "permission_denied", "{}", results[1]);
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "root's\n");
    assert_eq!(std::fs::metadata(&mine).unwrap().uid(), 0);
    // The same user may still create files in that folder.
    assert_eq!(results[2]["status"], "success", "{}", results[2]);
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn run_with_stdin(cmd: std::process::Command, input: &str) -> String {
    let out = common::output_with_stdin(cmd, input.as_bytes());
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        !stdout.is_empty(),
        "no output; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

// ------------------------------------------------------------- grep's memory

/// Peak resident memory (KiB) of one `toolhost call`, from wait4's rusage.
#[allow(clippy::zombie_processes)] // reaped by wait4, which std's Child cannot see
fn call_peak_rss_kib(lab: &Lab, tool: &str, input: Value) -> (Called, i64) {
    use std::process::Stdio;
    let mut cmd = lab.env.command();
    cmd.args(["call", tool, &input.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        use std::io::Read;
        let mut s = Vec::new();
        stdout.read_to_end(&mut s).unwrap();
        s
    });
    let err_reader = std::thread::spawn(move || {
        use std::io::Read;
        let mut s = Vec::new();
        stderr.read_to_end(&mut s).unwrap();
        s
    });
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child (its pid), with valid out-pointers.
    let waited = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(waited, child.id() as libc::pid_t, "wait4 failed");
    let stdout = reader.join().unwrap();
    let stderr = err_reader.join().unwrap();
    let called = Called {
        result: serde_json::from_slice(&stdout).unwrap_or_else(|e| {
            panic!(
                "{e}: {}\n{}",
                String::from_utf8_lossy(&stdout),
                String::from_utf8_lossy(&stderr)
            )
        }),
        code: libc::WEXITSTATUS(status),
        stderr: String::from_utf8_lossy(&stderr).to_string(),
    };
    (called, usage.ru_maxrss)
}

#[test]
fn grep_memory_does_not_grow_with_the_longest_line() {
    use std::io::Write;
    let lab = lab("");
    std::fs::write(lab.project().join("small.txt"), "needle here\n").unwrap();
    let (called, baseline) = call_peak_rss_kib(&lab, "grep", json!({"pattern": "needle"}));
    assert!(text(&called).contains("small.txt"));

    // One 400 MB line (deleted with the lab), then a short matching line.
    let big = lab.project().join("minified.js");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&big).unwrap());
    let chunk = vec![b'a'; 1 << 20];
    for _ in 0..400 {
        w.write_all(&chunk).unwrap();
    }
    w.write_all(b"\nneedle after the long line\n").unwrap();
    drop(w);
    let (called, peak) = call_peak_rss_kib(
        &lab,
        "grep",
        json!({"pattern": "needle", "output_mode": "content"}),
    );
    let out = text(&called);
    std::fs::remove_file(&big).unwrap();
    assert!(out.contains("small.txt:1:needle here"), "{out}");
    let growth_mib = (peak - baseline) / 1024;
    eprintln!("grep RSS: baseline {baseline} KiB, with a 400 MB line {peak} KiB");
    assert!(
        growth_mib < 64,
        "grep's peak memory grew by {growth_mib} MiB on a 400 MB line"
    );
    assert!(
        out.contains("not searched past a line longer than 8 MiB (first: minified.js)"),
        "{out}"
    );
}

// ------------------------------------------------------------ did you mean

#[test]
fn did_you_mean_leaks_nothing_from_a_denied_folder_behind_a_link() {
    let lab = lab("");
    let p = lab.project();
    std::fs::create_dir_all(p.join(".git")).unwrap();
    std::fs::write(p.join(".git/id_ed25519"), format!("{SECRET}\n")).unwrap();
    symlink(".git", p.join("gitlink")).unwrap();
    let called = lab.call("read_file", json!({"file_path": "gitlink/id_ed2551"}));
    assert_eq!(called.status(), "error", "{}", called.result);
    assert!(
        !called.message().contains("id_ed25519") && !called.message().contains("did you mean"),
        "a denied folder's names leaked: {}",
        called.message()
    );
    // A dangling link is not offered as the file it fails to name.
    symlink("nowhere.txt", p.join("dangling.txt")).unwrap();
    let called = lab.call("read_file", json!({"file_path": "dangling.txt"}));
    assert_eq!(called.result["error"]["code"], "not_found", "{}", called.result);
    assert!(!called.message().contains("did you mean"), "{}", called.message());
    // Ordinary misspellings still get their hint.
    let called = lab.call("read_file", json!({"file_path": "helo.txt"}));
    called.assert_says("did you mean hello.txt?");
}

// ------------------------------------------------------------ past PATH_MAX

/// `project/deep/A…/` (12 levels of 200-byte names) holds a link `l2` to
/// `B…/.git/hooks` (13 more levels) and `l3` to `B…/.git/config`; the
/// project links `l1` to the first part. `l1/l2` is short to type but
/// really lies more than 4096 bytes deep, where /proc cannot name it.
fn deep_lab() -> (Lab, PathBuf, String) {
    let lab = lab("");
    let first: PathBuf = std::iter::repeat_n("a".repeat(200), 12).collect();
    let dir12 = lab.project().join("deep").join(&first);
    std::fs::create_dir_all(&dir12).unwrap();
    let second: String = vec!["b".repeat(200); 13].join("/");
    let status = std::process::Command::new("mkdir")
        .current_dir(&dir12)
        .args(["-p", &format!("{second}/.git/hooks")])
        .status()
        .unwrap();
    assert!(status.success());
    let status = std::process::Command::new("sh")
        .current_dir(&dir12)
        .args(["-c", &format!("printf '{SECRET}\\n' > {second}/.git/config")])
        .status()
        .unwrap();
    assert!(status.success());
    symlink(format!("{second}/.git/hooks"), dir12.join("l2")).unwrap();
    symlink(format!("{second}/.git/config"), dir12.join("l3")).unwrap();
    symlink(Path::new("deep").join(&first), lab.project().join("l1")).unwrap();
    let real_len = lab.project().join("deep").join(&first).as_os_str().len() + second.len() + 12;
    assert!(real_len > 4096, "the lab is not deep enough: {real_len}");
    (lab, dir12, second)
}

#[test]
fn denied_paths_hold_past_path_max() {
    let (lab, dir12, second) = deep_lab();
    let results = lab.batch(&[
        json!({"name": "read_file", "input": {"file_path": "l1/l3"}}),
        json!({"name": "write_file", "input": {"file_path": "l1/l2/pre-commit", "content": "#!/bin/sh\necho pwned\n"}}),
        json!({"name": "list_directory", "input": {"path": "l1/l2"}}),
    ]);
    for r in &results {
        assert_eq!(r["status"], "policy_denied", "{r}");
        assert_no_secret(r);
    }
    let planted = std::process::Command::new("test")
        .current_dir(&dir12)
        .args(["-e", &format!("{second}/.git/hooks/pre-commit")])
        .status()
        .unwrap();
    assert!(!planted.success(), "a hook was written into .git/hooks");
    // A deep folder that is not denied is still reachable through the link.
    let status = std::process::Command::new("sh")
        .current_dir(&dir12)
        .args([
            "-c",
            &format!("mkdir {second}/ok && printf 'deep ok\\n' > {second}/ok/f.txt"),
        ])
        .status()
        .unwrap();
    assert!(status.success());
    symlink(format!("{second}/ok"), dir12.join("l4")).unwrap();
    let results = lab.batch(&[
        json!({"name": "list_directory", "input": {"path": "l1/l4"}}),
        json!({"name": "write_file", "input": {"file_path": "l1/l4/new.txt", "content": "new\n"}}),
    ]);
    for r in &results {
        assert_eq!(r["status"], "success", "{r}");
    }
    assert!(results[0]["output"].as_str().unwrap().contains("f.txt"));
}
