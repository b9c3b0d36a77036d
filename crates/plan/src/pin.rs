//! Pinned foreign tools: `toolhost.lock` beside the plan records, for each
//! mounted MCP server, every tool's name and the SHA-256 of its
//! description, input schema, output schema and annotations. A server can
//! change a tool's definition at any time (between runs, or while mounted,
//! announcing it with `tools/list_changed`); a definition that is not the
//! one someone reviewed and pinned is *held back*: not listed, and a call
//! answers `tool_changed`, naming the server and what changed, until
//! `toolhost pin` records the new definition. A server the lock does not
//! name is not pinned (its tools are served; `check` says so); a pinned
//! server's new tools wait for `pin` like changed ones.
//!
//! The lock guards against a definition changing after review. It does not
//! vouch for what the server *does*: a server can behave differently under
//! an unchanged definition.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use crate::fingerprint::{Fingerprint, Pin};
use crate::plan::{McpSource, Plan};

/// The lock's file name, beside the plan.
pub const LOCK_FILE: &str = "toolhost.lock";

/// The error code of a call to a held-back tool.
pub const TOOL_CHANGED: &str = "tool_changed";

/// One pinned server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinnedServer {
    /// The server as the plan names it: its command line, or its URL.
    pub source: String,
    /// Its tools by the server's own names.
    #[serde(default)]
    pub tools: BTreeMap<String, Fingerprint>,
}

/// `toolhost.lock`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    /// Pinned servers, sorted by source.
    #[serde(default)]
    pub servers: Vec<PinnedServer>,
}

/// A lock that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The file exists and cannot be read.
    #[error("cannot read {}: {error}", file.display())]
    Read {
        /// The lock file.
        file: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// It is not a lock.
    #[error("{} is not a valid lock file ({error}); run `toolhost pin` to write it again", file.display())]
    Parse {
        /// The lock file.
        file: PathBuf,
        /// What the parser said.
        error: toml::de::Error,
    },
    /// It cannot be written.
    #[error("cannot write {}: {error}", file.display())]
    Write {
        /// The lock file.
        file: PathBuf,
        /// Why.
        error: std::io::Error,
    },
}

/// What the lock says about one tool as listed now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// No lock, or the server is not in it.
    Unpinned,
    /// The definition is the pinned one.
    Pinned,
    /// Held back: the message says why (server and what changed).
    Held(String),
}

/// The key a server is pinned under: its command line or URL.
pub fn source_key(mcp: &McpSource) -> String {
    mcp.url.clone().unwrap_or_else(|| mcp.command.join(" "))
}

/// The lock file of a plan.
pub fn lock_file(plan: &Plan) -> PathBuf {
    plan.file.parent().unwrap_or(Path::new(".")).join(LOCK_FILE)
}

impl Lock {
    /// Reads the plan's lock; `None` when there is none.
    pub fn read(plan: &Plan) -> Result<Option<Lock>, LockError> {
        let file = lock_file(plan);
        let text = match std::fs::read_to_string(&file) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(LockError::Read { file, error }),
        };
        toml::from_str(&text)
            .map(Some)
            .map_err(|error| LockError::Parse { file, error })
    }

    /// Writes it atomically (a temporary file renamed over the lock).
    pub fn write(&self, plan: &Plan) -> Result<PathBuf, LockError> {
        let file = lock_file(plan);
        let fail = |error| LockError::Write {
            file: file.clone(),
            error,
        };
        let body = toml::to_string_pretty(self).map_err(|e| fail(std::io::Error::other(e)))?;
        let text = format!(
            "# toolhost.lock: the reviewed definitions of the plan's MCP tools (SHA-256 per part).\n\
             # Written by `toolhost pin`; a tool whose definition differs is not served.\n\n{body}"
        );
        let tmp = file.with_extension("lock.tmp");
        std::fs::write(&tmp, text).map_err(fail)?;
        std::fs::rename(&tmp, &file).map_err(fail)?;
        Ok(file)
    }

    /// The pinned server for `source`.
    pub fn server(&self, source: &str) -> Option<&PinnedServer> {
        self.servers.iter().find(|s| s.source == source)
    }

    /// What the lock says about `tool` of the server `source` (labelled
    /// `label` in messages).
    pub fn verdict(&self, source: &str, label: &str, tool: &str, now: &Fingerprint) -> Verdict {
        let Some(server) = self.server(source) else {
            return Verdict::Unpinned;
        };
        match server.tools.get(tool) {
            None => Verdict::Held(format!(
                "MCP server '{label}' offers a new tool '{tool}' that is not in {LOCK_FILE}; \
                 review it and run `toolhost pin` to serve it"
            )),
            Some(pinned) => match now.changed_from(pinned).as_slice() {
                [] => Verdict::Pinned,
                changed => Verdict::Held(format!(
                    "MCP server '{label}' changed the {} of tool '{tool}' since it was pinned; \
                     it is not served until `toolhost pin` records the new definition",
                    changed.join(", ")
                )),
            },
        }
    }

    /// Lines describing how `new` differs from `self`: added, removed and
    /// changed servers and tools. Empty when they are the same.
    pub fn diff(&self, new: &Lock) -> Vec<String> {
        let mut lines = Vec::new();
        let empty = PinnedServer::default();
        for server in &new.servers {
            let old = self.server(&server.source);
            if old.is_none() {
                lines.push(format!("+ server {}", server.source));
            }
            let old = old.unwrap_or(&empty);
            for (name, print) in &server.tools {
                match old.tools.get(name) {
                    None => lines.push(format!("+   {name}")),
                    Some(before) => {
                        let changed = print.changed_from(before);
                        if !changed.is_empty() {
                            lines.push(format!("~   {name}: {} changed", changed.join(", ")));
                        }
                    }
                }
            }
            for name in old.tools.keys().filter(|n| !server.tools.contains_key(*n)) {
                lines.push(format!("-   {name}"));
            }
        }
        for server in &self.servers {
            if new.server(&server.source).is_none() {
                lines.push(format!("- server {}", server.source));
            }
        }
        lines
    }
}

