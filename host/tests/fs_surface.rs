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
    assert!(called.message().contains("multiline"), "{}", called.message());
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
    assert!(
        called.message().contains("unknown file type") && called.message().contains("rust"),
        "{}",
        called.message()
    );
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
