//! Issue #18 items 2–5 through the real binary and the real filesystem
//! cdylib: grep's context, multi-line, type and paging options; read_file on
//! images, PDFs and notebooks (fixtures generated here); edit_file's
//! `edits`; delete_file and undo_edit; and hostile inputs for each.

mod common;

use std::path::{Path, PathBuf};

use common::{Called, Env};
use serde_json::{json, Value};

/// A working folder `project/` mounted with the filesystem module.
struct Tree {
    env: Env,
}

impl Tree {
    fn new(config: &str) -> Tree {
        let env = Env::new("");
        env.set_plan(&format!(
            "[host]\nworking_dir = \"project\"\ndefault_timeout_secs = 60\n\n[[tools]]\nmodule = \"filesystem\"\n[tools.config]\n{config}\n"
        ));
        std::fs::create_dir_all(env.path().join("project")).unwrap();
        Tree { env }
    }

    fn project(&self) -> PathBuf {
        self.env.path().join("project")
    }

    fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.project().join(rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(&path, content).unwrap();
        path
    }

    fn call(&self, tool: &str, input: Value) -> Called {
        self.env.call(tool, input)
    }

    /// The output text of a call that must succeed.
    fn text(&self, tool: &str, input: Value) -> String {
        match self.call(tool, input).assert_success() {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }

    /// Calls in one host process and one session (the guard and the undo
    /// history are per session).
    fn batch(&self, calls: &[(&str, Value)]) -> Vec<Value> {
        let lines: Vec<Value> = calls
            .iter()
            .map(|(name, input)| json!({"name": name, "input": input}))
            .collect();
        let (results, _) = self.env.batch(&lines, &[]);
        assert_eq!(results.len(), calls.len(), "{results:?}");
        results
    }
}

fn status(result: &Value) -> &str {
    result["status"].as_str().unwrap_or("")
}

fn message(result: &Value) -> &str {
    result["error"]["message"].as_str().unwrap_or("")
}

fn output(result: &Value) -> &str {
    assert_eq!(status(result), "success", "{result}");
    result["output"].as_str().unwrap_or("")
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

// -------------------------------------------------------------------- grep

fn grep_tree() -> Tree {
    let tree = Tree::new("");
    tree.write(
        "src/lib.rs",
        "// one\n// two\nfn start() {\n    body();\n}\n// after1\n// after2\n// after3\n",
    );
    tree.write("src/util.py", "def start():\n    pass\n");
    tree.write("notes.md", "start here\n");
    tree
}

#[test]
fn grep_before_and_after_context_are_separate() {
    let tree = grep_tree();
    let text = tree.text(
        "grep",
        json!({"pattern": "fn start", "output_mode": "content", "before_context": 1, "after_context": 0, "context": 5}),
    );
    assert_eq!(text, "src/lib.rs-2-// two\nsrc/lib.rs:3:fn start() {\n");
    let text = tree.text(
        "grep",
        json!({"pattern": "fn start", "output_mode": "content", "after_context": 1}),
    );
    assert_eq!(text, "src/lib.rs:3:fn start() {\nsrc/lib.rs-4-    body();\n");
    // `context` still sets both when the specific ones are absent.
    let text = tree.text(
        "grep",
        json!({"pattern": "body", "output_mode": "content", "context": 1}),
    );
    assert_eq!(text.lines().count(), 3, "{text}");
}

#[test]
fn grep_line_numbers_can_be_turned_off() {
    let tree = grep_tree();
    let text = tree.text(
        "grep",
        json!({"pattern": "body", "output_mode": "content", "line_numbers": false, "before_context": 1}),
    );
    assert_eq!(text, "src/lib.rs-fn start() {\nsrc/lib.rs:    body();\n");
}

#[test]
fn grep_multiline_matches_across_lines_and_is_refused_without_it() {
    let tree = grep_tree();
    let called = tree.call("grep", json!({"pattern": "start\\(\\) \\{\\n\\s+body"}));
    assert_eq!(called.status(), "validation_error", "{}", called.result);
    called.assert_says("multiline");
    let text = tree.text(
        "grep",
        json!({"pattern": "start\\(\\) \\{\\n\\s+body", "multiline": true, "output_mode": "content"}),
    );
    assert_eq!(text, "src/lib.rs:3:fn start() {\nsrc/lib.rs:4:    body();\n");
    // `.` crosses newlines in multiline mode.
    let text = tree.text(
        "grep",
        json!({"pattern": "one.*after3", "multiline": true, "output_mode": "count"}),
    );
    assert_eq!(text, "src/lib.rs:1\n");
    // A file larger than the 8 MiB buffer is reported, not loaded.
    let big = "x\n".repeat(5 * 1024 * 1024);
    tree.write("big.txt", &big);
    let text = tree.text("grep", json!({"pattern": "y\\nz", "multiline": true}));
    assert!(
        text.contains("not searched in multiline mode") && text.contains("big.txt"),
        "{text}"
    );
}

#[test]
fn grep_type_filters_use_ripgreps_definitions() {
    let tree = grep_tree();
    let text = tree.text("grep", json!({"pattern": "start", "type": "rust"}));
    assert_eq!(text, "src/lib.rs\n");
    let text = tree.text("grep", json!({"pattern": "start", "type": "py"}));
    assert_eq!(text, "src/util.py\n");
    let text = tree.text("grep", json!({"pattern": "start", "type": "markdown"}));
    assert_eq!(text, "notes.md\n");
    let called = tree.call("grep", json!({"pattern": "start", "type": "rsut"}));
    assert_eq!(called.status(), "validation_error", "{}", called.result);
    called.assert_says("unknown file type");
    called.assert_says("rust");
}

#[test]
fn grep_pages_with_offset_and_head_limit() {
    let tree = Tree::new("");
    for i in 0..7 {
        tree.write(&format!("f{i}.txt"), format!("hit {i}\nmiss\nhit again {i}\n"));
    }
    let all = tree.text("grep", json!({"pattern": "hit"}));
    let files: Vec<&str> = all.lines().collect();
    assert_eq!(files.len(), 7, "{all}");
    let page = tree.text("grep", json!({"pattern": "hit", "offset": 2, "head_limit": 3}));
    let lines: Vec<&str> = page.lines().collect();
    assert_eq!(&lines[..3], &files[2..5], "{page}");
    assert!(lines[3].contains("continue with offset=5"), "{page}");
    let last = tree.text("grep", json!({"pattern": "hit", "offset": 5, "head_limit": 3}));
    assert_eq!(last.lines().take(2).collect::<Vec<_>>(), &files[5..7], "{last}");
    assert!(last.contains("the last page"), "{last}");
    // Content mode pages by line, counts by file.
    let content = tree.text(
        "grep",
        json!({"pattern": "hit", "output_mode": "content", "offset": 13, "head_limit": 5}),
    );
    assert_eq!(
        content,
        "f6.txt:3:hit again 6\n[showing lines 14-14 of 14: the last page]\n"
    );
    let counts = tree.text(
        "grep",
        json!({"pattern": "hit", "output_mode": "count", "offset": 6}),
    );
    assert!(counts.starts_with("f6.txt:2\n"), "{counts}");
    let past = tree.text("grep", json!({"pattern": "hit", "offset": 50}));
    assert!(
        past.contains("past the end") && past.contains("7 files"),
        "{past}"
    );
}

// --------------------------------------------------------------- edit_file

#[test]
fn edit_file_edits_apply_in_order_and_write_once() {
    let tree = Tree::new("");
    let path = tree.write("a.txt", "alpha\nbeta\ngamma\n");
    let results = tree.batch(&[
        ("read_file", json!({"file_path": "a.txt"})),
        (
            "edit_file",
            json!({"file_path": "a.txt", "edits": [
                {"old_string": "alpha", "new_string": "ALPHA"},
                // Sees the result of the first edit.
                {"old_string": "ALPHA\nbeta", "new_string": "one\ntwo"},
                {"old_string": "a", "new_string": "A", "replace_all": true},
            ]}),
        ),
    ]);
    let text = output(&results[1]);
    assert!(
        text.contains("4 replacements from 3 edits") && text.contains("edits[1]:"),
        "{text}"
    );
    assert_eq!(read(&path), b"one\ntwo\ngAmmA\n");
}

#[test]
fn edit_file_failing_edit_leaves_the_file_byte_for_byte_untouched() {
    let tree = Tree::new("");
    let original = b"keep\r\nthis exact\r\ncontent\xe2\x9c\x93\r\n".to_vec();
    let path = tree.write("b.txt", &original);
    let before = std::fs::metadata(&path).unwrap();
    let results = tree.batch(&[
        ("read_file", json!({"file_path": "b.txt"})),
        (
            "edit_file",
            json!({"file_path": "b.txt", "edits": [
                {"old_string": "keep", "new_string": "changed"},
                {"old_string": "this exact", "new_string": "x"},
                {"old_string": "not there", "new_string": "y"},
                {"old_string": "content", "new_string": "z"},
            ]}),
        ),
        // Both forms at once, and an empty list, are refused.
        (
            "edit_file",
            json!({"file_path": "b.txt", "old_string": "keep", "new_string": "k", "edits": [{"old_string": "a", "new_string": "b"}]}),
        ),
        ("edit_file", json!({"file_path": "b.txt", "edits": []})),
        ("edit_file", json!({"file_path": "b.txt"})),
    ]);
    assert_eq!(status(&results[1]), "validation_error", "{}", results[1]);
    let msg = message(&results[1]);
    assert!(
        msg.contains("edits[2] failed") && msg.contains("unchanged"),
        "{msg}"
    );
    for r in &results[2..] {
        assert_eq!(status(r), "validation_error", "{r}");
    }
    assert!(message(&results[2]).contains("not both"), "{}", results[2]);
    assert_eq!(read(&path), original);
    let after = std::fs::metadata(&path).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        (before.ino(), before.mtime_nsec()),
        (after.ino(), after.mtime_nsec()),
        "the file was rewritten"
    );
    let leftovers: Vec<_> = std::fs::read_dir(tree.project())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("toolhost"))
        .collect();
    assert!(leftovers.is_empty(), "temp files left: {leftovers:?}");
}

