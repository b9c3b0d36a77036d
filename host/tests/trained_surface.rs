//! The tool surface agents are trained on (#18): calls shaped exactly as
//! Claude Code's and Amp's tools document them, each run against a real
//! file tree, real shell or loopback HTTP server through the real cdylibs
//! and pipeline, and compared with the equivalent canonical call's result.
//!
//! Rows whose canonical parameter another branch adds (grep's `-A`/`-B`,
//! `multiline`, `type`, `offset`, line numbers; edit_file's `edits`;
//! undo_edit; bash's fractional `timeout`; bash_output's `filter`) are in
//! the separate lists [`NEEDS_FS_BRANCH`] and [`NEEDS_SHELL_BRANCH`]. Those
//! branches are merged, so every such row must now run the full
//! comparison: a row refused for its parameter fails the test.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::InProcess;
use serde_json::{json, Value};
use toolhost_core::ToolResult;

// ------------------------------------------------------------- fixtures

/// A loopback HTTP server: an article for any path, SearXNG JSON for
/// `/search?…`; it records the paths it was asked for.
struct Loopback {
    port: u16,
    paths: Arc<Mutex<Vec<String>>>,
}

const ARTICLE: &str = "<html><head><title>Trained tools</title></head><body><article>\
<h1>Trained tools</h1><p>Models call tools by the names and parameters they were trained on.</p>\
<p>An alias profile maps them onto canonical inputs.</p></article></body></html>";

impl Loopback {
    fn start() -> Loopback {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let port = listener.local_addr().expect("address").port();
        let paths = Arc::new(Mutex::new(Vec::new()));
        let seen = paths.clone();
        // The thread ends with the test process.
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                serve(stream, &seen);
            }
        });
        Loopback { port, paths }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn paths(&self) -> Vec<String> {
        self.paths.lock().expect("paths").clone()
    }
}

fn serve(mut stream: TcpStream, seen: &Mutex<Vec<String>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 16 * 1024 {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head).to_string();
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
    seen.lock().expect("paths").push(path.clone());
    let (kind, body) = if path.starts_with("/search?") {
        let results = json!({
            "query": "q", "number_of_results": 2,
            "results": [
                {"title": "Alias profiles", "url": "https://docs.example.org/aliases", "content": "Profiles", "engine": "e"},
                {"title": "Canonical tools", "url": "https://docs.example.org/tools", "content": "Tools", "engine": "e"}
            ],
            "answers": [], "suggestions": [], "unresponsive_engines": []
        });
        ("application/json", results.to_string())
    } else {
        ("text/html; charset=utf-8", ARTICLE.to_string())
    };
    let reply = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(reply.as_bytes());
}

/// The file tree every row starts from (rewritten before each call, in
/// the same order, so glob's newest-first order is the same both times).
fn reset_tree(dir: &Path) {
    let files: &[(&str, &str)] = &[
        (
            "notes.txt",
            "alpha line\nBeta line\nthird\nfourth\nfifth\nHello world\nseventh\n",
        ),
        (
            "src/lib.rs",
            "pub fn hello() -> &'static str {\n    \"hello\"\n}\n",
        ),
        (
            "src/main.rs",
            "fn main() {\n    println!(\"{}\", x::hello());\n}\n",
        ),
        ("web/app.js", "function hello() {\n  return 'hello';\n}\n"),
        ("edit.txt", "one two one\nthree\n"),
    ];
    // Fixed, distinct modification times: glob lists newest first, and two
    // writes in a row can share a timestamp.
    let base = std::time::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    for (i, (path, text)) in files.iter().enumerate() {
        let full = dir.join(path);
        std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
        std::fs::write(&full, text).expect("write fixture");
        let file = std::fs::File::options()
            .write(true)
            .open(&full)
            .expect("open fixture");
        file.set_modified(base + Duration::from_secs(i as u64 * 60))
            .expect("set mtime");
    }
    let _ = std::fs::remove_file(dir.join("new.txt"));
}

