//! Property test (issue #20): path resolution against a model of the tree.
//!
//! Each case builds a random tree under an allowed root (folders, files,
//! symlinks: relative, absolute into the root or out of it, dangling, loops;
//! long, unicode, spaced, newline and `~` names) beside an outside folder,
//! then asks read_file for random paths (with `..`, `.`, links, absolute
//! forms) and checks each answer (the file's content, a folder, not found,
//! denied, invalid) against a small model of what the policy promises:
//!
//! - a path is first normalized lexically; outside the root → denied;
//! - a `.git` component (a default deny rule) lexically → denied;
//! - the kernel resolves left to right beneath the root: a missing name →
//!   not found; a link that is absolute or climbs above the root, or too
//!   many links → the path is resolved ambiently, and served only when that
//!   resolution exists and lands inside the root (else denied);
//! - the real location must not be denied either (`.git` again).
//!
//! The seed is fixed; 48 cases by default, 1,000 with TOOLHOST_LONG_TESTS=1.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::test_runner::{Config as PropConfig, RngSeed, TestCaseError, TestRunner};
use serde_json::json;
use toolhost_core::testing::TestContext;
use toolhost_filesystem::config::Config;
use toolhost_filesystem::tools::read_file::ReadFile;

/// Names the trees are made of (and paths are asked with).
fn pool() -> Vec<String> {
    vec![
        "a".into(),
        "b".into(),
        "é ü".into(),
        "sp ace".into(),
        "new\nline".into(),
        "-dash".into(),
        "...".into(),
        "🦀".into(),
        ".git".into(),
        "~tilde".into(),
        "n".repeat(255),
    ]
}

#[derive(Clone, Debug)]
enum Kind {
    Dir,
    File,
    /// Relative target: components (pool indices, or `..`/`.`/root/out).
    Rel(Vec<Step>),
    /// Absolute target below the temp folder: "root" or "out" then steps.
    Abs(bool, Vec<Step>),
}

#[derive(Clone, Copy, Debug)]
enum Step {
    Name(usize),
    Up,
    Here,
    RootName,
    OutName,
}

#[derive(Clone, Debug)]
struct Op {
    parent: usize,
    name: usize,
    kind: Kind,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (0..11usize).prop_map(Step::Name),
        3 => Just(Step::Up),
        1 => Just(Step::Here),
        1 => Just(Step::RootName),
        1 => Just(Step::OutName),
    ]
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        3 => Just(Kind::Dir),
        3 => Just(Kind::File),
        3 => prop::collection::vec(step(), 1..5).prop_map(Kind::Rel),
        1 => (any::<bool>(), prop::collection::vec(step(), 0..3)).prop_map(|(r, s)| Kind::Abs(r, s)),
    ]
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        (0..50usize, 0..11usize, kind()).prop_map(|(parent, name, kind)| Op { parent, name, kind }),
        1..24,
    )
}

/// A query: steps below the working dir, and whether it is given absolute.
fn queries() -> impl Strategy<Value = Vec<(Vec<Step>, bool)>> {
    prop::collection::vec(
        (prop::collection::vec(step(), 1..7), prop::bool::weighted(0.2)),
        1..10,
    )
}

/// The model: every node by its path below the temp folder.
#[derive(Clone, Debug, PartialEq)]
enum Node {
    Dir,
    File,
    Link(String),
}

type Tree = BTreeMap<Vec<String>, Node>;

fn step_name(s: Step, names: &[String]) -> String {
    match s {
        Step::Name(i) => names[i].clone(),
        Step::Up => "..".into(),
        Step::Here => ".".into(),
        Step::RootName => "root".into(),
        Step::OutName => "out".into(),
    }
}

#[derive(Debug, PartialEq)]
enum Answer {
    File(Vec<String>),
    Dir,
    NotFound,
    Denied,
    Invalid,
}

enum Walk {
    Found(Vec<String>),
    Missing,
    /// An absolute link, a climb above the start, or a loop.
    Escape,
}

