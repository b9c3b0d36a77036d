//! `[[limits]]`: rate limits by principal and by tool, as the plan states
//! them. Each entry is a token bucket: `burst` calls at once, refilled at
//! `per_second`. The buckets themselves live in the pipeline
//! (`pipeline::rate_limit`), in each host's memory.

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;

use crate::tool::MountedTool;

/// One `[[limits]]` entry as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitEntry {
    /// A name for messages and audit records (default `limits[N]`).
    pub name: Option<String>,
    /// The principal it limits; unset: every principal, each with its own
    /// bucket.
    pub principal: Option<String>,
    /// Globs over tool names and aliases; unset or empty: every tool. The
    /// tools matched share the bucket.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Tokens added per second (a fraction such as 0.5 is one call every
    /// two seconds).
    pub per_second: f64,
    /// The bucket's size: how many calls may come at once after a pause
    /// (at least 1).
    pub burst: u32,
}

/// A `[[limits]]` entry that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LimitError {
    /// `per_second` is not a positive, finite number.
    #[error(
        "[[limits]] #{entry} ({id}): per_second must be a positive number of calls per second, not {value}"
    )]
    Rate {
        /// The entry's number, from 1.
        entry: usize,
        /// Its name.
        id: String,
        /// What was written.
        value: f64,
    },
    /// `burst` is 0.
    #[error("[[limits]] #{entry} ({id}): burst must be at least 1 (a bucket of 0 refuses every call)")]
    Burst {
        /// The entry's number, from 1.
        entry: usize,
        /// Its name.
        id: String,
    },
    /// A glob in `tools` does not parse.
    #[error("[[limits]] #{entry} ({id}): tools: {error}")]
    Glob {
        /// The entry's number, from 1.
        entry: usize,
        /// Its name.
        id: String,
        /// The parser's complaint.
        error: globset::Error,
    },
}

/// A limit ready to check.
#[derive(Debug, Clone)]
pub struct Limit {
    /// `name`, or `limits[N]` (0-based, plan order).
    pub id: String,
    /// The principal it is for; `None`: each principal.
    pub principal: Option<String>,
    /// The tool globs as written (empty: every tool).
    pub patterns: Vec<String>,
    tools: Option<GlobSet>,
    /// Tokens per second.
    pub per_second: f64,
    /// Bucket size.
    pub burst: u32,
}

/// Parses and checks the plan's limits.
pub fn parse(entries: &[LimitEntry]) -> Result<Vec<Limit>, LimitError> {
    entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let (entry, id) = (i + 1, e.name.clone().unwrap_or_else(|| format!("limits[{i}]")));
            if !(e.per_second.is_finite() && e.per_second > 0.0) {
                return Err(LimitError::Rate {
                    entry,
                    id,
                    value: e.per_second,
                });
            }
            if e.burst == 0 {
                return Err(LimitError::Burst { entry, id });
            }
            let tools = if e.tools.is_empty() {
                None
            } else {
                let mut set = GlobSetBuilder::new();
                for pattern in &e.tools {
                    let glob = Glob::new(pattern).map_err(|error| LimitError::Glob {
                        entry,
                        id: id.clone(),
                        error,
                    })?;
                    set.add(glob);
                }
                Some(set.build().map_err(|error| LimitError::Glob {
                    entry,
                    id: id.clone(),
                    error,
                })?)
            };
            Ok(Limit {
                id,
                principal: e.principal.clone(),
                patterns: e.tools.clone(),
                tools,
                per_second: e.per_second,
                burst: e.burst,
            })
        })
        .collect()
}

impl Limit {
    /// Whether the limit applies to `principal` calling `tool` (by name or
    /// alias).
    pub fn applies(&self, principal: &str, tool: &MountedTool) -> bool {
        self.principal.as_deref().is_none_or(|p| p == principal)
            && self
                .tools
                .as_ref()
                .is_none_or(|set| tool.names().any(|n| set.is_match(n)))
    }

    /// One line for `toolhost check`.
    pub fn describe(&self) -> String {
        let who = match &self.principal {
            Some(p) => format!("principal '{p}'"),
            None => "each principal".to_string(),
        };
        let tools = if self.patterns.is_empty() {
            "every tool".to_string()
        } else {
            format!("tools [{}]", self.patterns.join(", "))
        };
        format!(
            "{}: {who}, {tools}: {} call(s)/s, burst {}",
            self.id, self.per_second, self.burst
        )
    }
}
