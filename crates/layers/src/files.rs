//! A crate's files as a graph: one edge from a file to each file whose
//! module it names in a `crate::` or `super::` path (in a `use` or inline),
//! resolved to the longest module prefix that is a file, and the import
//! circles (strongly connected components) of that graph.
//!
//! What it does not see, on purpose: a parent naming its child (`mod x;`,
//! `pub use x::Y;` in `mod.rs`) is how Rust builds a module tree, not a
//! dependency, so only `crate::` and `super::` paths count; comments and
//! string literals are skipped. `super::` inside an inline module (`mod
//! tests { use super::*; }`) names the file itself, not its parent. Paths
//! inside a `#[cfg(test)]` module are skipped, as the crate check skips
//! dev-dependencies: a test may use anything.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use regex::Regex;

/// A crate's files and the edges between them.
#[derive(Debug, Default)]
pub struct Graph {
    /// Each file, relative to the folder scanned.
    pub files: Vec<String>,
    /// For each file, the files it names and the paths that name them.
    pub edges: Vec<BTreeMap<usize, BTreeSet<String>>>,
}

/// Every `.rs` file under `root`, as (path relative to `root`, text).
pub fn read_sources(root: &Path) -> std::io::Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path: PathBuf = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(root).unwrap_or(&path);
                let rel = rel.to_string_lossy().replace('\\', "/");
                out.push((rel, std::fs::read_to_string(&path)?));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The module path of a file: `a/b.rs` and `a/b/mod.rs` are `[a, b]`;
/// `lib.rs` and `main.rs` are the crate root.
fn module_path(rel: &str) -> Vec<String> {
    let stem = rel.strip_suffix(".rs").unwrap_or(rel);
    let mut parts: Vec<String> = stem.split('/').map(str::to_string).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// `text` with comments and the contents of string and char literals
/// blanked to spaces (newlines kept), so that only code is searched.
pub fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |p| i + p);
                blank(&mut out, i, end);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let (mut depth, mut j) = (1, i + 2);
                while j < b.len() && depth > 0 {
                    if b[j] == b'/' && b.get(j + 1) == Some(&b'*') {
                        depth += 1;
                        j += 2;
                    } else if b[j] == b'*' && b.get(j + 1) == Some(&b'/') {
                        depth -= 1;
                        j += 2;
                    } else {
                        j += 1;
                    }
                }
                blank(&mut out, i, j);
                i = j;
            }
            b'r' if !prev_is_ident(b, i) && matches!(b.get(i + 1), Some(b'"' | b'#')) => {
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                if b.get(i + 1 + hashes) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                let start = i + 2 + hashes;
                let end = b[start..]
                    .windows(close.len())
                    .position(|w| w == close.as_slice())
                    .map_or(b.len(), |p| start + p + close.len());
                blank(&mut out, i, end);
                i = end;
            }
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                let end = (j + 1).min(b.len());
                blank(&mut out, i, end);
                i = end;
            }
            // A char literal ('x', '\n', '"'); a lifetime ('a) is left alone.
            b'\'' => {
                let end = if b.get(i + 1) == Some(&b'\\') {
                    b[i + 2..].iter().position(|&c| c == b'\'').map(|p| i + 2 + p + 1)
                } else {
                    let len = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                    (b.get(i + 1 + len) == Some(&b'\'')).then_some(i + 2 + len)
                };
                match end {
                    Some(end) => {
                        blank(&mut out, i, end);
                        i = end;
                    }
                    None => i += 1,
                }
            }
            _ => i += 1,
        }
    }
    String::from_utf8(out).unwrap_or_default()
}