/// Resolves `comps` from `start` the way the kernel does: left to right,
/// links followed (40 at most). `beneath`: absolute links and climbs above
/// `start` are escapes; otherwise they resolve freely within the temp
/// folder (an absolute target is `tmp` + its components).
fn walk(tree: &Tree, tmp_len: usize, start: Vec<String>, comps: Vec<String>, beneath: bool) -> Walk {
    let floor = start.len();
    let mut cur = start;
    let mut queue: std::collections::VecDeque<String> = comps.into();
    let mut links = 0;
    while let Some(c) = queue.pop_front() {
        match c.as_str() {
            "" | "." => continue,
            ".." => {
                if beneath && cur.len() <= floor {
                    return Walk::Escape;
                }
                if cur.pop().is_none() {
                    return Walk::Missing; // above the temp folder: nothing of ours there
                }
                continue;
            }
            _ => {}
        }
        let mut next = cur.clone();
        next.push(c);
        match tree.get(&next) {
            None => return Walk::Missing,
            Some(Node::Dir) => cur = next,
            Some(Node::File) => {
                if !queue.is_empty() {
                    return Walk::Missing; // ENOTDIR
                }
                cur = next;
            }
            Some(Node::Link(target)) => {
                links += 1;
                if links > 40 {
                    return Walk::Escape;
                }
                let mut parts: Vec<String> = Vec::new();
                if let Some(abs) = target.strip_prefix('/') {
                    if beneath {
                        return Walk::Escape;
                    }
                    // Absolute targets are tmp/...: restart from the temp folder.
                    let below: Vec<&str> = abs.split('/').collect();
                    cur = Vec::new();
                    parts.extend(below.iter().skip(tmp_len).map(|s| s.to_string()));
                } else {
                    parts.extend(target.split('/').map(str::to_string));
                }
                for p in parts.into_iter().rev() {
                    queue.push_front(p);
                }
            }
        }
    }
    Walk::Found(cur)
}

fn denied(below_root: &[String]) -> bool {
    below_root.iter().any(|c| c == ".git")
}

/// What the policy promises for `raw` (relative to `root`).
fn expect(tree: &Tree, tmp_len: usize, raw: &str, rel_steps: &[String], absolute: bool) -> Answer {
    if raw.len() > 4096 || (!absolute && raw.starts_with('~')) {
        return Answer::Invalid;
    }
    // Lexical: normalize below the temp folder.
    let mut lex: Vec<String> = vec!["root".into()];
    for c in rel_steps {
        match c.as_str() {
            "." => {}
            ".." => {
                if lex.pop().is_none() {
                    return Answer::Denied; // above the temp folder: outside
                }
            }
            _ => lex.push(c.clone()),
        }
    }
    if lex.first().map(String::as_str) != Some("root") {
        return Answer::Denied;
    }
    if denied(&lex[1..]) {
        return Answer::Denied;
    }
    let start = vec!["root".to_string()];
    let real = match walk(tree, tmp_len, start.clone(), lex[1..].to_vec(), true) {
        Walk::Found(real) => real,
        Walk::Missing => return Answer::NotFound,
        Walk::Escape => match walk(tree, tmp_len, Vec::new(), lex.clone(), false) {
            Walk::Found(real) => real,
            Walk::Missing | Walk::Escape => return Answer::Denied,
        },
    };
    if real.first().map(String::as_str) != Some("root") || denied(&real[1..]) {
        return Answer::Denied;
    }
    match tree.get(&real) {
        Some(Node::File) => Answer::File(real),
        Some(Node::Dir) => Answer::Dir,
        _ if real.len() == 1 => Answer::Dir,
        _ => Answer::NotFound,
    }
}

fn content_of(path: &[String]) -> String {
    format!("content of {:?}\n", path.join("/"))
}

