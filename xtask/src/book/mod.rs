//! `docs`: the README and the book under `docs/` say only what works.
//!
//! - the book's `SUMMARY.md` names chapters that exist, and every chapter
//!   under `docs/src/` is named there (so none is silently left out);
//! - every ```` ```sh ```` block of the README, of each chapter and of each
//!   file a chapter includes runs, in order, in a temporary folder with the
//!   built `toolhost` on `PATH`, and must exit 0 ([`shell`]);
//! - every ```` ```rust ```` block compiles as a crate that depends on
//!   `toolhost-core` alone, as a module author's would ([`rust`]).
//!
//! A command that cannot run in CI uses another fence (` ```console `) with
//! the reason beside it, so "every `sh` block runs" stays literally true.

mod blocks;
mod rust;
mod shell;

use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context};

use crate::tasks::root;

/// Checks the book's table of contents, runs the shell blocks against the
/// binaries in `bin_dir` and compiles the Rust blocks.
pub fn check(bin_dir: &Path) -> anyhow::Result<()> {
    let files = sources(&root())?;
    let shown: Vec<String> = files.iter().map(|f| relative(f)).collect();
    eprintln!("xtask docs: {} files: {}", files.len(), shown.join(", "));
    let ran = shell::run_all(&files, bin_dir)?;
    let compiled = rust::compile_all(&files)?;
    eprintln!("xtask docs: {ran} sh blocks ran, {compiled} rust blocks compiled");
    Ok(())
}

/// The files whose snippets are checked: the README, every chapter of the
/// book in SUMMARY order, and every file a chapter includes. Fails when
/// SUMMARY names a missing chapter, when a chapter under `docs/src/` is not
/// in SUMMARY, or when an include names a missing file.
pub fn sources(root: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let src = root.join("docs/src");
    let summary_path = src.join("SUMMARY.md");
    let summary = std::fs::read_to_string(&summary_path)
        .with_context(|| format!("cannot read {}", summary_path.display()))?;
    let mut files = vec![root.join("README.md")];
    let mut problems = Vec::new();
    for link in chapter_links(&summary) {
        let chapter = src.join(&link);
        if !chapter.is_file() {
            problems.push(format!("SUMMARY.md names {link}, which does not exist"));
            continue;
        }
        let text = std::fs::read_to_string(&chapter)?;
        files.push(chapter.clone());
        for include in includes(&text) {
            let included = lexical(&chapter.parent().unwrap_or(&src).join(&include));
            if included.is_file() {
                files.push(included);
            } else {
                problems.push(format!("{link} includes {include}, which does not exist"));
            }
        }
    }
    for chapter in markdown_under(&src)? {
        if chapter != summary_path && !files.contains(&chapter) {
            problems.push(format!(
                "{} is not named in SUMMARY.md",
                chapter.strip_prefix(&src).unwrap_or(&chapter).display()
            ));
        }
    }
    if !problems.is_empty() {
        bail!(
            "the book's table of contents is wrong:\n  {}",
            problems.join("\n  ")
        );
    }
    files.dedup();
    Ok(files)
}

/// The chapter paths SUMMARY.md links to (`[Title](path.md)`), in order.
fn chapter_links(summary: &str) -> Vec<String> {
    let mut links = Vec::new();
    for line in summary.lines() {
        let mut rest = line;
        while let Some(start) = rest.find("](") {
            let after = &rest[start + 2..];
            let Some(end) = after.find(')') else { break };
            let target = &after[..end];
            // An anchor names a place in a chapter, not a chapter.
            let path = target.split('#').next().unwrap_or("");
            if !path.is_empty() {
                links.push(path.to_string());
            }
            rest = &after[end..];
        }
    }
    links
}

/// The files named by mdBook's `{{#include PATH}}` (and `PATH:anchor`).
fn includes(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{#include ") {
        let after = &rest[start + "{{#include ".len()..];
        let Some(end) = after.find("}}") else { break };
        let path = after[..end].trim();
        found.push(path.split(':').next().unwrap_or(path).to_string());
        rest = &after[end..];
    }
    found
}

fn markdown_under(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            found.extend(markdown_under(&path)?);
        } else if path.extension().is_some_and(|e| e == "md") {
            found.push(path);
        }
    }
    found.sort();
    Ok(found)
}

/// `docs/src/../../core/README.md` → `core/README.md`, without touching the
/// file system (an include names a file relative to its chapter).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// A path as shown in messages: relative to the workspace root.
fn relative(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_links_skip_anchors_and_keep_order() {
        let summary = "# Summary\n\n[Intro](introduction.md)\n\n- [A](a.md)\n  - [B](sub/b.md#part)\n";
        assert_eq!(chapter_links(summary), ["introduction.md", "a.md", "sub/b.md"]);
    }

    #[test]
    fn includes_drop_their_anchor() {
        let text = "{{#include ../../core/README.md}}\ntext {{#include x.md:part}}";
        assert_eq!(includes(text), ["../../core/README.md", "x.md"]);
    }

    /// A book laid out in a temp folder: (SUMMARY text, chapters).
    fn book(summary: &str, chapters: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("docs/src")).unwrap();
        std::fs::write(dir.path().join("README.md"), "# R\n").unwrap();
        std::fs::write(dir.path().join("docs/src/SUMMARY.md"), summary).unwrap();
        for chapter in chapters {
            std::fs::write(dir.path().join("docs/src").join(chapter), "# C\n").unwrap();
        }
        dir
    }

    #[test]
    fn the_real_book_lists_every_chapter() {
        let files = sources(&root()).unwrap();
        assert!(files.contains(&root().join("core/README.md")), "{files:?}");
    }

    #[test]
    fn a_missing_chapter_and_an_unlisted_one_are_both_named() {
        let dir = book("[A](a.md)\n- [Gone](gone.md)\n", &["a.md", "stray.md"]);
        let err = sources(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("SUMMARY.md names gone.md, which does not exist"),
            "{err}"
        );
        assert!(err.contains("stray.md is not named in SUMMARY.md"), "{err}");
    }

    #[test]
    fn a_missing_include_is_named() {
        let dir = book("[A](a.md)\n", &["a.md"]);
        std::fs::write(dir.path().join("docs/src/a.md"), "{{#include ../nowhere.md}}\n").unwrap();
        let err = sources(dir.path()).unwrap_err().to_string();
        assert!(err.contains("a.md includes ../nowhere.md"), "{err}");
    }
}