/// Every file of the tree and its content, for comparing effects.
fn snapshot(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let path = entry.path();
            if path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).expect("inside").display().to_string();
                out.push((rel, std::fs::read_to_string(&path).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

/// What a row's input closures see.
struct Ctx {
    dir: PathBuf,
    web: Loopback,
}

impl Ctx {
    fn path(&self, rel: &str) -> String {
        self.dir.join(rel).display().to_string()
    }
}

/// One host for every row: filesystem, bash (sandbox off: the rows test
/// mapping, not the sandbox), web with loopback admitted and a SearXNG
/// backend on the loopback server; Amp's colliding names selected.
fn host(ctx: &Ctx, extra_host: &str) -> InProcess {
    let plan = format!(
        r#"
working_dir = {dir:?}

[[tools]]
module = "filesystem"
[tools.config]
require_read_before_write = false

[[tools]]
module = "bash"
[tools.config]
sandbox = "off"

[[tools]]
module = "web"
[tools.config]
allow_private_networks = ["127.0.0.0/8"]
[tools.config.search]
searxng_url = "http://127.0.0.1:{port}"
"#,
        dir = ctx.dir.display().to_string(),
        port = ctx.web.port
    );
    InProcess::with_host(extra_host, &plan)
}

// ------------------------------------------------------------------ rows

/// One trained call and its canonical equivalent.
struct Row {
    /// What the row checks.
    label: &'static str,
    /// The trained tool's name and its input, as its docs shape it.
    alias: &'static str,
    input: fn(&Ctx) -> Value,
    /// The canonical call that must give the same result.
    canonical: &'static str,
    canonical_input: fn(&Ctx) -> Value,
    /// For rows in a pending list: the canonical parameter the other
    /// branch adds (the one the canonical tool refuses until then), and
    /// the caller's parameter the refusal must name.
    needs: Option<(&'static str, &'static str)>,
    /// The status both calls must end with.
    status: &'static str,
    /// A check beyond equality (the caller-visible facts of the row).
    extra: Option<fn(&Ctx, &Outcome)>,
}

/// A call's result with what varies between equivalent runs taken out,
/// and the file tree after it.
#[derive(Debug)]
struct Outcome {
    status: String,
    code: Option<String>,
    output: Value,
    tree: Vec<(String, String)>,
    elapsed: Duration,
}

impl Outcome {
    /// Everything but the time it took.
    fn same_as(&self, other: &Outcome) -> bool {
        (&self.status, &self.code, &self.output, &self.tree)
            == (&other.status, &other.code, &other.output, &other.tree)
    }
}

/// Removes timings and job ids (they differ between two equal runs).
fn normalize(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for key in ["duration_ms", "elapsed_ms", "id"] {
                map.remove(key);
            }
            map.values_mut().for_each(normalize);
        }
        Value::Array(items) => items.iter_mut().for_each(normalize),
        Value::String(s) if s.starts_with("job-") => *s = "job-N".into(),
        _ => {}
    }
}

fn run(ctx: &Ctx, host: &InProcess, name: &str, input: Value) -> (ToolResult, Outcome) {
    reset_tree(&ctx.dir);
    let started = Instant::now();
    let result = host.call(name, input);
    let elapsed = started.elapsed();
    let mut output = result.output.clone();
    normalize(&mut output);
    let outcome = Outcome {
        status: result.status.as_str().to_string(),
        code: result.error.as_ref().map(|e| e.code.clone()),
        output,
        tree: snapshot(&ctx.dir),
        elapsed,
    };
    (result, outcome)
}

/// Runs the trained call and the canonical one on the same fresh tree and
/// asserts the same result and the same effect.
fn compare(ctx: &Ctx, host: &InProcess, row: &Row) {
    let (alias_result, alias) = run(ctx, host, row.alias, (row.input)(ctx));
    let (canonical_result, canonical) = run(ctx, host, row.canonical, (row.canonical_input)(ctx));
    assert_eq!(
        alias.status, row.status,
        "{}: the trained call ended otherwise: {alias_result:?}",
        row.label
    );
    assert!(
        alias.same_as(&canonical),
        "{}: {} and {} differ\ntrained:   {alias:?}\ncanonical: {canonical:?}\n({canonical_result:?})",
        row.label,
        row.alias,
        row.canonical
    );
    if let Some(extra) = row.extra {
        extra(ctx, &alias);
    }
}

/// A pending row: compared when the canonical tool takes the parameter,
/// otherwise refused in the caller's terms (never skipped).
fn pending(ctx: &Ctx, host: &InProcess, row: &Row) -> &'static str {
    let (canonical_param, caller_param) = row.needs.expect("pending rows name what they need");
    reset_tree(&ctx.dir);
    let canonical = host.call(row.canonical, (row.canonical_input)(ctx));
    let refused_for_the_parameter = canonical.status.as_str() == "validation_error"
        && canonical.error.as_ref().is_some_and(|e| {
            e.message.contains(&format!("'{canonical_param}'"))
                || e.message.contains(&format!("/{canonical_param}"))
        });
    if !refused_for_the_parameter {
        compare(ctx, host, row);
        return "compared";
    }
    let (alias, _) = run(ctx, host, row.alias, (row.input)(ctx));
    let error = alias.error.as_ref().expect("a pending row's trained call fails");
    assert_eq!(
        alias.status.as_str(),
        "validation_error",
        "{}: {alias:?}",
        row.label
    );
    assert!(
        error.message.contains(&format!("'{caller_param}'"))
            || error.message.contains(&format!("/{caller_param}")),
        "{}: the refusal must name the caller's '{caller_param}': {}",
        row.label,
        error.message
    );
    let details = error.details.as_ref().expect("details");
    assert_eq!(details["stage"], "canonical", "{}: {details}", row.label);
    "refused until the canonical parameter exists"
}