#[test]
fn edit_file_edits_keep_read_before_write() {
    let tree = Tree::new("");
    let path = tree.write("c.txt", "one\n");
    let called = tree.call(
        "edit_file",
        json!({"file_path": "c.txt", "edits": [{"old_string": "one", "new_string": "two"}]}),
    );
    assert_eq!(called.status(), "policy_denied", "{}", called.result);
    assert_eq!(read(&path), b"one\n");
}

// ------------------------------------------------------ delete_file, undo

#[test]
fn undo_after_write_after_edit_and_with_nothing_to_undo() {
    let tree = Tree::new("");
    let path = tree.write("u.txt", "v1\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    let results = tree.batch(&[
        ("undo_edit", json!({"file_path": "u.txt"})),
        ("read_file", json!({"file_path": "u.txt"})),
        ("write_file", json!({"file_path": "u.txt", "content": "v2\n"})),
        (
            "edit_file",
            json!({"file_path": "u.txt", "old_string": "v2", "new_string": "v3"}),
        ),
        ("undo_edit", json!({"file_path": "u.txt"})),
        ("read_file", json!({"file_path": "u.txt"})),
        ("undo_edit", json!({"file_path": "u.txt"})),
        ("read_file", json!({"file_path": "u.txt"})),
        ("undo_edit", json!({"file_path": "u.txt"})),
        // A file write_file created: undo removes it.
        (
            "write_file",
            json!({"file_path": "new/made.txt", "content": "fresh\n"}),
        ),
        ("undo_edit", json!({"file_path": "new/made.txt"})),
    ]);
    assert_eq!(status(&results[0]), "error", "{}", results[0]);
    assert_eq!(results[0]["error"]["code"], "nothing_to_undo", "{}", results[0]);
    // After the edit: back to the write's content.
    assert!(output(&results[4]).contains("1 earlier change"), "{}", results[4]);
    assert!(output(&results[5]).contains("v2"), "{}", results[5]);
    // After the write: back to the original, mode kept.
    assert!(output(&results[6]).contains("nothing earlier"), "{}", results[6]);
    assert!(output(&results[7]).contains("v1"), "{}", results[7]);
    assert_eq!(results[8]["error"]["code"], "nothing_to_undo", "{}", results[8]);
    assert_eq!(read(&path), b"v1\n");
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777,
        0o640
    );
    assert!(output(&results[10]).contains("removed"), "{}", results[10]);
    assert!(!tree.project().join("new/made.txt").exists());
}

