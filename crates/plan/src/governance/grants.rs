//! `[[grants]]`: who may call which tools, up to which effect, how often per
//! run, until when, with which scopes.
//!
//! With no grant in the plan, every principal may call every tool (the
//! policy rules still apply). Once one grant exists, a principal may call
//! only what one of its grants covers; the refusal (status
//! `policy_denied`, code `grant_missing`) names what is missing. Grants are
//! checked before the policy rules and hooks, so an ungranted call never
//! reaches an approval prompt or a hook.
//!
//! `max_calls` counts per (grant, run id) in this host's memory: a restarted
//! host, or another host of a fleet, starts again at zero. Calls without a
//! run id share one count per grant for the host's lifetime.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;
use serde_json::{json, Value};
use toolhost_core::{Effect, RequestContext, Status, ToolResult};

use super::error::{GovernanceError, GrantProblem};
use crate::tool::MountedTool;

/// The refusal code of every grant check.
pub const GRANT_MISSING: &str = "grant_missing";

/// The effect ceiling of a grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaxEffect {
    /// Tools that change nothing (read_only, retrieve, compute, meta).
    ReadOnly,
    /// Also tools that change state that can be restored (draft,
    /// internal_mutation, external_notification).
    Mutation,
    /// Also tools whose effect cannot be undone.
    Irreversible,
}

impl MaxEffect {
    /// The class of a tool's effect.
    pub fn of(effect: Effect) -> MaxEffect {
        match effect {
            Effect::ReadOnly | Effect::Retrieve | Effect::Compute | Effect::Meta => MaxEffect::ReadOnly,
            Effect::Irreversible => MaxEffect::Irreversible,
            _ => MaxEffect::Mutation,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            MaxEffect::ReadOnly => "read_only",
            MaxEffect::Mutation => "mutation",
            MaxEffect::Irreversible => "irreversible",
        }
    }
}

/// One `[[grants]]` entry as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantEntry {
    /// A name for messages and audit records (default `grants[N]`).
    pub name: Option<String>,
    /// The principal it is for.
    pub principal: String,
    /// Globs over tool names and aliases.
    #[serde(default)]
    pub tools: Vec<String>,
    /// A `[[toolsets]]` name: the grant covers the toolset's globs too.
    pub toolset: Option<String>,
    /// The highest effect allowed (default: irreversible, i.e. no ceiling).
    pub max_effect: Option<MaxEffect>,
    /// Calls per run.
    pub max_calls: Option<u64>,
    /// When the grant ends (RFC 3339).
    pub expires_at: Option<String>,
    /// Scopes it carries; a tool's `required_scopes` must all be here.
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// A grant ready to check.
#[derive(Debug, Clone)]
pub struct Grant {
    /// `name`, or `grants[N]` (0-based, plan order).
    pub id: String,
    /// The principal.
    pub principal: String,
    tools: GlobSet,
    patterns: Vec<String>,
    max_effect: MaxEffect,
    max_calls: Option<u64>,
    expires_at: Option<(i64, String)>,
    scopes: Vec<String>,
}

/// Parses and checks the plan's grants.
pub fn parse(entries: &[GrantEntry]) -> Result<Vec<Grant>, GovernanceError> {
    entries
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let id = g.name.clone().unwrap_or_else(|| format!("grants[{i}]"));
            let fail = |problem| GovernanceError::Grant {
                which: format!("[[grants]] #{} ({id})", i + 1),
                problem,
            };
            if g.tools.is_empty() {
                return Err(fail(GrantProblem::NoTools));
            }
            let mut set = GlobSetBuilder::new();
            for pattern in &g.tools {
                set.add(Glob::new(pattern).map_err(|e| fail(GrantProblem::Glob(e)))?);
            }
            let tools = set.build().map_err(|e| fail(GrantProblem::Glob(e)))?;
            let expires_at = g
                .expires_at
                .as_ref()
                .map(|t| {
                    chrono::DateTime::parse_from_rfc3339(t)
                        .map(|d| (d.timestamp_millis(), t.clone()))
                        .map_err(|error| {
                            fail(GrantProblem::ExpiresAt {
                                value: t.clone(),
                                error,
                            })
                        })
                })
                .transpose()?;
            if g.max_calls == Some(0) {
                return Err(fail(GrantProblem::ZeroCalls));
            }
            Ok(Grant {
                id,
                principal: g.principal.clone(),
                tools,
                patterns: g.tools.clone(),
                max_effect: g.max_effect.unwrap_or(MaxEffect::Irreversible),
                max_calls: g.max_calls,
                expires_at,
                scopes: g.scopes.clone(),
            })
        })
        .collect()
}

impl Grant {
    /// Whether the grant's globs cover the tool (by name or alias).
    pub fn covers(&self, tool: &MountedTool) -> bool {
        tool.names().any(|n| self.tools.is_match(n))
    }

