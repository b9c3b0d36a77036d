//! Compiles the ```` ```rust ```` blocks of the docs as a module author
//! would: each is the `lib.rs` of its own crate, outside the workspace,
//! whose only dependency is `toolhost-core` (from this checkout, with the
//! workspace's lock file, so every other version is what CI tested). A
//! snippet that names serde, tokio or anything else not re-exported by
//! toolhost-core does not compile here, as it would not for the author.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

use super::blocks::blocks;
use super::relative;
use crate::tasks::{root, target_dir};

/// One snippet: the crate name that says where it comes from, and its code.
struct Snippet {
    name: String,
    place: String,
    code: String,
}

/// Compiles every `rust` block of `files`; returns how many compiled.
pub fn compile_all(files: &[PathBuf]) -> anyhow::Result<usize> {
    let mut snippets = Vec::new();
    for file in files {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
        for block in blocks(&text).map_err(|e| anyhow::anyhow!("{}: {e}", relative(file)))? {
            if block.lang == "rust" {
                let place = format!("{}:{}", relative(file), block.line);
                snippets.push(Snippet {
                    name: crate_name(&place),
                    place,
                    code: block.body,
                });
            }
        }
    }
    if snippets.is_empty() {
        return Ok(0);
    }
    let dir = tempfile::tempdir().context("cannot make a temp folder")?;
    write_workspace(dir.path(), &snippets, &root().join("core"))?;
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--offline", "--workspace"])
        .current_dir(dir.path())
        // The workspace's target folder and debug-info level, so
        // toolhost-core and its dependencies are reused, not rebuilt.
        .env("CARGO_TARGET_DIR", target_dir())
        .env("CARGO_PROFILE_DEV_DEBUG", "line-tables-only")
        .output()
        .context("cannot run cargo")?;
    if !out.status.success() {
        let places: Vec<String> = snippets
            .iter()
            .map(|s| format!("{} is {}", s.name, s.place))
            .collect();
        bail!(
            "a rust block of the docs does not compile against toolhost-core alone ({}):\n{}",
            places.join("; "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(snippets.len())
}

/// `docs/src/plans.md:12` → `snippet-docs-src-plans-md-12`.
fn crate_name(place: &str) -> String {
    let mut name = String::from("snippet-");
    for c in place.chars() {
        name.push(if c.is_ascii_alphanumeric() {
            c.to_ascii_lowercase()
        } else {
            '-'
        });
    }
    name
}

/// A workspace of one crate per snippet, each depending on `core` alone.
fn write_workspace(dir: &Path, snippets: &[Snippet], core: &Path) -> anyhow::Result<()> {
    let members: Vec<String> = snippets.iter().map(|s| format!("{:?}", s.name)).collect();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[workspace]\nresolver = \"2\"\nmembers = [{}]\n",
            members.join(", ")
        ),
    )?;
    std::fs::copy(root().join("Cargo.lock"), dir.join("Cargo.lock")).context("cannot copy Cargo.lock")?;
    for snippet in snippets {
        let crate_dir = dir.join(&snippet.name);
        std::fs::create_dir_all(&crate_dir)?;
        std::fs::write(
            crate_dir.join("Cargo.toml"),
            format!(
                "[package]\nname = {:?}\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
                 [lib]\npath = \"lib.rs\"\n\n[dependencies]\ntoolhost-core = {{ path = {:?} }}\n",
                snippet.name,
                core.display().to_string()
            ),
        )?;
        std::fs::write(crate_dir.join("lib.rs"), &snippet.code)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crate_names_say_where_the_snippet_is() {
        assert_eq!(crate_name("docs/src/plans.md:12"), "snippet-docs-src-plans-md-12");
        assert_eq!(crate_name("core/README.md:89"), "snippet-core-readme-md-89");
    }
}