/// Marks each of a server's tools with its fingerprint and, when the lock
/// holds it back, why: called from the server's list walk, at mount and
/// after every `tools/list_changed`. The lock is read each time, so a
/// `toolhost pin` run meanwhile takes effect at the next refresh or start.
pub fn mark(
    mcp: &McpSource,
    label: &str,
    listed: &str,
    fingerprint: Fingerprint,
    mounted: &crate::tool::MountedTool,
    lock: &Result<Option<Lock>, String>,
) {
    let source = source_key(mcp);
    let held = match lock {
        Ok(None) => None,
        Ok(Some(lock)) => match lock.verdict(&source, label, listed, &fingerprint) {
            Verdict::Held(why) => Some(why),
            Verdict::Pinned | Verdict::Unpinned => None,
        },
        // An unreadable lock holds back everything: a broken pin must not
        // quietly serve what it was meant to stop.
        Err(why) => Some(format!("MCP server '{label}': {why}")),
    };
    mounted.set_pin(Pin {
        source,
        tool: listed.to_string(),
        fingerprint,
        held,
    });
}

/// The plan's lock for a list walk ([`mark`]), its error as text.
pub fn lock_for(plan: &Plan) -> Result<Option<Lock>, String> {
    Lock::read(plan).map_err(|e| e.to_string())
}

/// The lock a `toolhost pin` would write now: the current definitions of
/// every mounted MCP server's tools (held-back ones included).
pub fn current(tools: &[std::sync::Arc<crate::tool::MountedTool>], plan: &Plan) -> Lock {
    let mut servers: BTreeMap<String, PinnedServer> = BTreeMap::new();
    for entry in &plan.tools {
        if let crate::plan::ModuleSource::Mcp(mcp) = &entry.source {
            let source = source_key(mcp);
            servers.entry(source.clone()).or_insert(PinnedServer {
                source,
                tools: BTreeMap::new(),
            });
        }
    }
    for tool in tools {
        if let Some(pin) = tool.pin() {
            servers
                .entry(pin.source.clone())
                .or_insert_with(|| PinnedServer {
                    source: pin.source.clone(),
                    tools: BTreeMap::new(),
                })
                .tools
                .insert(pin.tool.clone(), pin.fingerprint.clone());
        }
    }
    Lock {
        servers: servers.into_values().collect(),
    }
}

/// What `check` says about pinning: each held-back tool (`held`), each
/// unpinned server when a lock exists, and a lock that cannot be read.
pub fn check_lines(tools: &[std::sync::Arc<crate::tool::MountedTool>], plan: &Plan) -> Vec<String> {
    let mut lines = Vec::new();
    let lock = match Lock::read(plan) {
        Ok(Some(lock)) => lock,
        Ok(None) => return lines,
        Err(e) => return vec![format!("held  every MCP tool: {e}")],
    };
    for tool in tools {
        if let Some(why) = tool.held() {
            lines.push(format!("held  {}: {why}", tool.name()));
        }
    }
    for server in current(tools, plan).servers {
        if lock.server(&server.source).is_none() {
            lines.push(format!(
                "warn  MCP server '{}' is not in {LOCK_FILE}: its tools are served unpinned; run `toolhost pin`",
                server.source
            ));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn print(d: &str) -> Fingerprint {
        Fingerprint {
            description: d.into(),
            input_schema: "i".into(),
            output_schema: "o".into(),
            annotations: "a".into(),
        }
    }

    fn lock(tools: &[(&str, &str)]) -> Lock {
        Lock {
            servers: vec![PinnedServer {
                source: "node s.mjs".into(),
                tools: tools.iter().map(|(n, d)| (n.to_string(), print(d))).collect(),
            }],
        }
    }

    #[test]
    fn a_changed_description_is_held_and_named() {
        let lock = lock(&[("echo", "d1")]);
        assert_eq!(
            lock.verdict("node s.mjs", "s", "echo", &print("d1")),
            Verdict::Pinned
        );
        let Verdict::Held(why) = lock.verdict("node s.mjs", "s", "echo", &print("d2")) else {
            panic!("a changed description must be held");
        };
        assert!(why.contains("'s'") && why.contains("description"), "{why}");
        assert!(matches!(
            lock.verdict("node s.mjs", "s", "new", &print("d")),
            Verdict::Held(_)
        ));
        assert_eq!(
            lock.verdict("other", "o", "echo", &print("d2")),
            Verdict::Unpinned
        );
    }

    #[test]
    fn the_lock_round_trips_through_toml_and_diffs() {
        let old = lock(&[("echo", "d1"), ("gone", "g")]);
        let text = toml::to_string_pretty(&old).expect("serializes");
        assert_eq!(toml::from_str::<Lock>(&text).expect("parses"), old);
        let new = lock(&[("echo", "d2"), ("added", "a")]);
        assert_eq!(
            old.diff(&new),
            vec!["+   added", "~   echo: description changed", "-   gone"]
        );
        assert!(new.diff(&new).is_empty());
    }
}