/// Rows every branch must pass.
const ROWS: &[Row] = &[
    Row {
        label: "Read pages a file by line",
        alias: "Read",
        input: |c| json!({"file_path": c.path("notes.txt"), "offset": 2, "limit": 3}),
        canonical: "read_file",
        canonical_input: |c| json!({"file_path": c.path("notes.txt"), "offset": 2, "limit": 3}),
        needs: None,
        status: "success",
        extra: Some(|_, o| assert!(o.output.to_string().contains("Beta line"), "{:?}", o.output)),
    },
    Row {
        label: "Write creates a file",
        alias: "Write",
        input: |c| json!({"file_path": c.path("new.txt"), "content": "written\n"}),
        canonical: "write_file",
        canonical_input: |c| json!({"file_path": c.path("new.txt"), "content": "written\n"}),
        needs: None,
        status: "success",
        extra: Some(|_, o| assert!(o.tree.contains(&("new.txt".into(), "written\n".into())))),
    },
    Row {
        label: "Edit with replace_all",
        alias: "Edit",
        input: |c| json!({"file_path": c.path("edit.txt"), "old_string": "one", "new_string": "1", "replace_all": true}),
        canonical: "edit_file",
        canonical_input: |c| json!({"file_path": c.path("edit.txt"), "old_string": "one", "new_string": "1", "replace_all": true}),
        needs: None,
        status: "success",
        extra: Some(|_, o| assert!(o.tree.contains(&("edit.txt".into(), "1 two 1\nthree\n".into())))),
    },
    Row {
        label: "Glob under a path",
        alias: "Glob",
        input: |c| json!({"pattern": "**/*.rs", "path": c.path("src")}),
        canonical: "glob",
        canonical_input: |c| json!({"pattern": "**/*.rs", "path": c.path("src")}),
        needs: None,
        status: "success",
        extra: Some(|_, o| assert!(o.output.to_string().contains("main.rs"), "{:?}", o.output)),
    },
    Row {
        label: "Grep -i with -C in content mode, glob filter, head_limit",
        alias: "Grep",
        input: |c| {
            json!({"pattern": "HELLO", "-i": true, "-C": 1, "output_mode": "content",
                   "glob": "*.txt", "head_limit": 10, "path": c.path("")})
        },
        canonical: "grep",
        canonical_input: |c| {
            json!({"pattern": "HELLO", "case_insensitive": true, "context": 1, "output_mode": "content",
                   "glob": "*.txt", "head_limit": 10, "path": c.path("")})
        },
        needs: None,
        status: "success",
        extra: Some(|_, o| {
            let text = o.output.to_string();
            assert!(text.contains("Hello world") && text.contains("fifth"), "{text}");
        }),
    },
    Row {
        label: "Grep count mode",
        alias: "Grep",
        input: |c| json!({"pattern": "hello", "output_mode": "count", "path": c.path("")}),
        canonical: "grep",
        canonical_input: |c| json!({"pattern": "hello", "output_mode": "count", "path": c.path("")}),
        needs: None,
        status: "success",
        extra: None,
    },
    Row {
        label: "Bash with description and a whole-second timeout in milliseconds",
        alias: "Bash",
        input: |_| json!({"command": "echo out; echo err >&2", "description": "Print two lines", "timeout": 5000}),
        canonical: "bash",
        canonical_input: |_| json!({"command": "echo out; echo err >&2", "description": "Print two lines", "timeout": 5}),
        needs: None,
        status: "success",
        extra: Some(|_, o| assert_eq!(o.output["stdout"], "out\n", "{:?}", o.output)),
    },
    Row {
        label: "Bash timeout 1000 ms ends a 3 s command after about 1 s",
        alias: "Bash",
        input: |_| json!({"command": "sleep 3; echo finished", "timeout": 1000}),
        canonical: "bash",
        canonical_input: |_| json!({"command": "sleep 3; echo finished", "timeout": 1}),
        needs: None,
        status: "timeout",
        extra: Some(|_, o| {
            assert_eq!(o.code.as_deref(), Some("timeout"), "{o:?}");
            assert!(
                o.elapsed >= Duration::from_millis(900) && o.elapsed < Duration::from_millis(2900),
                "ended after {:?}, not about 1 s",
                o.elapsed
            );
        }),
    },
    Row {
        label: "WebFetch with a prompt it does not apply",
        alias: "WebFetch",
        input: |c| json!({"url": c.web.url("/article"), "prompt": "List the key points"}),
        canonical: "web_fetch",
        canonical_input: |c| json!({"url": c.web.url("/article"), "prompt": "List the key points"}),
        needs: None,
        status: "success",
        extra: Some(|_, o| {
            let note = o.output["prompt_note"].as_str().unwrap_or_default();
            assert!(
                note.contains("without applying the prompt") && note.contains("List the key points"),
                "{:?}",
                o.output
            );
            assert!(o.output["content"]
                .as_str()
                .unwrap_or_default()
                .contains("alias profile maps"));
        }),
    },
    Row {
        label: "Amp read_web_page",
        alias: "read_web_page",
        input: |c| json!({"url": c.web.url("/article"), "prompt": "Summarise"}),
        canonical: "web_fetch",
        canonical_input: |c| json!({"url": c.web.url("/article"), "prompt": "Summarise"}),
        needs: None,
        status: "success",
        extra: None,
    },
    Row {
        label: "WebSearch domain lists become site: operators",
        alias: "WebSearch",
        input: |_| json!({"query": "alias profiles", "allowed_domains": ["docs.example.org", "example.com"], "blocked_domains": ["spam.example"]}),
        canonical: "web_search",
        canonical_input: |_| json!({"query": "alias profiles site:docs.example.org OR site:example.com -site:spam.example"}),
        needs: None,
        status: "success",
        extra: Some(|c, _| {
            let last = c.web.paths().last().cloned().unwrap_or_default();
            assert!(
                last.contains("site%3Adocs.example.org") && last.contains("-site%3Aspam.example"),
                "{last}"
            );
        }),
    },
    Row {
        label: "Amp create_file",
        alias: "create_file",
        input: |c| json!({"path": c.path("new.txt"), "content": "created\n"}),
        canonical: "write_file",
        canonical_input: |c| json!({"file_path": c.path("new.txt"), "content": "created\n"}),
        needs: None,
        status: "success",
        extra: None,
    },
    Row {
        label: "Amp edit_file (family selected for the colliding name)",
        alias: "edit_file",
        input: |c| json!({"path": c.path("edit.txt"), "old_str": "three", "new_str": "3"}),
        canonical: "edit_file",
        canonical_input: |c| json!({"file_path": c.path("edit.txt"), "old_string": "three", "new_string": "3"}),
        needs: None,
        status: "success",
        extra: Some(|_, o| assert!(o.tree.contains(&("edit.txt".into(), "one two one\n3\n".into())))),
    },
];

