//! The filesystem module through the real binary and the real cdylib:
//! the escape-proof path policy (prefix siblings, symlinks out, swapped
//! folders, traversal, `~`, NUL, /proc/self/root, FIFOs, deny over allow),
//! the read-before-write guard, edits and the search tools.

mod common;

use std::io::Write;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::fs_lab::{Lab, SECRET};
use common::Called;
use serde_json::{json, Value};

/// The lab laid out for attacks: `project/` is the allowed working dir;
/// its prefix siblings and `outside/` each hold a `secret.txt`.
fn attack_lab(config: &str) -> Lab {
    let lab = Lab::folders(config);
    let root = lab.root();
    for dir in [
        "outside/sub",
        "project2",
        "project_backup",
        "project.bak",
        "projectile",
    ] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    for dir in [
        "outside",
        "outside/sub",
        "project2",
        "project_backup",
        "project.bak",
        "projectile",
    ] {
        std::fs::write(root.join(dir).join("secret.txt"), format!("{SECRET} in {dir}\n")).unwrap();
    }
    std::fs::write(root.join("project/hello.txt"), "hello\nworld\n").unwrap();
    std::fs::write(
        root.join("project/src/main.rs"),
        "fn main() {\n    println!(\"hi\");\n}\n",
    )
    .unwrap();
    lab
}

/// Asserts a refusal with `status` that leaks nothing of the secret.
fn assert_refused(called: &Called, status: &str) {
    assert_eq!(called.status(), status, "expected {status}: {}", called.result);
    assert_eq!(called.code, 1);
    let text = called.result.to_string();
    assert!(!text.contains(SECRET), "the answer leaked the target: {text}");
    assert!(!called.message().is_empty());
}