/// Builds the tree on disk and in the model; ops whose parent is not a
/// real folder, or whose name is taken, are skipped in both.
fn build(tmp: &Path, ops: &[Op], names: &[String]) -> Tree {
    let mut tree = Tree::new();
    let mut dirs: Vec<Vec<String>> = Vec::new();
    let add = |tree: &mut Tree, path: &[&str], node: Node| {
        let key: Vec<String> = path.iter().map(|s| s.to_string()).collect();
        let at: PathBuf = key.iter().collect();
        match &node {
            Node::Dir => std::fs::create_dir(tmp.join(&at)).unwrap_or_else(|e| panic!("{e}")),
            Node::File => std::fs::write(tmp.join(&at), content_of(&key)).unwrap_or_else(|e| panic!("{e}")),
            Node::Link(t) => std::os::unix::fs::symlink(t, tmp.join(&at)).unwrap_or_else(|e| panic!("{e}")),
        }
        tree.insert(key, node);
    };
    add(&mut tree, &["root"], Node::Dir);
    add(&mut tree, &["root", ".git"], Node::Dir);
    add(&mut tree, &["root", ".git", "config"], Node::File);
    add(&mut tree, &["out"], Node::Dir);
    add(&mut tree, &["out", "a"], Node::File);
    add(&mut tree, &["out", "b"], Node::Dir);
    add(&mut tree, &["out", "b", "a"], Node::File);
    dirs.push(vec!["root".into()]);
    dirs.push(vec!["root".into(), ".git".into()]);
    let tmp_text = tmp.to_string_lossy().into_owned();
    for op in ops {
        let parent = dirs[op.parent % dirs.len()].clone();
        let mut path = parent.clone();
        path.push(names[op.name].clone());
        if tree.contains_key(&path) {
            continue;
        }
        let node = match &op.kind {
            Kind::Dir => Node::Dir,
            Kind::File => Node::File,
            Kind::Rel(steps) => Node::Link(
                steps
                    .iter()
                    .map(|s| step_name(*s, names))
                    .collect::<Vec<_>>()
                    .join("/"),
            ),
            Kind::Abs(in_root, steps) => {
                let mut t = format!("{tmp_text}/{}", if *in_root { "root" } else { "out" });
                for s in steps {
                    t.push('/');
                    t.push_str(&step_name(*s, names));
                }
                Node::Link(t)
            }
        };
        let refs: Vec<&str> = path.iter().map(String::as_str).collect();
        add(&mut tree, &refs, node.clone());
        if node == Node::Dir {
            dirs.push(path);
        }
    }
    tree
}

fn cases() -> u32 {
    if std::env::var_os("TOOLHOST_LONG_TESTS").is_some() {
        1000
    } else {
        48
    }
}

#[test]
fn read_file_answers_as_the_model_of_the_tree_says() {
    let mut runner = TestRunner::new(PropConfig {
        cases: cases(),
        rng_seed: RngSeed::Fixed(0x2020_0020),
        failure_persistence: None,
        ..PropConfig::default()
    });
    let names = pool();
    let tally = std::cell::RefCell::new(BTreeMap::<&'static str, usize>::new());
    let result = runner.run(&(ops(), queries()), |(ops, queries)| {
        let dir = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let tmp = dir.path().canonicalize().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let tmp_len = tmp.components().count() - 1;
        let tree = build(&tmp, &ops, &names);
        let root = tmp.join("root");
        let state = toolhost_filesystem::build_state(&root, Config::default()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let read = ReadFile { state };
        let ctx = TestContext::new();
        // The random paths, then every node of the tree by its own path.
        let mut asked: Vec<(Vec<String>, bool)> = queries
            .iter()
            .map(|(steps, absolute)| (steps.iter().map(|s| step_name(*s, &names)).collect(), *absolute))
            .collect();
        asked.extend(
            tree.keys()
                .filter(|k| k.len() > 1 && k[0] == "root")
                .map(|k| (k[1..].to_vec(), false)),
        );
        for (comps, absolute) in asked {
            let rel = comps.join("/");
            let raw = if absolute {
                format!("{}/{rel}", root.display())
            } else {
                rel.clone()
            };
            let want = expect(&tree, tmp_len, &raw, &comps, absolute);
            let label = match &want {
                Answer::File(_) => "file",
                Answer::Dir => "folder",
                Answer::NotFound => "not found",
                Answer::Denied => "denied",
                Answer::Invalid => "invalid",
            };
            *tally.borrow_mut().entry(label).or_default() += 1;
            let got = ctx.call(&read, json!({"file_path": raw, "limit": 5}), &root);
            let status = got.status.as_str();
            let code = got.error.as_ref().map(|e| e.code.clone()).unwrap_or_default();
            let output = got.output.as_str().unwrap_or_default().to_string();
            let ok = match &want {
                Answer::File(path) => {
                    status == "success" && output.contains(content_of(path).trim_end().trim_end_matches('"'))
                }
                Answer::Dir => status == "success" && output.contains("is a folder"),
                Answer::NotFound => code == "not_found",
                Answer::Denied => status == "policy_denied",
                Answer::Invalid => status == "validation_error",
            };
            prop_assert!(
                ok,
                "path {raw:?}: the model says {want:?}, read_file answered {status} {code} {:?}\ntree: {tree:#?}",
                got.error.as_ref().map(|e| e.message.clone()).unwrap_or(output)
            );
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    // Every kind of answer must have come up, or the generator is too tame.
    let tally = tally.into_inner();
    eprintln!("path model answers: {tally:?}");
    for label in ["file", "folder", "not found", "denied", "invalid"] {
        assert!(
            tally.get(label).copied().unwrap_or(0) > 0,
            "no {label:?} case: {tally:?}"
        );
    }
}