/// A host in this process, so calls of two sessions and changes from
/// outside can interleave.
struct Host {
    host: common::InProcess,
    dir: tempfile::TempDir,
}

impl Host {
    fn new() -> Host {
        let dir = tempfile::tempdir().unwrap();
        let plan = format!(
            "working_dir = {:?}\n\n[[tools]]\nmodule = \"filesystem\"\n",
            dir.path().display().to_string()
        );
        Host {
            host: common::InProcess::with_host(&plan, ""),
            dir,
        }
    }

    fn call(&self, session: &str, tool: &str, input: Value) -> toolhost_core::ToolResult {
        self.host
            .runtime
            .block_on(self.host.pipeline.call(toolhost::pipeline::Call {
                name: tool.into(),
                input,
                session_id: Some(session.into()),
                ..Default::default()
            }))
    }
}

fn code(r: &toolhost_core::ToolResult) -> &str {
    r.error.as_ref().map_or("", |e| e.code.as_str())
}

#[test]
fn undo_is_per_session_and_refuses_a_file_changed_since() {
    let h = Host::new();
    let path = h.dir.path().join("s.txt");
    std::fs::write(&path, "mine\n").unwrap();
    assert!(h.call("a", "read_file", json!({"file_path": "s.txt"})).success);
    let r = h.call(
        "a",
        "edit_file",
        json!({"file_path": "s.txt", "old_string": "mine", "new_string": "edited"}),
    );
    assert!(r.success, "{:?}", r.error);
    // Another session has no history of it.
    let r = h.call("b", "undo_edit", json!({"file_path": "s.txt"}));
    assert_eq!(code(&r), "nothing_to_undo", "{:?}", r.error);
    assert_eq!(read(&path), b"edited\n");
    // A change from outside since the edit is not discarded by an undo.
    std::fs::write(&path, "someone else\n").unwrap();
    let r = h.call("a", "undo_edit", json!({"file_path": "s.txt"}));
    assert_eq!(code(&r), "changed_since_edit", "{:?}", r.error);
    assert_eq!(read(&path), b"someone else\n");
    // Outside the allowed folders: refused by the write policy.
    let r = h.call("a", "undo_edit", json!({"file_path": "../outside.txt"}));
    assert_eq!(r.status, toolhost_core::Status::PolicyDenied, "{:?}", r.error);
}

