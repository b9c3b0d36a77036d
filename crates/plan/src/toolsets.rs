//! `[[toolsets]]`: named subsets of the mounted tools (globs over public
//! tool names and aliases), so one host can serve different agents
//! different surfaces. A toolset is selected by `serve --toolset NAME` (for
//! every client of that server), by an HTTP client (`?toolset=NAME` on the
//! endpoint's URL, for its whole session), or by a grant (`[[grants]] toolset = "NAME"`, which
//! grants the toolset's globs). A tool outside the selected toolset is not
//! listed, and a call to it answers `not_in_toolset`.
//!
//! A toolset narrows what is offered; it grants nothing by itself: the
//! plan's grants and policy still decide every call.

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;
use serde_json::json;
use toolhost_core::{Status, ToolResult};

use crate::tool::MountedTool;

/// The error code of a call to a tool outside the selected toolset.
pub const NOT_IN_TOOLSET: &str = "not_in_toolset";
/// The error code of a selection naming no toolset of the plan.
pub const UNKNOWN_TOOLSET: &str = "unknown_toolset";

/// One `[[toolsets]]` entry as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsetEntry {
    /// What `--toolset`, `?toolset=` and grants call it.
    pub name: String,
    /// Globs over public tool names and aliases (`read_*`, `fs__*`).
    pub tools: Vec<String>,
}

/// A toolset ready to match.
#[derive(Debug, Clone)]
pub struct Toolset {
    /// Its name.
    pub name: String,
    /// Its globs as written.
    pub patterns: Vec<String>,
    set: GlobSet,
}

impl Toolset {
    /// Whether the toolset holds `tool` (by name or alias).
    pub fn covers(&self, tool: &MountedTool) -> bool {
        tool.names().any(|n| self.set.is_match(n))
    }

    /// Whether the toolset's globs match the name `name`.
    pub fn covers_name(&self, name: &str) -> bool {
        self.set.is_match(name)
    }
}

/// A `[[toolsets]]` entry that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ToolsetError {
    /// Two entries share a name.
    #[error("[[toolsets]] names '{0}' twice")]
    Duplicate(String),
    /// An entry lists no globs.
    #[error("[[toolsets]] '{0}' has no `tools`; list globs over tool names, e.g. tools = [\"read_file\", \"grep\"]")]
    Empty(String),
    /// A glob does not parse.
    #[error("[[toolsets]] '{name}': {error}")]
    Glob {
        /// The toolset.
        name: String,
        /// What globset said.
        error: globset::Error,
    },
    /// A grant names a toolset the plan does not define.
    #[error("[[grants]] #{grant} names toolset '{toolset}', which no [[toolsets]] entry defines")]
    GrantToolset {
        /// The grant's position (1-based).
        grant: usize,
        /// The name it used.
        toolset: String,
    },
}

/// Parses and checks the plan's toolsets.
pub fn parse(entries: &[ToolsetEntry]) -> Result<Vec<Toolset>, ToolsetError> {
    let mut out: Vec<Toolset> = Vec::new();
    for entry in entries {
        if out.iter().any(|t| t.name == entry.name) {
            return Err(ToolsetError::Duplicate(entry.name.clone()));
        }
        if entry.tools.is_empty() {
            return Err(ToolsetError::Empty(entry.name.clone()));
        }
        let mut set = GlobSetBuilder::new();
        for pattern in &entry.tools {
            set.add(Glob::new(pattern).map_err(|error| ToolsetError::Glob {
                name: entry.name.clone(),
                error,
            })?);
        }
        out.push(Toolset {
            name: entry.name.clone(),
            patterns: entry.tools.clone(),
            set: set.build().map_err(|error| ToolsetError::Glob {
                name: entry.name.clone(),
                error,
            })?,
        });
    }
    Ok(out)
}

/// The grants with each `toolset = "NAME"` replaced by (added to) the
/// toolset's globs, so the grant stage sees plain tool globs.
pub fn expand_grants(
    toolsets: &[Toolset],
    mut grants: Vec<crate::governance::grants::GrantEntry>,
) -> Result<Vec<crate::governance::grants::GrantEntry>, ToolsetError> {
    for (i, grant) in grants.iter_mut().enumerate() {
        let Some(name) = grant.toolset.clone() else {
            continue;
        };
        let set = toolsets
            .iter()
            .find(|t| t.name == name)
            .ok_or_else(|| ToolsetError::GrantToolset {
                grant: i + 1,
                toolset: name,
            })?;
        grant.tools.extend(set.patterns.iter().cloned());
    }
    Ok(grants)
}

/// The toolset an HTTP client selected: `toolset=NAME` in the request
/// URL's query (percent-encoding is not decoded: toolset names are plain).
pub fn from_query(query: Option<&str>) -> Option<String> {
    query?
        .split('&')
        .find_map(|pair| pair.strip_prefix("toolset="))
        .filter(|name| !name.is_empty())
        .map(str::to_string)
}

/// The toolset named `name`, or the `unknown_toolset` refusal listing the
/// plan's toolsets.
pub fn find<'a>(toolsets: &'a [Toolset], name: &str, id: &str) -> Result<&'a Toolset, ToolResult> {
    toolsets.iter().find(|t| t.name == name).ok_or_else(|| {
        let names: Vec<&str> = toolsets.iter().map(|t| t.name.as_str()).collect();
        ToolResult::failure(
            id,
            Status::ValidationError,
            UNKNOWN_TOOLSET,
            if names.is_empty() {
                format!("toolset '{name}' was requested, and the plan defines no [[toolsets]]")
            } else {
                format!(
                    "toolset '{name}' was requested; the plan's toolsets are: {}",
                    names.join(", ")
                )
            },
        )
        .with_details(json!({ "toolset": name, "toolsets": names }))
    })
}

/// The refusal for a call to `name`, which `toolset` does not hold.
pub fn outside(toolset: &Toolset, name: &str, id: &str) -> ToolResult {
    ToolResult::failure(
        id,
        Status::PolicyDenied,
        NOT_IN_TOOLSET,
        format!(
            "'{name}' is not in toolset '{}' ({}), which this session serves",
            toolset.name,
            toolset.patterns.join(", ")
        ),
    )
    .with_details(json!({ "toolset": toolset.name, "tool": name, "tools": toolset.patterns }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, tools: &[&str]) -> ToolsetEntry {
        ToolsetEntry {
            name: name.into(),
            tools: tools.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn bad_toolsets_are_refused_with_their_name() {
        let dup = parse(&[entry("a", &["x"]), entry("a", &["y"])]).unwrap_err();
        assert!(dup.to_string().contains("'a' twice"), "{dup}");
        assert!(parse(&[entry("e", &[])]).unwrap_err().to_string().contains("'e'"));
        assert!(parse(&[entry("g", &["a{"])]).is_err());
        let ok = parse(&[entry("read", &["read_*", "grep"])]).expect("parses");
        assert!(ok[0].covers_name("read_file") && ok[0].covers_name("grep"));
        assert!(!ok[0].covers_name("write_file"));
    }
}