/// Rows whose canonical parameter the filesystem branch (#18 items 2–5) adds.
const NEEDS_FS_BRANCH: &[Row] = &[
    Row {
        label: "Grep -A",
        alias: "Grep",
        input: |c| json!({"pattern": "third", "-A": 1, "output_mode": "content", "path": c.path("notes.txt")}),
        canonical: "grep",
        canonical_input: |c| json!({"pattern": "third", "after_context": 1, "output_mode": "content", "path": c.path("notes.txt")}),
        needs: Some(("after_context", "-A")),
        status: "success",
        extra: Some(|_, o| {
            let t = o.output.to_string();
            assert!(t.contains("fourth") && !t.contains("Beta"), "{t}")
        }),
    },
    Row {
        label: "Grep -B",
        alias: "Grep",
        input: |c| json!({"pattern": "third", "-B": 1, "output_mode": "content", "path": c.path("notes.txt")}),
        canonical: "grep",
        canonical_input: |c| json!({"pattern": "third", "before_context": 1, "output_mode": "content", "path": c.path("notes.txt")}),
        needs: Some(("before_context", "-B")),
        status: "success",
        extra: Some(|_, o| {
            let t = o.output.to_string();
            assert!(t.contains("Beta") && !t.contains("fourth"), "{t}")
        }),
    },
    Row {
        label: "Grep -n false",
        alias: "Grep",
        input: |c| json!({"pattern": "third", "-n": false, "output_mode": "content", "path": c.path("notes.txt")}),
        canonical: "grep",
        canonical_input: |c| json!({"pattern": "third", "line_numbers": false, "output_mode": "content", "path": c.path("notes.txt")}),
        needs: Some(("line_numbers", "-n")),
        status: "success",
        extra: None,
    },
    Row {
        label: "Grep multiline",
        alias: "Grep",
        input: |c| json!({"pattern": "third\\nfourth", "multiline": true, "output_mode": "content", "path": c.path("notes.txt")}),
        canonical: "grep",
        canonical_input: |c| json!({"pattern": "third\\nfourth", "multiline": true, "output_mode": "content", "path": c.path("notes.txt")}),
        needs: Some(("multiline", "multiline")),
        status: "success",
        extra: Some(|_, o| assert!(o.output.to_string().contains("fourth"), "{:?}", o.output)),
    },
    Row {
        label: "Grep type",
        alias: "Grep",
        input: |c| json!({"pattern": "hello", "type": "js", "path": c.path("")}),
        canonical: "grep",
        canonical_input: |c| json!({"pattern": "hello", "type": "js", "path": c.path("")}),
        needs: Some(("type", "type")),
        status: "success",
        extra: Some(|_, o| {
            let t = o.output.to_string();
            assert!(t.contains("app.js") && !t.contains("lib.rs"), "{t}")
        }),
    },
    Row {
        label: "Grep offset with head_limit",
        alias: "Grep",
        input: |c| json!({"pattern": "l", "output_mode": "content", "offset": 1, "head_limit": 2, "path": c.path("notes.txt")}),
        canonical: "grep",
        canonical_input: |c| json!({"pattern": "l", "output_mode": "content", "offset": 1, "head_limit": 2, "path": c.path("notes.txt")}),
        needs: Some(("offset", "offset")),
        status: "success",
        extra: None,
    },
    Row {
        label: "MultiEdit applies its edits in order",
        alias: "MultiEdit",
        input: |c| {
            json!({"file_path": c.path("edit.txt"), "edits": [
                {"old_string": "one", "new_string": "uno", "replace_all": true},
                {"old_string": "uno two", "new_string": "dos"}
            ]})
        },
        canonical: "edit_file",
        canonical_input: |c| {
            json!({"file_path": c.path("edit.txt"), "edits": [
                {"old_string": "one", "new_string": "uno", "replace_all": true},
                {"old_string": "uno two", "new_string": "dos"}
            ]})
        },
        needs: Some(("edits", "edits")),
        status: "success",
        extra: Some(|_, o| assert!(o.tree.contains(&("edit.txt".into(), "dos uno\nthree\n".into())))),
    },
];