fn output_text(called: &Called) -> String {
    match &called.assert_success() {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

// ---------------------------------------------------------------- read_file

#[test]
fn read_file_numbers_lines_and_pages() {
    let lab = attack_lab("");
    let text = output_text(&lab.call("read_file", json!({"file_path": "src/main.rs"})));
    assert!(
        text.starts_with("     1\tfn main() {\n     2\t    println!(\"hi\");\n     3\t}\n"),
        "{text}"
    );
    // The alias and an absolute path work the same.
    let abs = lab.project().join("hello.txt");
    let text = output_text(&lab.call("Read", json!({"file_path": abs, "offset": 2, "limit": 1})));
    assert_eq!(text.lines().next(), Some("     2\tworld"));
    // Paging hint names the next offset.
    let many: String = (1..=50).map(|i| format!("line {i}\n")).collect();
    std::fs::write(lab.project().join("many.txt"), many).unwrap();
    let text = output_text(&lab.call(
        "read_file",
        json!({"file_path": "many.txt", "offset": 10, "limit": 5}),
    ));
    assert!(text.contains("    14\tline 14"), "{text}");
    assert!(!text.contains("line 15\n"), "{text}");
    assert!(text.contains("offset=15"), "{text}");
    // Past the end is a validation error that says how long the file is.
    let called = lab.call("read_file", json!({"file_path": "many.txt", "offset": 99}));
    assert_eq!(called.status(), "validation_error");
    called.assert_says("50 lines");
}

#[test]
fn read_file_missing_file_suggests_the_closest_name() {
    let lab = attack_lab("");
    let called = lab.call("read_file", json!({"file_path": "src/mian.rs"}));
    assert_eq!(called.status(), "error");
    assert_eq!(called.result["error"]["code"], "not_found");
    called.assert_says("did you mean src/main.rs?");
}

#[test]
fn read_file_refuses_prefix_siblings() {
    let lab = attack_lab("");
    for sibling in ["project2", "project_backup", "project.bak", "projectile"] {
        for path in [
            format!("../{sibling}/secret.txt"),
            lab.root().join(sibling).join("secret.txt").display().to_string(),
        ] {
            let called = lab.call("read_file", json!({"file_path": path}));
            assert_refused(&called, "policy_denied");
            called.assert_says("allowed_read_paths");
        }
    }
}

#[test]
fn read_file_refuses_traversal_absolute_tilde_and_proc_root() {
    let lab = attack_lab("");
    let outside = lab.root().join("outside/secret.txt");
    let proc_root = format!("/proc/self/root{}", outside.display());
    for path in [
        "../outside/secret.txt".to_string(),
        "src/../../outside/secret.txt".to_string(),
        outside.display().to_string(),
        "/etc/passwd".to_string(),
        "~/.bashrc".to_string(),
        format!("~/{}", "../".repeat(20) + "etc/passwd"),
        proc_root,
        "/proc/self/root/etc/passwd".to_string(),
    ] {
        assert_refused(
            &lab.call("read_file", json!({"file_path": path})),
            "policy_denied",
        );
    }
    // A symlink to /proc/self/root inside the project does not help either.
    symlink("/proc/self/root", lab.project().join("rootlink")).unwrap();
    let via = format!("rootlink{}", outside.display());
    assert_refused(&lab.call("read_file", json!({"file_path": via})), "policy_denied");
    // `~user` is refused rather than guessed; a folder literally named `~` is fine.
    assert_refused(
        &lab.call("read_file", json!({"file_path": "~root/.profile"})),
        "validation_error",
    );
    std::fs::create_dir(lab.project().join("~")).unwrap();
    std::fs::write(lab.project().join("~/note.txt"), "tilde folder\n").unwrap();
    assert!(
        output_text(&lab.call("read_file", json!({"file_path": "./~/note.txt"}))).contains("tilde folder")
    );
}

#[test]
fn read_file_rejects_nul_quotes_whitespace_and_overlong_paths() {
    let lab = attack_lab("");
    for path in [
        "hello.txt\u{0}../../outside/secret.txt".to_string(),
        "\"hello.txt\"".to_string(),
        "'hello.txt'".to_string(),
        "hello.txt ".to_string(),
        " hello.txt".to_string(),
        "../outside/secret.txt ".to_string(),
        "a/".repeat(2100),
        "x".repeat(300),
    ] {
        assert_refused(
            &lab.call("read_file", json!({"file_path": path})),
            "validation_error",
        );
    }
    // The file the trailing-space trick aimed at still reads fine without it.
    assert!(output_text(&lab.call("read_file", json!({"file_path": "hello.txt"}))).contains("hello"));
}

#[test]
fn read_file_does_not_follow_symlinks_out() {
    let lab = attack_lab("");
    let p = lab.project();
    symlink(lab.root().join("outside/secret.txt"), p.join("link_file")).unwrap();
    symlink(lab.root().join("outside"), p.join("link_dir")).unwrap();
    symlink("../outside/secret.txt", p.join("rel_link")).unwrap();
    symlink("../../outside", p.join("src/parent_link")).unwrap();
    symlink(lab.root().join("outside/nothing.txt"), p.join("dangling")).unwrap();
    for path in [
        "link_file",
        "link_dir/secret.txt",
        "link_dir/sub/secret.txt",
        "rel_link",
        "dangling",
        "link_dir",
    ] {
        let called = lab.call("read_file", json!({"file_path": path}));
        assert_refused(&called, "policy_denied");
        assert!(
            called.message().contains("symbolic link"),
            "{path}: {}",
            called.message()
        );
    }
    // A symlinked parent folder that climbs out is refused too.
    assert_refused(
        &lab.call("read_file", json!({"file_path": "src/parent_link/secret.txt"})),
        "policy_denied",
    );
    // Links that stay inside are followed.
    symlink("hello.txt", p.join("inner_link")).unwrap();
    symlink(p.join("src"), p.join("abs_inner_dir")).unwrap();
    assert!(output_text(&lab.call("read_file", json!({"file_path": "inner_link"}))).contains("world"));
    assert!(
        output_text(&lab.call("read_file", json!({"file_path": "abs_inner_dir/main.rs"})))
            .contains("fn main")
    );
}

#[test]
fn denied_paths_beat_allowed_paths_even_through_links() {
    let lab = attack_lab("denied_paths = [\".env*\", \"./private\", \".git\"]");
    let p = lab.project();
    std::fs::write(p.join(".env"), format!("{SECRET}\n")).unwrap();
    std::fs::write(p.join(".env.local"), format!("{SECRET}\n")).unwrap();
    std::fs::create_dir_all(p.join("private")).unwrap();
    std::fs::write(p.join("private/key.pem"), format!("{SECRET}\n")).unwrap();
    std::fs::create_dir_all(p.join(".git")).unwrap();
    std::fs::write(p.join(".git/config"), format!("{SECRET}\n")).unwrap();
    symlink(".env", p.join("innocent.txt")).unwrap();
    symlink("private", p.join("public")).unwrap();
    for (path, rule) in [
        (".env", ".env*"),
        ("src/../.env.local", ".env*"),
        ("private/key.pem", "./private"),
        (".git/config", ".git"),
        ("innocent.txt", ".env*"),
        ("public/key.pem", "./private"),
    ] {
        let called = lab.call("read_file", json!({"file_path": path}));
        assert_refused(&called, "policy_denied");
        assert!(called.message().contains(rule), "{path}: {}", called.message());
    }
    // A denied path that does not exist gets the same answer as one that does.
    let missing = lab.call("read_file", json!({"file_path": ".env.missing"}));
    assert_refused(&missing, "policy_denied");
}

#[test]
fn allowed_read_paths_are_honoured_by_components() {
    let lab = attack_lab("allowed_read_paths = [\"src\", \"../project2\"]");
    assert!(output_text(&lab.call("read_file", json!({"file_path": "src/main.rs"}))).contains("fn main"));
    // project2 is explicitly allowed: readable; its prefix sibling project_backup is not.
    let called = lab.call("read_file", json!({"file_path": "../project2/secret.txt"}));
    assert!(output_text(&called).contains("project2"));
    assert_refused(
        &lab.call("read_file", json!({"file_path": "../project_backup/secret.txt"})),
        "policy_denied",
    );
    // The working dir itself is no longer allowed.
    assert_refused(
        &lab.call("read_file", json!({"file_path": "hello.txt"})),
        "policy_denied",
    );
}

#[test]
fn read_file_refuses_a_fifo_promptly() {
    let lab = attack_lab("");
    let fifo = lab.project().join("pipe");
    let c = std::ffi::CString::new(fifo.display().to_string()).unwrap();
    // SAFETY: mkfifo on a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let started = Instant::now();
    let called = lab.call("read_file", json!({"file_path": "pipe"}));
    assert!(started.elapsed() < Duration::from_secs(10), "a FIFO read hung");
    assert_eq!(called.status(), "error", "{}", called.result);
    called.assert_says("FIFO");
}

#[test]
fn read_file_binary_non_utf8_huge_file_and_huge_line() {
    let lab = attack_lab("max_read_bytes = 65536");
    let p = lab.project();
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend_from_slice(&[0u8; 100]);
    std::fs::write(p.join("img.png"), &png).unwrap();
    let called = lab.call("read_file", json!({"file_path": "img.png"}));
    assert_eq!(called.status(), "error");
    called.assert_says("PNG image");
    called.assert_says("108 bytes");

    std::fs::write(p.join("latin1.txt"), b"caf\xe9 au lait\nok\n").unwrap();
    let text = output_text(&lab.call("read_file", json!({"file_path": "latin1.txt"})));
    assert!(
        text.contains("caf\u{fffd} au lait") && text.contains("not valid UTF-8"),
        "{text}"
    );

    // 200 MB in one line: answered quickly, cut with a marker, bounded output.
    let f = std::fs::File::create(p.join("one_line.txt")).unwrap();
    f.set_len(0).unwrap();
    let mut w = std::io::BufWriter::new(f);
    let chunk = vec![b'a'; 1 << 20];
    for _ in 0..200 {
        w.write_all(&chunk).unwrap();
    }
    drop(w);
    let started = Instant::now();
    let called = lab.call("read_file", json!({"file_path": "one_line.txt"}));
    let text = output_text(&called);
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(text.len() < 10_000, "{}", text.len());
    assert!(
        text.contains("line cut at 2000 characters"),
        "{}",
        &text[text.len().saturating_sub(300)..]
    );

    // A file of 300k lines: the default window is 2000 lines, then the byte cap.
    let lines: String = (1..=300_000).map(|i| format!("row {i:>60}\n")).collect();
    std::fs::write(p.join("big.txt"), lines).unwrap();
    let text = output_text(&lab.call("read_file", json!({"file_path": "big.txt"})));
    assert!(text.len() <= 66_000, "{}", text.len());
    assert!(text.contains("max_read_bytes"), "{}", &text[text.len() - 200..]);
    let text = output_text(&lab.call(
        "read_file",
        json!({"file_path": "big.txt", "offset": 299_999, "limit": 5}),
    ));
    assert!(
        text.contains("299999\trow") && text.contains("300000\trow"),
        "{text}"
    );
}

#[test]
fn read_file_on_a_folder_lists_it() {
    let lab = attack_lab("");
    symlink(lab.root().join("outside"), lab.project().join("out_link")).unwrap();
    let text = output_text(&lab.call("read_file", json!({"file_path": "."})));
    assert!(text.contains("hello.txt") && text.contains("src/"), "{text}");
    assert!(text.contains("out_link (symlink, not followed)"), "{text}");
    assert!(!text.contains("secret"), "{text}");
}

// ------------------------------------------------------- write_file / edit_file

fn status(result: &Value) -> &str {
    result["status"].as_str().unwrap_or("")
}

fn message(result: &Value) -> String {
    result["error"]["message"].as_str().unwrap_or("").to_string()
}

/// Every file below `dir`, for "nothing landed outside" checks.
fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

fn outside_untouched(lab: &Lab) {
    let files = files_below(&lab.root().join("outside"));
    assert_eq!(
        files,
        vec![
            lab.root().join("outside/secret.txt"),
            lab.root().join("outside/sub/secret.txt")
        ],
        "something landed outside"
    );
    for f in files {
        assert!(
            std::fs::read_to_string(&f).unwrap().starts_with(SECRET),
            "{} was changed",
            f.display()
        );
    }
}

#[test]
fn write_file_creates_and_replaces_atomically_keeping_the_mode() {
    use std::os::unix::fs::PermissionsExt;
    let lab = attack_lab("");
    let out = output_text(&lab.call(
        "Write",
        json!({"file_path": "new/deeper/file.txt", "content": "a\nb\n"}),
    ));
    assert!(out.starts_with("created new/deeper/file.txt"), "{out}");
    assert_eq!(
        std::fs::read_to_string(lab.project().join("new/deeper/file.txt")).unwrap(),
        "a\nb\n"
    );
    let script = lab.project().join("run.sh");
    std::fs::write(&script, "echo old\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o751)).unwrap();
    let results = lab.batch(&[
        json!({"name": "read_file", "input": {"file_path": "run.sh"}}),
        json!({"name": "create_file", "input": {"path": "run.sh", "content": "echo new\n"}}),
    ]);
    assert_eq!(status(&results[1]), "success", "{}", results[1]);
    assert!(results[1]["output"]
        .as_str()
        .unwrap()
        .starts_with("replaced run.sh"));
    assert_eq!(std::fs::read_to_string(&script).unwrap(), "echo new\n");
    assert_eq!(
        std::fs::metadata(&script).unwrap().permissions().mode() & 0o7777,
        0o751
    );
    // No temp files are left behind.
    let leftovers: Vec<_> = files_below(&lab.project())
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(".toolhost-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn read_before_write_guard() {
    let lab = attack_lab("");
    // Each `toolhost call` is a new process: nothing was read in it.
    let called = lab.call(
        "write_file",
        json!({"file_path": "hello.txt", "content": "clobbered"}),
    );
    assert_eq!(called.status(), "policy_denied");
    called.assert_says("read_file");
    let called = lab.call(
        "edit_file",
        json!({"file_path": "hello.txt", "old_string": "hello", "new_string": "bye"}),
    );
    assert_eq!(called.status(), "policy_denied");
    assert_eq!(
        std::fs::read_to_string(lab.project().join("hello.txt")).unwrap(),
        "hello\nworld\n"
    );
    // In one process: read, then write and edit succeed.
    let results = lab.batch(&[
        json!({"name": "read_file", "input": {"file_path": "hello.txt"}}),
        json!({"name": "edit_file", "input": {"file_path": "hello.txt", "old_string": "hello", "new_string": "bye"}}),
        json!({"name": "write_file", "input": {"file_path": "src/main.rs", "content": "fn main() {}\n"}}),
    ]);
    assert_eq!(status(&results[1]), "success", "{}", results[1]);
    assert!(
        results[1]["output"].as_str().unwrap().contains("-hello\n+bye"),
        "{}",
        results[1]
    );
    assert_eq!(
        status(&results[2]),
        "policy_denied",
        "src/main.rs was never read: {}",
        results[2]
    );
    assert_eq!(
        std::fs::read_to_string(lab.project().join("hello.txt")).unwrap(),
        "bye\nworld\n"
    );
    // With the guard off, a blind overwrite is allowed.
    lab.set_config("require_read_before_write = false");
    lab.call(
        "write_file",
        json!({"file_path": "hello.txt", "content": "blind\n"}),
    )
    .assert_success();
}

#[test]
fn writes_never_follow_links_out_or_create_anything_outside() {
    let lab = attack_lab("");
    let p = lab.project();
    symlink(lab.root().join("outside/secret.txt"), p.join("link_file")).unwrap();
    symlink(lab.root().join("outside"), p.join("link_dir")).unwrap();
    symlink(
        lab.root().join("outside/created_by_attack.txt"),
        p.join("dangling"),
    )
    .unwrap();
    symlink("../../outside", p.join("src/parent_link")).unwrap();
    let attempts = [
        "link_file",
        "dangling",
        "link_dir/new.txt",
        "link_dir/secret.txt",
        "link_dir/sub/deeper/new.txt",
        "src/parent_link/new.txt",
        "../outside/new.txt",
        "../project2/new.txt",
        "../projectile/secret.txt",
        "/proc/self/root/tmp/escaped.txt",
    ];
    for path in attempts {
        let mut calls = vec![json!({"name": "read_file", "input": {"file_path": path}})];
        calls.push(json!({"name": "write_file", "input": {"file_path": path, "content": "pwned"}}));
        calls.push(json!({"name": "edit_file", "input": {"file_path": path, "old_string": "TOP", "new_string": "pwned"}}));
        let results = lab.batch(&calls);
        for r in &results[1..] {
            assert_eq!(status(r), "policy_denied", "{path}: {r}");
            assert!(!r.to_string().contains(SECRET), "{r}");
        }
    }
    outside_untouched(&lab);
    for sibling in ["project2", "project_backup", "project.bak", "projectile"] {
        assert_eq!(
            files_below(&lab.root().join(sibling)).len(),
            1,
            "{sibling} changed"
        );
    }
    assert!(std::fs::symlink_metadata(p.join("dangling"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(!Path::new("/tmp/escaped.txt").exists());
}

#[test]
fn writes_respect_allowed_write_paths_and_denied_paths() {
    let lab = attack_lab("allowed_write_paths = [\"src\"]\ndenied_paths = [\".env*\"]");
    let called = lab.call("write_file", json!({"file_path": "notes.txt", "content": "x"}));
    assert_refused(&called, "policy_denied");
    called.assert_says("allowed_write_paths");
    assert!(!lab.project().join("notes.txt").exists());
    lab.call("write_file", json!({"file_path": "src/new.rs", "content": "x"}))
        .assert_success();
    let called = lab.call("write_file", json!({"file_path": "src/.env", "content": "x"}));
    assert_refused(&called, "policy_denied");
    assert!(called.message().contains(".env*"));
    assert!(!lab.project().join("src/.env").exists());
}

#[test]
fn write_and_edit_refuse_a_fifo_promptly() {
    let lab = attack_lab("require_read_before_write = false");
    let fifo = lab.project().join("pipe");
    let c = std::ffi::CString::new(fifo.display().to_string()).unwrap();
    // SAFETY: mkfifo on a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let started = Instant::now();
    let w = lab.call("write_file", json!({"file_path": "pipe", "content": "x"}));
    let e = lab.call(
        "edit_file",
        json!({"file_path": "pipe", "old_string": "a", "new_string": "b"}),
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    for called in [w, e] {
        assert_eq!(called.status(), "error", "{}", called.result);
        called.assert_says("FIFO");
    }
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo_like());
}

trait IsFifo {
    fn is_fifo_like(&self) -> bool;
}
impl IsFifo for std::fs::FileType {
    fn is_fifo_like(&self) -> bool {
        use std::os::unix::fs::FileTypeExt;
        self.is_fifo()
    }
}

#[test]
fn edit_file_keeps_crlf_and_explains_uniqueness() {
    let lab = attack_lab("");
    let p = lab.project();
    std::fs::write(p.join("win.txt"), "first\r\nsecond\r\nthird\r\n").unwrap();
    std::fs::write(p.join("dup.txt"), "a\nfoo\nb\nfoo\nc\nfoo\n").unwrap();
    std::fs::write(
        p.join("code.rs"),
        "fn main() {\n    let total = compute(1, 2);\n}\n",
    )
    .unwrap();
    let results = lab.batch(&[
        json!({"name": "read_file", "input": {"file_path": "win.txt"}}),
        json!({"name": "read_file", "input": {"file_path": "dup.txt"}}),
        json!({"name": "read_file", "input": {"file_path": "code.rs"}}),
        json!({"name": "Edit", "input": {"file_path": "win.txt", "old_string": "first\nsecond\n", "new_string": "1st\n2nd\n"}}),
        json!({"name": "edit_file", "input": {"file_path": "dup.txt", "old_string": "foo", "new_string": "bar"}}),
        json!({"name": "edit_file", "input": {"file_path": "code.rs", "old_string": "let totl = compute(1, 2);", "new_string": "x"}}),
        json!({"name": "edit_file", "input": {"file_path": "dup.txt", "old_string": "foo", "new_string": "bar", "replace_all": true}}),
    ]);
    assert_eq!(status(&results[3]), "success", "{}", results[3]);
    assert_eq!(
        std::fs::read(p.join("win.txt")).unwrap(),
        b"1st\r\n2nd\r\nthird\r\n"
    );
    assert_eq!(status(&results[4]), "validation_error");
    let m = message(&results[4]);
    assert!(m.contains("3 times") && m.contains("lines 2, 4, 6"), "{m}");
    assert_eq!(status(&results[5]), "validation_error");
    let m = message(&results[5]);
    assert!(
        m.contains("not found") && m.contains("     2\t    let total = compute(1, 2);"),
        "{m}"
    );
    assert_eq!(status(&results[6]), "success", "{}", results[6]);
    assert_eq!(
        std::fs::read_to_string(p.join("dup.txt")).unwrap(),
        "a\nbar\nb\nbar\nc\nbar\n"
    );
    assert_eq!(
        std::fs::read_to_string(p.join("code.rs")).unwrap(),
        "fn main() {\n    let total = compute(1, 2);\n}\n"
    );
}

#[test]
fn edit_file_refuses_binary_and_non_utf8_and_many_edits_lose_nothing() {
    let lab = attack_lab("");
    let p = lab.project();
    std::fs::write(p.join("latin1.txt"), b"caf\xe9\n").unwrap();
    let slots: String = (0..12).map(|i| format!("slot{i}=old\n")).collect();
    std::fs::write(p.join("slots.txt"), slots).unwrap();
    let mut calls = vec![
        json!({"name": "read_file", "input": {"file_path": "latin1.txt"}}),
        json!({"name": "edit_file", "input": {"file_path": "latin1.txt", "old_string": "caf", "new_string": "tea"}}),
        json!({"name": "read_file", "input": {"file_path": "slots.txt"}}),
    ];
    for i in 0..12 {
        calls.push(json!({"name": "edit_file", "input": {"file_path": "slots.txt", "old_string": format!("slot{i}=old"), "new_string": format!("slot{i}=new")}}));
    }
    let results = lab.batch(&calls);
    assert_eq!(status(&results[1]), "validation_error");
    assert!(message(&results[1]).contains("not valid UTF-8"), "{}", results[1]);
    assert_eq!(std::fs::read(p.join("latin1.txt")).unwrap(), b"caf\xe9\n");
    for r in &results[3..] {
        assert_eq!(status(r), "success", "{r}");
    }
    let after = std::fs::read_to_string(p.join("slots.txt")).unwrap();
    assert_eq!(
        after,
        (0..12).map(|i| format!("slot{i}=new\n")).collect::<String>()
    );
}

#[test]
fn race_swapping_a_folder_for_a_symlink_never_lands_outside() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let lab = attack_lab("");
    let p = lab.project();
    let outside = lab.root().join("outside");
    std::fs::create_dir(p.join("swap")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        let (swap, parked) = (p.join("swap"), p.join("swap_parked"));
        std::thread::spawn(move || {
            let mut swaps = 0u32;
            while !stop.load(Ordering::Relaxed) && swaps < 2_000_000 {
                // Real folder out, symlink to outside in, and back.
                let _ = std::fs::rename(&swap, &parked);
                let _ = symlink(&outside, &swap);
                std::thread::yield_now();
                let _ = std::fs::remove_file(&swap);
                let _ = std::fs::remove_dir(&swap);
                let _ = std::fs::rename(&parked, &swap);
                swaps += 1;
            }
            swaps
        })
    };
    let calls: Vec<Value> = (0..300)
        .map(|i| json!({"name": "write_file", "input": {"file_path": format!("swap/f{i}.txt"), "content": "race"}}))
        .collect();
    let mut denied = 0;
    let mut ok = 0;
    for _ in 0..2 {
        for r in lab.batch(&calls) {
            match status(&r) {
                "success" => ok += 1,
                "policy_denied" => denied += 1,
                _ => {}
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 10, "the swapper barely ran ({swaps})");
    outside_untouched(&lab);
    eprintln!("race: {ok} written, {denied} denied, {swaps} swaps");
    assert!(ok + denied > 0, "no write was even attempted");
}

// ------------------------------------------------- list_directory, glob, grep

/// The lab with links out, a denied file, an ignored file and a binary file.
fn search_lab() -> Lab {
    let lab = attack_lab("");
    let p = lab.project();
    symlink(lab.root().join("outside"), p.join("link_dir")).unwrap();
    symlink(lab.root().join("outside/secret.txt"), p.join("link_file.rs")).unwrap();
    symlink("../../outside", p.join("src/parent_link")).unwrap();
    std::fs::write(p.join(".env"), format!("{SECRET}\n")).unwrap();
    std::fs::create_dir_all(p.join(".git")).unwrap();
    std::fs::write(p.join(".git/HEAD"), format!("{SECRET}\n")).unwrap();
    std::fs::write(p.join(".gitignore"), "target/\n").unwrap();
    std::fs::create_dir_all(p.join("target")).unwrap();
    std::fs::write(p.join("target/gen.rs"), "fn generated() { println!(\"hi\"); }\n").unwrap();
    std::fs::write(
        p.join("src/lib.rs"),
        "pub fn add(a: i32) -> i32 {\n    a + 1\n}\n// TODO: more\n",
    )
    .unwrap();
    std::fs::write(p.join("blob.bin"), b"println\0\x01\x02 println").unwrap();
    lab
}

#[test]
fn list_directory_shows_kinds_sizes_and_never_follows_links() {
    let lab = search_lab();
    let text = output_text(&lab.call("list_directory", json!({"depth": 3})));
    assert!(
        text.contains("hello.txt") && text.contains("src/lib.rs"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("file") && l.contains(" 12  hello.txt")),
        "{text}"
    );
    assert!(text.contains("link_dir (symlink, not followed)"), "{text}");
    assert!(text.contains("src/parent_link (symlink, not followed)"), "{text}");
    assert!(
        !text.contains("secret.txt") && !text.contains("sub/"),
        "followed a link out: {text}"
    );
    assert!(
        !text.contains(".env") && !text.contains(".git/"),
        "denied entries shown: {text}"
    );
    // Sorted: src/ comes before its contents, which come before later names.
    let pos = |s: &str| text.find(s).unwrap_or_else(|| panic!("{s} missing: {text}"));
    assert!(pos("  src/\n") < pos("src/lib.rs") && pos("src/main.rs") < pos("target/"));
    // A link out as the path itself is refused; the cap counts what it left out.
    assert_refused(
        &lab.call("list_directory", json!({"path": "link_dir"})),
        "policy_denied",
    );
    assert_refused(
        &lab.call("list_directory", json!({"path": "../project2"})),
        "policy_denied",
    );
    lab.set_config("max_list_entries = 3");
    let text = output_text(&lab.call("list_directory", json!({"depth": 2})));
    assert_eq!(text.lines().filter(|l| l.contains("  ")).count(), 3, "{text}");
    assert!(text.contains("more entries not shown"), "{text}");
}

#[test]
fn glob_matches_honours_gitignore_and_stays_inside() {
    let lab = search_lab();
    let text = output_text(&lab.call("Glob", json!({"pattern": "**/*.rs"})));
    let mut got: Vec<&str> = text.lines().collect();
    got.sort();
    assert_eq!(got, vec!["src/lib.rs", "src/main.rs"], "{text}");
    // Newest first: main.rs is rewritten and dated a minute after lib.rs
    // (set, not waited for: file times can be coarse).
    let main_rs = lab.project().join("src/main.rs");
    std::fs::write(&main_rs, "fn main() {}\n").unwrap();
    let lib_time = std::fs::metadata(lab.project().join("src/lib.rs"))
        .unwrap()
        .modified()
        .unwrap();
    std::fs::File::options()
        .write(true)
        .open(&main_rs)
        .unwrap()
        .set_modified(lib_time + Duration::from_secs(60))
        .unwrap();
    let text = output_text(&lab.call("glob", json!({"pattern": "src/*.rs"})));
    assert_eq!(text.lines().next(), Some("src/main.rs"), "{text}");
    // `*` does not cross folders; ignored files appear once gitignore is off.
    assert!(output_text(&lab.call("glob", json!({"pattern": "*.rs"}))).starts_with("no files match"));
    lab.set_config("respect_gitignore = false");
    let text = output_text(&lab.call("glob", json!({"pattern": "**/*.rs"})));
    assert!(text.contains("target/gen.rs"), "{text}");
    assert!(!text.contains("secret") && !text.contains("link_file"), "{text}");
    // Patterns cannot climb out; paths outside are refused.
    assert_refused(
        &lab.call("glob", json!({"pattern": "../*/secret.txt"})),
        "validation_error",
    );
    assert_refused(
        &lab.call("glob", json!({"pattern": "**/*", "path": "link_dir"})),
        "policy_denied",
    );
    assert_refused(
        &lab.call("glob", json!({"pattern": "**/*", "path": "../projectile"})),
        "policy_denied",
    );
    let abs = format!("{}/*/secret.txt", lab.root().display());
    assert_refused(&lab.call("glob", json!({"pattern": abs})), "policy_denied");
    let all = output_text(&lab.call("glob", json!({"pattern": "**/*"})));
    assert!(
        !all.contains(".env") && !all.contains(".git/") && !all.contains("secret"),
        "{all}"
    );
}

#[test]
fn grep_modes_context_limits_and_refusals() {
    let lab = search_lab();
    // Default: files with matches, sorted; binary, ignored, denied and linked files skipped.
    let text = output_text(&lab.call("Grep", json!({"pattern": "println|SECRET|TOP"})));
    assert_eq!(text.lines().collect::<Vec<_>>(), vec!["src/main.rs"], "{text}");
    let text = output_text(&lab.call(
        "grep",
        json!({"pattern": "a \\+ 1", "output_mode": "content", "context": 1}),
    ));
    assert_eq!(
        text,
        "src/lib.rs-1-pub fn add(a: i32) -> i32 {\nsrc/lib.rs:2:    a + 1\nsrc/lib.rs-3-}\n"
    );
    let text = output_text(&lab.call(
        "grep",
        json!({"pattern": "FN", "case_insensitive": true, "output_mode": "count"}),
    ));
    assert_eq!(text, "src/lib.rs:1\nsrc/main.rs:1\n");
    let text = output_text(&lab.call(
        "grep",
        json!({"pattern": "fn", "glob": "lib.*", "output_mode": "content"}),
    ));
    assert_eq!(text, "src/lib.rs:1:pub fn add(a: i32) -> i32 {\n");
    let text = output_text(&lab.call(
        "grep",
        json!({"pattern": ".", "output_mode": "content", "head_limit": 2}),
    ));
    assert!(
        text.lines().count() == 3 && text.contains("more lines not shown"),
        "{text}"
    );
    // A single file as path.
    let text = output_text(&lab.call(
        "grep",
        json!({"pattern": "TODO", "path": "src/lib.rs", "output_mode": "content"}),
    ));
    assert_eq!(text, "src/lib.rs:4:// TODO: more\n");
    // Invalid regexes are validation errors quoting the regex error.
    let called = lab.call("grep", json!({"pattern": "fn(("}));
    assert_eq!(called.status(), "validation_error");
    called.assert_says("invalid regex");
    called.assert_says("unclosed");
    // Refusals: through links, outside, denied.
    for path in [
        "link_dir",
        "link_file.rs",
        "src/parent_link",
        "../outside",
        ".env",
        "/proc/self/root/etc",
    ] {
        assert_refused(
            &lab.call("grep", json!({"pattern": "TOP", "path": path})),
            "policy_denied",
        );
    }
    assert!(
        output_text(&lab.call("grep", json!({"pattern": "nothing-matches-this"}))).starts_with("no matches")
    );
}

#[test]
fn grep_and_glob_skip_a_fifo_without_hanging() {
    let lab = search_lab();
    let fifo = lab.project().join("src/pipe.rs");
    let c = std::ffi::CString::new(fifo.display().to_string()).unwrap();
    // SAFETY: mkfifo on a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let started = Instant::now();
    let text = output_text(&lab.call("grep", json!({"pattern": "fn"})));
    assert!(!text.contains("pipe"), "{text}");
    let text = output_text(&lab.call("glob", json!({"pattern": "src/*"})));
    assert!(!text.contains("pipe"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn denials_do_not_reveal_whether_the_target_exists() {
    let lab = attack_lab("");
    let p = lab.project();
    symlink(lab.root().join("outside/secret.txt"), p.join("to_existing")).unwrap();
    symlink(lab.root().join("outside/missing.txt"), p.join("to_missing")).unwrap();
    let pairs = [
        ("../outside/secret.txt", "../outside/missing.txt"),
        ("to_existing", "to_missing"),
    ];
    for (a, b) in pairs {
        for tool in ["read_file", "write_file"] {
            let input = |path: &str| json!({"file_path": path, "content": "x"});
            let input = |path: &str| {
                if tool == "read_file" {
                    json!({"file_path": path})
                } else {
                    input(path)
                }
            };
            let (ca, cb) = (lab.call(tool, input(a)), lab.call(tool, input(b)));
            assert_refused(&ca, "policy_denied");
            assert_refused(&cb, "policy_denied");
            assert_eq!(
                ca.message()
                    .replace("secret.txt", "N")
                    .replace("to_existing", "N"),
                cb.message()
                    .replace("missing.txt", "N")
                    .replace("to_missing", "N"),
                "{tool}: an existence oracle"
            );
        }
    }
}

#[test]
fn a_root_reached_through_a_symlinked_path_works_and_stays_confined() {
    let lab = attack_lab("allowed_read_paths = [\"../alias\"]");
    symlink(lab.project(), lab.root().join("alias")).unwrap();
    lab.set_config("allowed_read_paths = [\"../alias\"]");
    assert!(
        output_text(&lab.call("read_file", json!({"file_path": "../alias/hello.txt"}))).contains("world")
    );
    // The same files by their real path are inside the (resolved) root too.
    assert!(output_text(&lab.call("read_file", json!({"file_path": "hello.txt"}))).contains("world"));
    assert_refused(
        &lab.call(
            "read_file",
            json!({"file_path": "../alias/../outside/secret.txt"}),
        ),
        "policy_denied",
    );
    assert_refused(
        &lab.call("read_file", json!({"file_path": "../alias2/secret.txt"})),
        "policy_denied",
    );
}

#[test]
fn oversized_patterns_are_validation_errors_not_panics_or_hangs() {
    let lab = attack_lab("");
    let huge = "a".repeat(1024 * 1024);
    let started = Instant::now();
    let results = lab.batch(&[
        json!({"name": "glob", "input": {"pattern": huge}}),
        json!({"name": "grep", "input": {"pattern": huge}}),
        json!({"name": "grep", "input": {"pattern": "x", "glob": huge}}),
        // Under the length cap but compiling to a huge automaton.
        json!({"name": "grep", "input": {"pattern": "(\\w{1000}){1000}"}}),
    ]);
    for result in &results {
        assert_eq!(
            result["status"],
            "validation_error",
            "{}",
            &result.to_string()[..300.min(result.to_string().len())]
        );
        assert!(result["error"]["message"].as_str().unwrap().len() < 10_000);
    }
    assert!(started.elapsed() < Duration::from_secs(30));
}
