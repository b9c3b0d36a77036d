//! A crate's top-level modules as a graph: the file graph ([`Graph`])
//! folded so that every file counts as the top-level module it sits in
//! (`pipeline/execute.rs` is `pipeline`). Inside one crate the compiler
//! allows any import between modules; this is the check that the host's
//! layer crates stay layered inside too.

use std::collections::BTreeMap;

use crate::files::Graph;

/// The host's layer crates whose top-level modules must form no import
/// circle, each with the groups of modules that share one layer and may
/// use each other (and nothing else may form a circle).
pub const LAYERED: &[(&str, &[&[&str]])] = &[
    ("toolhost-plan", &[]),
    ("toolhost-state", &[]),
    // The three backends mount through the loader's common parts, and the
    // loader's error wraps the other two's: one layer.
    ("toolhost-backend", &[&["isolate", "loader", "source"]]),
    ("toolhost-engine", &[]),
    ("toolhost", &[]),
];

/// The top-level module a file belongs to (`lib.rs` and `main.rs` are the
/// crate root).
fn top(rel: &str) -> String {
    let first = rel.split('/').next().unwrap_or(rel);
    match first.strip_suffix(".rs").unwrap_or(first) {
        "lib" | "main" => "(crate root)".to_string(),
        name => name.to_string(),
    }
}

/// `files` folded to top-level modules: an edge between two modules for
/// every file edge between their files (the paths that make it kept).
pub fn fold(files: &Graph) -> Graph {
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut graph = Graph::default();
    let tops: Vec<usize> = files
        .files
        .iter()
        .map(|f| {
            let name = top(f);
            *index.entry(name.clone()).or_insert_with(|| {
                graph.files.push(name);
                graph.edges.push(BTreeMap::new());
                graph.files.len() - 1
            })
        })
        .collect();
    for (from, edges) in files.edges.iter().enumerate() {
        for (to, why) in edges {
            let (a, b) = (tops[from], tops[*to]);
            if a != b {
                let paths = graph.edges[a].entry(b).or_default();
                paths.extend(why.iter().map(|w| format!("{}: {w}", files.files[from])));
            }
        }
    }
    graph
}

/// The circles of `modules` (a folded graph) that no allowed group holds,
/// described.
pub fn problems(modules: &Graph, allowed: &[&[&str]]) -> Vec<String> {
    modules
        .circles(1)
        .into_iter()
        .filter(|circle| {
            !allowed
                .iter()
                .any(|group| circle.iter().all(|&m| group.contains(&modules.files[m].as_str())))
        })
        .map(|circle| {
            modules
                .describe(&circle)
                .replacen(" files import", " modules import", 1)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn modules(files: &[(&str, &str)]) -> Graph {
        let sources: Vec<(String, String)> = files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect();
        fold(&Graph::of(&sources))
    }

    #[test]
    fn a_circle_between_two_folders_is_found_unless_a_group_allows_it() {
        let graph = modules(&[
            ("lib.rs", "pub mod a; pub mod b;"),
            ("a/mod.rs", "mod x;"),
            ("a/x.rs", "fn f() { crate::b::g() }"),
            ("b.rs", "use crate::a::x; fn g() {}"),
        ]);
        let found = problems(&graph, &[]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("a/x.rs: crate::b::g"), "{}", found[0]);
        assert!(problems(&graph, &[&["a", "b"]]).is_empty());
    }

    #[test]
    fn edges_inside_one_folder_and_downward_edges_are_no_circle() {
        let graph = modules(&[
            ("lib.rs", "pub mod a; pub mod b;"),
            ("a/mod.rs", "use self::y::Z; mod x; mod y;"),
            ("a/x.rs", "use super::y::Z; use crate::b::g;"),
            ("a/y.rs", "use super::x::W;"),
            ("b.rs", "fn g() {}"),
        ]);
        assert!(problems(&graph, &[]).is_empty());
    }
}