/// Rows whose canonical parameter the shell branch (#14) adds.
const NEEDS_SHELL_BRANCH: &[Row] = &[Row {
    label: "Bash timeout 1500 ms ends a 3 s command after about 1.5 s",
    alias: "Bash",
    input: |_| json!({"command": "sleep 3; echo finished", "timeout": 1500}),
    canonical: "bash",
    canonical_input: |_| json!({"command": "sleep 3; echo finished", "timeout": 1.5}),
    needs: Some(("timeout", "timeout")),
    status: "timeout",
    extra: Some(|_, o| {
        assert_eq!(o.code.as_deref(), Some("timeout"), "{o:?}");
        assert!(
            o.elapsed >= Duration::from_millis(1400) && o.elapsed < Duration::from_millis(2900),
            "ended after {:?}, not about 1.5 s",
            o.elapsed
        );
    }),
}];

// ----------------------------------------------------------------- tests

fn ctx() -> (tempfile::TempDir, Ctx) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().canonicalize().expect("canonical temp dir");
    reset_tree(&dir);
    (
        tmp,
        Ctx {
            dir,
            web: Loopback::start(),
        },
    )
}

#[test]
fn trained_calls_match_their_canonical_calls() {
    let (_tmp, ctx) = ctx();
    let host = host(&ctx, "colliding_families = [\"amp\"]");
    for row in ROWS {
        compare(&ctx, &host, row);
    }
}

#[test]
fn rows_that_needed_other_branches_are_all_compared() {
    let (_tmp, ctx) = ctx();
    let host = host(&ctx, "");
    for row in NEEDS_FS_BRANCH.iter().chain(NEEDS_SHELL_BRANCH) {
        assert_eq!(pending(&ctx, &host, row), "compared", "{}", row.label);
    }
}

/// A canonical call whose result is not failure-for-the-parameter runs
/// the full comparison: the switch-over cannot hide a broken mapping.
#[test]
fn a_pending_row_is_compared_once_the_canonical_tool_accepts_it() {
    let (_tmp, ctx) = ctx();
    let host = host(&ctx, "");
    // grep's `context` exists on every branch: posing as a pending row it
    // must be compared, not excused.
    let row = Row {
        label: "Grep -C posing as pending",
        alias: "Grep",
        input: |c| json!({"pattern": "third", "-C": 1, "output_mode": "content", "path": c.path("notes.txt")}),
        canonical: "grep",
        canonical_input: |c| json!({"pattern": "third", "context": 1, "output_mode": "content", "path": c.path("notes.txt")}),
        needs: Some(("context", "-C")),
        status: "success",
        extra: None,
    };
    assert_eq!(pending(&ctx, &host, &row), "compared");
}