#[test]
fn delete_file_removes_a_file_and_refuses_folders_links_and_denied_paths() {
    let tree = Tree::new("denied_paths = [\"secret*\"]");
    let path = tree.write("gone.txt", "bye\n");
    tree.write("dir/inner.txt", "x\n");
    tree.write("secret.txt", "s\n");
    let outside = tree.env.path().join("outside.txt");
    std::fs::write(&outside, "out\n").unwrap();
    std::os::unix::fs::symlink(&outside, tree.project().join("link.txt")).unwrap();
    std::fs::hard_link(
        tree.project().join("dir/inner.txt"),
        tree.project().join("twin.txt"),
    )
    .unwrap();
    let text = tree.text("delete_file", json!({"file_path": "gone.txt"}));
    assert!(text.contains("deleted gone.txt"), "{text}");
    assert!(!path.exists());
    let refused = [
        ("gone.txt", "not_found"),
        ("dir", "validation_error"),
        ("link.txt", "policy_denied"),
        ("twin.txt", "policy_denied"),
        ("secret.txt", "policy_denied"),
        ("../outside.txt", "policy_denied"),
        (".", "validation_error"),
    ];
    for (name, want) in refused {
        let called = tree.call("delete_file", json!({"file_path": name}));
        let got = if called.status() == "error" && called.result["error"]["code"] == "not_found" {
            "not_found"
        } else {
            called.status()
        };
        assert_eq!(got, want, "{name}: {}", called.result);
    }
    assert!(tree.project().join("dir/inner.txt").exists());
    assert!(tree.project().join("twin.txt").exists());
    assert!(tree.project().join("secret.txt").exists());
    assert_eq!(read(&outside), b"out\n");
    assert!(tree.project().join("link.txt").symlink_metadata().is_ok());
    // Listed as irreversible, so an approval policy asks about it.
    let out = tree.env.run(&["list", "--json"]);
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        listed.contains("delete_file") && listed.contains("undo_edit"),
        "{listed}"
    );
}
