//! glob: files matching a pattern, newest first.

use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

use globset::GlobBuilder;
use rustix::fs::OFlags;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_core::{AccessMode, Context, Effect, Structured, Tool, ToolError, ToolSpec};

use crate::state::State;
use crate::walk::Scope;

/// Longest glob accepted (bytes): globset panics on globs whose regex
/// exceeds its size limit, so they are refused before they reach it.
const MAX_GLOB_BYTES: usize = 1024;

/// Input of glob.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GlobInput {
    /// A glob such as `**/*.rs` or `src/**/mod.rs`: `*` stays within a folder, `**` crosses folders, `{a,b}` alternates.
    #[schemars(length(min = 1, max = 1024))]
    pub pattern: String,
    /// The folder to search (default: the working directory).
    #[serde(default)]
    pub path: Option<String>,
}

/// Finds files by name pattern.
pub struct Glob {
    /// Shared mount state.
    pub state: State,
}

fn has_meta(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

/// Splits an absolute (or `~`) pattern into its literal folder and the rest.
fn split_pattern(pattern: &str, path: Option<&str>) -> Result<(Option<String>, String), ToolError> {
    if !(pattern.starts_with('/') || pattern.starts_with('~')) {
        return Ok((path.map(str::to_string), pattern.to_string()));
    }
    if path.is_some() {
        return Err(ToolError::invalid_input(
            "pattern is absolute and path is set; give a relative pattern with path, or an absolute pattern alone",
        ));
    }
    let mut base = PathBuf::new();
    let mut rest: Vec<String> = Vec::new();
    for part in pattern.split('/') {
        if rest.is_empty() && !has_meta(part) {
            base.push(if part.is_empty() { "/" } else { part });
        } else {
            rest.push(part.to_string());
        }
    }
    if rest.is_empty() {
        // No wildcard at all: the last component is the pattern.
        let name = base
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        base.pop();
        rest.push(name);
    }
    Ok((Some(base.to_string_lossy().into_owned()), rest.join("/")))
}

/// glob's structured output.
#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GlobOutput {
    /// The matching files shown, newest first.
    pub paths: Vec<String>,
    /// Matches in all (more than `paths` when the mount's cap cut them).
    pub total: u64,
}

impl Tool for Glob {
    type Input = GlobInput;
    type Output = Structured<GlobOutput>;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "glob",
            "Finds files whose path matches a glob (`**/*.rs`, `src/*.{ts,tsx}`) under `path` \
             (default: the working directory), newest first. Honours .gitignore; skips .git and \
             symbolic links. Long results are capped with a count.",
        )
        .effect(Effect::ReadOnly)
        .resource_key("/path", AccessMode::Read)
        .alias("Glob")
        .structured_output::<GlobOutput>()
    }

    fn execute(&self, input: GlobInput, ctx: &Context<'_>) -> Result<Self::Output, ToolError> {
        let state = &self.state;
        if input.pattern.is_empty() || input.pattern.contains('\0') {
            return Err(ToolError::invalid_input(
                "pattern is empty or contains a NUL byte",
            ));
        }
        let (base, pattern) = split_pattern(&input.pattern, input.path.as_deref())?;
        if Path::new(&pattern)
            .components()
            .any(|c| c == Component::ParentDir)
        {
            return Err(ToolError::invalid_input(
                "pattern may not climb with `..`; set `path` to the folder to search instead",
            ));
        }
        if pattern.len() > MAX_GLOB_BYTES {
            return Err(ToolError::invalid_input(format!(
                "pattern may be at most {MAX_GLOB_BYTES} bytes"
            )));
        }
        let matcher = GlobBuilder::new(&pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| ToolError::invalid_input(format!("invalid glob {pattern:?}: {e}")))?
            .compile_matcher();
        let scope = Scope::open(state, "path", base.as_deref(), ctx)?;
        if !scope.is_dir() {
            return Err(ToolError::invalid_input(format!(
                "{} is a file; glob searches a folder",
                scope.handle.resolved.display
            )));
        }
        let mut found: Vec<(SystemTime, PathBuf)> = Vec::new();
        let mut hard_links = 0usize;
        for (i, entry) in scope.walker(state).build().enumerate() {
            if i & 0x1ff == 0 {
                ctx.check_cancelled()?;
            }
            let Ok(entry) = entry else { continue };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Some(rel) = scope.relative(entry.path()) else {
                continue;
            };
            if matcher.is_match(rel) {
                let meta = entry.metadata().ok();
                // A hard link may be another name of a denied or outside
                // file (see policy::links): not listed unless allowed.
                if !state.config.allow_hard_links && meta.as_ref().is_some_and(|m| m.nlink() > 1) {
                    hard_links += 1;
                    continue;
                }
                let mtime = meta
                    .and_then(|m| m.modified().ok())
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                found.push((mtime, entry.into_path()));
            }
        }
        found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let cap = state.config.max_glob_results;
        let total = found.len();
        let mut lines = Vec::new();
        for (_, path) in found.into_iter().take(cap) {
            // Re-check through the root handle: a folder swapped for a link
            // during the walk drops out here.
            if scope.open_found(&path, OFlags::PATH).is_some() {
                lines.push(scope.show(&path));
            }
        }
        let mut links_note = if hard_links > 0 {
            format!(
                "[{hard_links} hard-linked file(s) left out: another name of each may be denied or outside the allowed folders ({} = false)]\n",
                crate::policy::links::KEY
            )
        } else {
            String::new()
        };
        links_note.push_str(&scope.secret_note());
        if lines.is_empty() {
            let text = format!(
                "no files match {:?} in {}{}{links_note}",
                pattern,
                scope.handle.resolved.display,
                if links_note.is_empty() { "" } else { "\n" }
            );
            return Ok(Structured::new(
                text,
                GlobOutput {
                    paths: Vec::new(),
                    total: 0,
                },
            ));
        }
        let mut out = lines.join("\n");
        out.push('\n');
        out.push_str(&links_note);
        if total > cap {
            out.push_str(&format!(
                "[{} more matches not shown (max_glob_results = {cap}); narrow the pattern or the path]\n",
                total - cap
            ));
        }
        ctx.set_metadata("matches", total);
        Ok(Structured::new(
            out,
            GlobOutput {
                paths: lines,
                total: total as u64,
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_patterns_split_at_the_first_wildcard() {
        let split = |p: &str| split_pattern(p, None).ok();
        assert_eq!(
            split("/a/b/**/*.rs"),
            Some((Some("/a/b".into()), "**/*.rs".into()))
        );
        assert_eq!(split("/a/b/c.rs"), Some((Some("/a/b".into()), "c.rs".into())));
        assert_eq!(split("src/*.rs"), Some((None, "src/*.rs".into())));
    }
}