#[test]
fn background_shell_by_bash_output_and_kill_shell() {
    let (_tmp, ctx) = ctx();
    let host = host(&ctx, "");
    let mut seen = Vec::new();
    for (start, read, read_key, kill, kill_key) in [
        ("Bash", "BashOutput", "bash_id", "KillShell", "shell_id"),
        ("bash", "bash_output", "id", "bash_kill", "id"),
    ] {
        let started = host.call(
            start,
            json!({"command": "printf 'one\\ntwo\\n'; sleep 30", "run_in_background": true}),
        );
        assert!(started.success, "{start}: {started:?}");
        let id = started.output["id"].as_str().expect("a job id").to_string();
        // Read until both lines arrived (the job's state, polled through
        // the tool under test).
        let mut stdout = String::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !stdout.contains("two\n") {
            assert!(
                Instant::now() < deadline,
                "{read} never returned both lines: {stdout:?}"
            );
            let read_result = host.call(read, json!({ read_key: id }));
            assert!(read_result.success, "{read}: {read_result:?}");
            stdout.push_str(read_result.output["stdout"].as_str().unwrap_or_default());
            if !stdout.contains("two\n") {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let killed = host.call(kill, json!({ kill_key: id }));
        assert!(killed.success, "{kill}: {killed:?}");
        let mut out = killed.output.clone();
        normalize(&mut out);
        seen.push((stdout, out));
    }
    assert_eq!(seen[0], seen[1], "trained and canonical background flows differ");
}

#[test]
fn errors_name_the_parameters_of_the_schema_the_caller_used() {
    let (_tmp, ctx) = ctx();
    let host = host(&ctx, "");
    let message = |name: &str, input: Value| {
        let r = host.call(name, input);
        assert_eq!(r.status.as_str(), "validation_error", "{name}: {r:?}");
        r.error.expect("error").message
    };
    // The family's schema: an unknown flag, listed with the real ones.
    let m = message("Grep", json!({"pattern": "x", "-Q": 1}));
    assert!(
        m.contains("'-Q'") && m.contains("-A") && !m.contains("case_insensitive"),
        "{m}"
    );
    // A missing required parameter, by the family's name for it.
    let m = message("KillShell", json!({}));
    assert!(m.contains("shell_id"), "{m}");
    let m = message("BashOutput", json!({"id": "job-1"}));
    assert!(m.contains("bash_id") && m.contains("'id'"), "{m}");
    // Milliseconds are checked in milliseconds.
    let m = message("Bash", json!({"command": "true", "timeout": 900000}));
    assert!(m.contains("/timeout") && m.contains("600000"), "{m}");
    // The canonical schema's refusal, turned back into the caller's name
    // (grep's `context` has a minimum of 0; the caller said `-C`).
    let m = message("Grep", json!({"pattern": "x", "-C": -1}));
    assert!(m.contains("/-C") && !m.contains("/context"), "{m}");
    // Amp's shape under the colliding name, family not selected: the
    // canonical tool's terms (its required `file_path`; `old_string` is
    // optional there since `edits` may replace it).
    let m = message("edit_file", json!({"path": "a", "old_str": "x", "new_str": "y"}));
    assert!(m.contains("file_path") && m.contains("'edit_file'"), "{m}");
}

#[test]
fn a_plan_adds_its_own_profile_and_overrides_a_builtin_one() {
    let (_tmp, ctx) = ctx();
    let extra = r#"
[[alias_profiles]]
name = "ReadLines"
family = "acme"
tool = "read_file"
schema = { type = "object", additionalProperties = false, required = ["filename"], properties = { filename = { type = "string" }, first = { type = "integer" }, count = { type = "integer" } } }
[alias_profiles.params]
filename = { to = "file_path" }
first = { to = "offset" }
count = { to = "limit" }

[[alias_profiles]]
name = "KillShell"
tool = "bash_kill"
schema = { type = "object", additionalProperties = false, required = ["pid_like"], properties = { pid_like = { type = "string" } } }
[alias_profiles.params]
pid_like = { to = "id" }
"#;
    let plan = format!(
        "working_dir = {:?}\n\n[[tools]]\nmodule = \"filesystem\"\n\n[[tools]]\nmodule = \"bash\"\n[tools.config]\nsandbox = \"off\"\n{extra}",
        ctx.dir.display().to_string()
    );
    let host = InProcess::with_host("", &plan);
    let mine = host.call(
        "ReadLines",
        json!({"filename": ctx.path("notes.txt"), "first": 2, "count": 1}),
    );
    let theirs = host.call(
        "read_file",
        json!({"file_path": ctx.path("notes.txt"), "offset": 2, "limit": 1}),
    );
    assert!(mine.success, "{mine:?}");
    assert_eq!(mine.output, theirs.output);
    let r = host.call("KillShell", json!({"shell_id": "job-1"}));
    let m = r.error.expect("the built-in shape is replaced").message;
    assert!(m.contains("pid_like"), "{m}");
}

#[test]
fn a_malformed_plan_profile_fails_the_plan_naming_it() {
    let extra = r#"
[[alias_profiles]]
name = "Broken"
tool = "glob"
schema = { type = "object", properties = { a = { type = "string" } } }
[alias_profiles.params]
b = { to = "pattern" }
"#;
    let text = format!(
        "[host]\nmodule_path = [{:?}]\n\n[[tools]]\nmodule = \"filesystem\"\n{extra}",
        common::target_dir().display().to_string()
    );
    let plan = toolhost::plan::Plan::parse(&text, Path::new("broken.toml")).expect("parses");
    let err = toolhost::host::Host::open(plan)
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("'Broken'") && err.contains("'b'"), "{err}");
}

/// A plan's own profile is compiled when the plan loads (the built-in
/// ones only when first called), so a schema that does not compile fails
/// the load, naming the profile, rather than the first call to it.
#[test]
fn a_plan_profile_whose_schema_does_not_compile_fails_the_plan_naming_it() {
    let extra = r#"
[[alias_profiles]]
name = "BadSchema"
tool = "glob"
schema = { type = "object", properties = { a = { type = "no-such-type" } } }
"#;
    let text = format!(
        "[host]\nmodule_path = [{:?}]\n\n[[tools]]\nmodule = \"filesystem\"\n{extra}",
        common::target_dir().display().to_string()
    );
    let plan = toolhost::plan::Plan::parse(&text, Path::new("bad-schema.toml")).expect("parses");
    let err = toolhost::host::Host::open(plan)
        .err()
        .expect("refused")
        .to_string();
    assert!(
        err.contains("'BadSchema'") && err.contains("invalid schema"),
        "{err}"
    );
}

#[test]
fn a_policy_rule_for_a_profile_only_name_is_refused_with_the_name_to_use() {
    let text = format!(
        "[host]\nmodule_path = [{:?}]\n\n[[tools]]\nmodule = \"filesystem\"\n\n[policy.tools.MultiEdit]\ndecision = \"deny\"\n",
        common::target_dir().display().to_string()
    );
    let plan = toolhost::plan::Plan::parse(&text, Path::new("policy.toml")).expect("parses");
    let err = toolhost::host::Host::open(plan)
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("[policy.tools.edit_file]"), "{err}");
}

#[test]
fn hostile_inputs_to_profiles_are_refused_in_the_callers_terms() {
    let (_tmp, ctx) = ctx();
    let host = host(&ctx, "");
    let refused = |name: &str, input: Value| {
        let r = host.call(name, input);
        assert_eq!(r.status.as_str(), "validation_error", "{name}: {r:?}");
        r.error.expect("error").message
    };
    // A domain that would smuggle operators into the query.
    let m = refused(
        "WebSearch",
        json!({"query": "q", "allowed_domains": ["a.org OR evil"]}),
    );
    assert!(m.contains("/allowed_domains/0"), "{m}");
    // More domains than the profile takes.
    let many: Vec<String> = (0..21).map(|i| format!("d{i}.org")).collect();
    let m = refused("WebSearch", json!({"query": "q", "blocked_domains": many}));
    assert!(m.contains("/blocked_domains"), "{m}");
    // Not a number where milliseconds are expected; a negative one.
    let m = refused("Bash", json!({"command": "true", "timeout": "1500"}));
    assert!(m.contains("/timeout"), "{m}");
    let m = refused("Bash", json!({"command": "true", "timeout": -5}));
    assert!(m.contains("/timeout"), "{m}");
    // Not an object at all.
    let m = refused("Grep", json!(["pattern"]));
    assert!(m.contains("Grep"), "{m}");
    // The host is still answering.
    assert!(
        host.call("Glob", json!({"pattern": "*.txt", "path": ctx.path("")}))
            .success
    );
}