    /// Why the grant does not let `principal` call `tool` now, if it does not
    /// (the count is checked separately).
    fn problem(&self, tool: &MountedTool, now_ms: i64) -> Option<(String, Value)> {
        if let Some((at, text)) = &self.expires_at {
            if now_ms >= *at {
                return Some((
                    format!("grant '{}' expired at {text}", self.id),
                    json!({ "reason": "expired", "expires_at": text }),
                ));
            }
        }
        let class = MaxEffect::of(tool.spec.effect);
        if class > self.max_effect {
            return Some((
                format!(
                    "grant '{}' allows effects up to {}, and '{}' is {} ({})",
                    self.id,
                    self.max_effect.as_str(),
                    tool.name(),
                    class.as_str(),
                    tool.spec.effect
                ),
                json!({ "reason": "max_effect", "max_effect": self.max_effect.as_str(), "effect": tool.spec.effect }),
            ));
        }
        let missing: Vec<&String> = tool
            .spec
            .required_scopes
            .iter()
            .filter(|s| !self.scopes.contains(s))
            .collect();
        if !missing.is_empty() {
            return Some((
                format!(
                    "grant '{}' lacks the scope(s) {} that '{}' requires",
                    self.id,
                    missing
                        .iter()
                        .map(|s| format!("'{s}'"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    tool.name()
                ),
                json!({ "reason": "scope", "missing_scopes": missing }),
            ));
        }
        None
    }
}

/// Per-(grant, run) call counts of this host.
#[derive(Default)]
pub struct RunCounts(Mutex<HashMap<(String, String), u64>>);

/// The grant stage: `Ok(None)` when the plan has no grants, `Ok(Some(id))`
/// naming the grant that lets the call through, or the refusal.
pub fn check(
    grants: &[Grant],
    counts: &RunCounts,
    principal: &str,
    context: &RequestContext,
    tool: &MountedTool,
    id: &str,
) -> Result<Option<String>, ToolResult> {
    if grants.is_empty() {
        return Ok(None);
    }
    let now = chrono::Utc::now().timestamp_millis();
    let refuse = |message: String, details: Value| {
        ToolResult::failure(id, Status::PolicyDenied, GRANT_MISSING, message).with_details(details)
    };
    let candidates: Vec<&Grant> = grants
        .iter()
        .filter(|g| g.principal == principal && g.covers(tool))
        .collect();
    if candidates.is_empty() {
        return Err(no_grant(principal, tool.name(), id));
    }
    let mut first_problem = None;
    for grant in &candidates {
        if let Some(problem) = grant.problem(tool, now) {
            first_problem.get_or_insert(problem);
            continue;
        }
        if let Some(max) = grant.max_calls {
            let run = context.run_id.clone().unwrap_or_default();
            let mut counts = counts.0.lock().unwrap_or_else(PoisonError::into_inner);
            let used = counts.entry((grant.id.clone(), run.clone())).or_insert(0);
            if *used >= max {
                let run_text = if run.is_empty() {
                    "calls without a run id".to_string()
                } else {
                    format!("run '{run}'")
                };
                first_problem.get_or_insert((
                    format!(
                        "grant '{}' allows {max} call(s) per run and {run_text} has used them (counted by this host)",
                        grant.id
                    ),
                    json!({ "reason": "max_calls", "max_calls": max, "run_id": context.run_id }),
                ));
                continue;
            }
            *used += 1;
        }
        return Ok(Some(grant.id.clone()));
    }
    let (message, mut details) = first_problem.unwrap_or_else(|| ("no grant applies".into(), json!({})));
    if let Some(map) = details.as_object_mut() {
        map.insert("principal".into(), json!(principal));
        map.insert("tool".into(), json!(tool.name()));
        map.insert(
            "grants".into(),
            json!(candidates.iter().map(|g| g.id.clone()).collect::<Vec<_>>()),
        );
    }
    Err(refuse(
        format!(
            "principal '{principal}' may not call '{}': {message}",
            tool.name()
        ),
        details,
    ))
}

/// The `no_grant` refusal for `name` as the caller wrote it. Stage 1 gives
/// it for a tool the principal's grants do not cover *and* for a name that
/// does not exist outside them, so the answer does not say which it was.
pub fn no_grant(principal: &str, name: &str, id: &str) -> ToolResult {
    ToolResult::failure(
        id,
        Status::PolicyDenied,
        GRANT_MISSING,
        format!(
            "principal '{principal}' has no grant for '{name}'; ask the operator for a [[grants]] entry \
             with principal = \"{principal}\" and a `tools` glob matching it"
        ),
    )
    .with_details(json!({
        "reason": "no_grant",
        "principal": principal,
        "tool": name,
        "missing_grant": { "principal": principal, "tools": [name] },
    }))
}

/// Whether one of `principal`'s grants has a glob matching `name` (a name
/// that may not exist: stage 1 answers `unknown_tool` only inside them).
pub fn covers_name(grants: &[Grant], principal: &str, name: &str) -> bool {
    grants
        .iter()
        .any(|g| g.principal == principal && g.tools.is_match(name))
}

/// Whether `principal` may see `tool` in a listing: no grants at all, or a
/// grant of its covers the tool (expiry and counts are for calls).
pub fn visible(grants: &[Grant], principal: &str, tool: &MountedTool) -> bool {
    grants.is_empty() || grants.iter().any(|g| g.principal == principal && g.covers(tool))
}

/// The grants' tool patterns, for `check` output.
pub fn describe(grant: &Grant) -> String {
    format!(
        "{} -> {}: {}",
        grant.id,
        grant.principal,
        grant.patterns.join(", ")
    )
}