fn prev_is_ident(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

/// For each byte of `code`: how many inline modules (`mod x { .. }`) it
/// sits in, and whether one of them is a test module (`#[cfg(test)]`).
fn inline_depths(code: &str) -> Vec<(u8, bool)> {
    let opener = Regex::new(r"\bmod\s+[A-Za-z_]\w*\s*$").expect("valid regex");
    let test = Regex::new(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+[A-Za-z_]\w*\s*$")
        .expect("valid regex");
    let mut depths = vec![(0u8, false); code.len()];
    // For each open brace: whether it opens a module, and a test module.
    let mut stack: Vec<(bool, bool)> = Vec::new();
    let (mut depth, mut tests) = (0u8, 0u8);
    for (i, c) in code.bytes().enumerate() {
        match c {
            b'{' => {
                let is_mod = opener.is_match(&code[..i]);
                let is_test = is_mod && test.is_match(&code[..i]);
                stack.push((is_mod, is_test));
                depth += u8::from(is_mod);
                tests += u8::from(is_test);
            }
            b'}' => {
                if let Some((is_mod, is_test)) = stack.pop() {
                    depth -= u8::from(is_mod);
                    tests -= u8::from(is_test);
                }
            }
            _ => {}
        }
        depths[i] = (depth, tests > 0);
    }
    depths
}

/// The paths one `use`-tree names: `a::{b, c::{d, self}, e as f}` is
/// `a::b`, `a::c::d`, `a::c`, `a::e`.
fn expand(prefix: &[String], tree: &str) -> Vec<Vec<String>> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let tree = tree.split(" as ").next().unwrap_or(tree);
        let mut path = prefix.to_vec();
        path.extend(
            tree.split("::")
                .map(str::trim)
                .filter(|s| !s.is_empty() && *s != "self" && *s != "*")
                .map(str::to_string),
        );
        return vec![path];
    };
    let mut path = prefix.to_vec();
    path.extend(
        tree[..open]
            .split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string),
    );
    let inner = tree[open + 1..]
        .trim_end()
        .strip_suffix('}')
        .unwrap_or(&tree[open + 1..]);
    let (mut out, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.extend(expand(&path, &inner[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    if !inner[start..].trim().is_empty() {
        out.extend(expand(&path, &inner[start..]));
    }
    out
}

/// The `crate::`/`super::` paths written in `code` (from [`code_only`]),
/// each as its written text and its absolute module path, for a file whose
/// module path is `me`.
fn paths_in(code: &str, me: &[String]) -> Vec<(String, Vec<String>)> {
    let start = Regex::new(r"(?:^|[^\w$:])((?:crate|super)\s*::)").expect("valid regex");
    let depths = inline_depths(code);
    let mut out = Vec::new();
    for cap in start.captures_iter(code) {
        let from = cap.get(1).expect("group 1").start();
        if depths[from].1 {
            continue; // a test module's imports are not the crate's layering
        }
        let text = path_at(&code[from..]);
        let head = text.split('{').next().unwrap_or("");
        let segments: Vec<&str> = head.split("::").map(str::trim).collect();
        let (base, skip) = if segments.first() == Some(&"crate") {
            (Vec::new(), 1)
        } else {
            let supers = segments.iter().take_while(|s| **s == "super").count();
            let inline = usize::from(depths[from].0);
            if supers <= inline {
                continue; // names this file's own module
            }
            let up = supers - inline;
            if up > me.len() {
                continue;
            }
            (me[..me.len() - up].to_vec(), supers)
        };
        let mut rest = text.as_str();
        for _ in 0..skip {
            rest = rest.split_once("::").map_or("", |(_, r)| r);
        }
        let short: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let short: String = short.chars().take(80).collect();
        for path in expand(&base, rest) {
            out.push((short.clone(), path));
        }
    }
    out
}

/// The path written at the start of `text`: `::`-joined identifiers, ending
/// at anything else, or after one braced group (braces balanced) or `*`.
fn path_at(text: &str) -> String {
    let b = text.as_bytes();
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && b[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    let mut i = 0;
    loop {
        skip_ws(&mut i);
        match b.get(i) {
            Some(b'{') => {
                let mut depth = 0;
                while i < b.len() && b[i] != b';' {
                    if b[i] == b'{' {
                        depth += 1;
                    } else if b[i] == b'}' {
                        depth -= 1;
                        if depth == 0 {
                            i += 1;
                            break;
                        }
                    }
                    i += 1;
                }
                break;
            }
            Some(b'*') => {
                i += 1;
                break;
            }
            Some(c) if c.is_ascii_alphabetic() || *c == b'_' => {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                let end = i;
                skip_ws(&mut i);
                if text[i..].starts_with("::") {
                    i += 2;
                } else {
                    i = end;
                    break;
                }
            }
            _ => break,
        }
    }
    text[..i].to_string()
}

impl Graph {
    /// The graph of one crate's sources (paths relative to its source
    /// folder, and their text).
    pub fn of(sources: &[(String, String)]) -> Graph {
        let modules: BTreeMap<Vec<String>, usize> = sources
            .iter()
            .enumerate()
            .map(|(i, (rel, _))| (module_path(rel), i))
            .collect();
        let mut graph = Graph {
            files: sources.iter().map(|(rel, _)| rel.clone()).collect(),
            edges: vec![BTreeMap::new(); sources.len()],
        };
        for (i, (rel, text)) in sources.iter().enumerate() {
            let me = module_path(rel);
            for (written, path) in paths_in(&code_only(text), &me) {
                let target = (0..=path.len()).rev().find_map(|n| modules.get(&path[..n]));
                if let Some(&t) = target {
                    if t != i {
                        graph.edges[i].entry(t).or_default().insert(written);
                    }
                }
            }
        }
        graph
    }

    /// The strongly connected components of more than `limit` files, each
    /// sorted, largest first.
    pub fn circles(&self, limit: usize) -> Vec<Vec<usize>> {
        let mut tarjan = Tarjan {
            graph: self,
            index: vec![None; self.files.len()],
            low: vec![0; self.files.len()],
            on_stack: vec![false; self.files.len()],
            stack: Vec::new(),
            next: 0,
            found: Vec::new(),
        };
        for v in 0..self.files.len() {
            if tarjan.index[v].is_none() {
                tarjan.visit(v);
            }
        }
        let mut circles: Vec<Vec<usize>> = tarjan.found.into_iter().filter(|c| c.len() > limit).collect();
        for c in &mut circles {
            c.sort_by(|a, b| self.files[*a].cmp(&self.files[*b]));
        }
        circles.sort_by_key(|c| std::cmp::Reverse(c.len()));
        circles
    }

    /// A circle as text: its files, then each edge inside it with the paths
    /// that make it, so whoever breaks it sees where to cut.
    pub fn describe(&self, circle: &[usize]) -> String {
        let mut out = format!("{} files import each other:\n", circle.len());
        for &f in circle {
            for (t, why) in &self.edges[f] {
                if circle.contains(t) {
                    let why: Vec<&str> = why.iter().map(String::as_str).collect();
                    out.push_str(&format!(
                        "  {} -> {}  ({})\n",
                        self.files[f],
                        self.files[*t],
                        why.join(", ")
                    ));
                }
            }
        }
        out
    }
}

struct Tarjan<'a> {
    graph: &'a Graph,
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    next: usize,
    found: Vec<Vec<usize>>,
}

impl Tarjan<'_> {
    fn visit(&mut self, v: usize) {
        self.index[v] = Some(self.next);
        self.low[v] = self.next;
        self.next += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        let targets: Vec<usize> = self.graph.edges[v].keys().copied().collect();
        for w in targets {
            match self.index[w] {
                None => {
                    self.visit(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(iw) if self.on_stack[w] => self.low[v] = self.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut component = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            self.found.push(component);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(files: &[(&str, &str)]) -> Graph {
        let sources: Vec<(String, String)> = files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect();
        Graph::of(&sources)
    }

    #[test]
    fn a_circle_of_four_is_found_and_three_is_allowed() {
        let four = graph(&[
            ("lib.rs", "pub mod a; pub mod b; pub mod c; pub mod d;"),
            ("a.rs", "use crate::b::X;"),
            ("b.rs", "use crate::{c::Y, self};"),
            ("c/mod.rs", "fn f() { crate::d::g() }"),
            ("d.rs", "use super::a;"),
        ]);
        let circles = four.circles(3);
        assert_eq!(circles.len(), 1, "{circles:?}");
        assert_eq!(circles[0].len(), 4);
        let three = graph(&[
            ("a.rs", "use crate::b::X;"),
            ("b.rs", "use crate::c::Y;"),
            ("c.rs", "use crate::a::Z;"),
        ]);
        assert!(three.circles(3).is_empty());
        assert_eq!(three.circles(2).len(), 1);
    }

    #[test]
    fn comments_strings_and_inline_test_modules_are_not_edges() {
        let g = graph(&[
            ("a/mod.rs", "pub mod b;"),
            (
                "a/b.rs",
                "// use crate::c;\n/// [`crate::c`]\nconst S: &str = \"crate::c\";\n\
                 const R: &str = r#\"super::c\"#;\nconst C: char = '\"';\n\
                 #[cfg(test)] mod tests { use super::*; use crate::c::Y; }",
            ),
            ("c.rs", ""),
        ]);
        assert!(g.edges.iter().all(BTreeMap::is_empty), "{:?}", g.edges);
    }

    #[test]
    fn nested_use_trees_and_supers_resolve_to_files() {
        let g = graph(&[
            ("x/y/z.rs", "use super::super::{w::{V, self as q}, top};"),
            ("x/w.rs", ""),
            ("x/mod.rs", ""),
        ]);
        let z = g.files.iter().position(|f| f == "x/y/z.rs").unwrap();
        let w = g.files.iter().position(|f| f == "x/w.rs").unwrap();
        let x = g.files.iter().position(|f| f == "x/mod.rs").unwrap();
        let targets: Vec<usize> = g.edges[z].keys().copied().collect();
        assert_eq!(targets, {
            let mut t = vec![w, x];
            t.sort();
            t
        });
    }
}