#[test]
fn a_colliding_name_with_its_family_selected_keeps_the_canonical_shape_and_errs_in_the_closer_terms() {
    let (_tmp, ctx) = ctx();
    let amp = host(&ctx, "colliding_families = [\"amp\"]");
    reset_tree(&ctx.dir);
    // The canonical shape still works under the shared name.
    let canonical = amp.call(
        "edit_file",
        json!({"file_path": ctx.path("edit.txt"), "old_string": "three", "new_string": "3"}),
    );
    assert!(canonical.success, "{canonical:?}");
    // Amp's shape missing `new_str`: the error is in Amp's terms.
    let amp_shape = amp.call("edit_file", json!({"path": ctx.path("edit.txt"), "old_str": "3"}));
    let m = amp_shape.error.expect("refused").message;
    assert!(m.contains("new_str") && m.contains("Amp's edit_file"), "{m}");
    // The canonical shape missing `new_string`: the canonical terms.
    let own = amp.call(
        "edit_file",
        json!({"file_path": ctx.path("edit.txt"), "old_string": "3"}),
    );
    let m = own.error.expect("refused").message;
    assert!(m.contains("new_string") && !m.contains("Amp"), "{m}");
    // Without the family selected, Amp's shape is refused in canonical terms.
    let plain = host(&ctx, "");
    let r = plain.call(
        "edit_file",
        json!({"path": ctx.path("edit.txt"), "old_str": "3", "new_str": "4"}),
    );
    let m = r.error.expect("refused").message;
    assert!(m.contains("file_path") && !m.contains("Amp"), "{m}");
}

#[test]
fn web_fetch_without_a_prompt_carries_no_note() {
    let (_tmp, ctx) = ctx();
    let host = host(&ctx, "");
    let plain = host.call("web_fetch", json!({"url": ctx.web.url("/plain")}));
    assert!(plain.success, "{plain:?}");
    assert!(plain.output.get("prompt_note").is_none(), "{}", plain.output);
    let amp = host.call("read_web_page", json!({"url": ctx.web.url("/plain")}));
    assert!(amp.success, "{amp:?}");
    assert!(amp.output.get("prompt_note").is_none(), "{}", amp.output);
    assert_eq!(amp.output["content"], plain.output["content"]);
}

/// Reads a background job through `read` (with `filter`) until `until`
/// shows up, then ends it with `kill`; returns what was read.
fn read_filtered(
    host: &InProcess,
    start: &str,
    read: (&str, &str),
    kill: (&str, &str),
    until: &str,
) -> String {
    let started = host.call(
        start,
        json!({"command": "printf 'keep 1\\ndrop\\nkeep 2\\n'; sleep 30", "run_in_background": true}),
    );
    assert!(started.success, "{start}: {started:?}");
    let id = started.output["id"].as_str().expect("a job id").to_string();
    let mut stdout = String::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !stdout.contains(until) {
        assert!(
            Instant::now() < deadline,
            "{} never returned {until:?}: {stdout:?}",
            read.0
        );
        let r = host.call(read.0, json!({ read.1: id, "filter": "^keep" }));
        assert!(r.success, "{}: {r:?}", read.0);
        stdout.push_str(r.output["stdout"].as_str().unwrap_or_default());
        if !stdout.contains(until) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let killed = host.call(kill.0, json!({ kill.1: id }));
    assert!(killed.success, "{}: {killed:?}", kill.0);
    stdout
}

/// BashOutput's `filter` needs the shell branch's canonical `filter`: until
/// then it is refused in the caller's terms; after, the trained and the
/// canonical flows must read the same filtered lines.
#[test]
fn bash_output_filter_is_refused_until_bash_output_takes_it_then_matches() {
    let (_tmp, ctx) = ctx();
    let host = host(&ctx, "");
    let started = host.call(
        "bash",
        json!({"command": "printf 'keep 1\\ndrop\\n'; sleep 30", "run_in_background": true}),
    );
    let id = started.output["id"].as_str().expect("a job id").to_string();
    let probe = host.call("bash_output", json!({"id": id, "filter": "^keep"}));
    let pending = probe.status.as_str() == "validation_error"
        && probe
            .error
            .as_ref()
            .is_some_and(|e| e.message.contains("'filter'"));
    if pending {
        let trained = host.call("BashOutput", json!({"bash_id": id, "filter": "^keep"}));
        let error = trained.error.expect("refused while bash_output lacks filter");
        assert!(error.message.contains("'filter'"), "{}", error.message);
        assert_eq!(error.details.expect("details")["stage"], "canonical");
        assert!(host.call("bash_kill", json!({"id": id})).success);
        return;
    }
    assert!(host.call("bash_kill", json!({"id": id})).success);
    let trained = read_filtered(
        &host,
        "Bash",
        ("BashOutput", "bash_id"),
        ("KillShell", "shell_id"),
        "keep 2",
    );
    let canonical = read_filtered(
        &host,
        "bash",
        ("bash_output", "id"),
        ("bash_kill", "id"),
        "keep 2",
    );
    assert_eq!(trained, canonical);
    assert!(!trained.contains("drop"), "{trained}");
}

/// An idempotency key covers the canonical call: the same write by its
/// trained name and by its canonical name is one call.
#[test]
fn an_idempotency_key_sees_the_mapped_input() {
    let (_tmp, ctx) = ctx();
    let host = host(&ctx, &format!("state_dir = {:?}", ctx.path(".state")));
    let call = |name: &str, input: Value| {
        host.runtime
            .block_on(host.pipeline.call(toolhost::pipeline::Call {
                name: name.into(),
                input,
                idempotency_key: Some("write-once".into()),
                ..Default::default()
            }))
    };
    let first = call(
        "create_file",
        json!({"path": ctx.path("new.txt"), "content": "once\n"}),
    );
    assert!(first.success, "{first:?}");
    assert!(first.metadata.extra.get("idempotent_replay").is_none());
    std::fs::write(ctx.dir.join("new.txt"), "changed\n").expect("change the file");
    let again = call(
        "write_file",
        json!({"file_path": ctx.path("new.txt"), "content": "once\n"}),
    );
    assert_eq!(
        again.metadata.extra.get("idempotent_replay"),
        Some(&json!(true)),
        "{again:?}"
    );
    assert_eq!(
        std::fs::read_to_string(ctx.dir.join("new.txt")).expect("read"),
        "changed\n",
        "the replay did not write again"
    );
}

/// Amp's `undo_edit` (`path`) under the colliding name, after an Amp-shaped
/// `edit_file`: the same flow as the canonical `edit_file` then `undo_edit`
/// (`file_path`), step by step, and both end with the file as it was.
#[test]
fn amp_undo_edit_after_an_amp_edit_matches_the_canonical_flow() {
    let (_tmp, ctx) = ctx();
    let host = host(&ctx, "colliding_families = [\"amp\"]");
    let flows: [[(&str, Value); 3]; 2] = [
        [
            (
                "edit_file",
                json!({"path": ctx.path("edit.txt"), "old_str": "three", "new_str": "3"}),
            ),
            ("undo_edit", json!({"path": ctx.path("edit.txt")})),
            ("undo_edit", json!({"path": ctx.path("edit.txt")})),
        ],
        [
            (
                "edit_file",
                json!({"file_path": ctx.path("edit.txt"), "old_string": "three", "new_string": "3"}),
            ),
            ("undo_edit", json!({"file_path": ctx.path("edit.txt")})),
            ("undo_edit", json!({"file_path": ctx.path("edit.txt")})),
        ],
    ];
    let mut seen = Vec::new();
    for flow in flows {
        reset_tree(&ctx.dir);
        let original = std::fs::read_to_string(ctx.dir.join("edit.txt")).expect("edit.txt");
        let mut steps = Vec::new();
        for (name, input) in flow {
            let result = host.call(name, input);
            let mut output = result.output.clone();
            normalize(&mut output);
            steps.push((
                result.status.as_str().to_string(),
                result.error.as_ref().map(|e| e.code.clone()),
                output,
                std::fs::read_to_string(ctx.dir.join("edit.txt")).expect("edit.txt"),
            ));
        }
        assert_eq!(steps[0].0, "success", "the edit: {steps:?}");
        assert_eq!(steps[1].0, "success", "the undo: {steps:?}");
        assert_eq!(steps[1].3, original, "the undo restores the file: {steps:?}");
        assert_eq!(
            steps[2].1.as_deref(),
            Some("nothing_to_undo"),
            "a second undo has nothing left: {steps:?}"
        );
        seen.push(steps);
    }
    assert_eq!(seen[0], seen[1], "Amp's and the canonical undo flows differ");
}

/// Claude Code's `Read` with `pages` on a PDF (generated here) gives what
/// `read_file` with `pages` gives: that page's text only.
#[test]
fn read_with_pages_on_a_pdf_matches_read_file() {
    let (_tmp, ctx) = ctx();
    let host = host(&ctx, "");
    let doc = ctx.dir.join("doc.pdf");
    std::fs::write(
        &doc,
        common::pdf::pdf(&["Hello first page", "Second words", "Third end"]),
    )
    .expect("pdf");
    let input = json!({"file_path": doc.display().to_string(), "pages": "2"});
    let trained = host.call("Read", input.clone());
    let canonical = host.call("read_file", input);
    assert_eq!(trained.status.as_str(), "success", "{trained:?}");
    let (mut a, mut b) = (trained.output.clone(), canonical.output.clone());
    normalize(&mut a);
    normalize(&mut b);
    assert_eq!(a, b, "Read and read_file differ on pages");
    let text = a.to_string();
    assert!(
        text.contains("Second words") && !text.contains("Hello first page"),
        "{text}"
    );
    std::fs::remove_file(&doc).expect("remove pdf");
}
