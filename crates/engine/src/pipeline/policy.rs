//! Stage 3, policy: the plan's rules by tool name, then by effect, then the
//! default decide allow, deny or ask; `max_calls` caps a tool per process.
//! An `ask` is answered by a pre-approval flag, an approver (terminal
//! prompt, MCP elicitation) or, with nobody to ask, `approval_required`.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use serde_json::{json, Value};
use toolhost_core::wire::codes;
use toolhost_core::{Status, ToolResult};

use super::{ApprovalRequest, Approver};
use crate::plan::{Decision, Plan, ToolRule};
use crate::tool::MountedTool;

/// Approvals given up front (`--yes`, `--approve TOOL`).
#[derive(Debug, Clone, Default)]
pub struct PreApproved {
    /// Approve every `ask`.
    pub all: bool,
    /// Approve `ask` for these tools (names or aliases).
    pub tools: HashSet<String>,
}

/// How the call was let through, for the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// No rule asked for approval.
    Allowed,
    /// Approved by a flag or an approver.
    Approved(&'static str),
}

impl Verdict {
    /// The audit log's word for it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::Allowed => "allow",
            Verdict::Approved(_) => "approved",
        }
    }
}

/// Per-process call counts for `max_calls`.
#[derive(Default)]
pub struct CallCounts(Mutex<HashMap<String, u64>>);

/// The rule for a tool: by its name or any of its aliases.
fn rule_for<'p>(plan: &'p Plan, tool: &MountedTool) -> Option<&'p ToolRule> {
    tool.names().find_map(|name| plan.policy.tools.get(name))
}

/// Whether the plan may ask for approval before `tool` runs (its rule, its
/// effect or the default says `ask`). The MCP HTTP fast path leaves such
/// calls to rmcp's path, which can carry the elicitation.
pub fn may_ask(plan: &Plan, tool: &MountedTool) -> bool {
    decide(plan, tool).0 == Decision::Ask
}

/// Which rule made a decision (rendered only when a message needs it).
#[derive(Clone, Copy)]
enum Rule {
    Tool,
    Effect,
    Default,
}

/// The decision and the rule that made it.
fn decide(plan: &Plan, tool: &MountedTool) -> (Decision, Rule) {
    if let Some(decision) = rule_for(plan, tool).and_then(|r| r.decision) {
        return (decision, Rule::Tool);
    }
    if let Some(decision) = plan.policy.effects.get(&tool.spec.effect) {
        return (*decision, Rule::Effect);
    }
    (plan.policy.default, Rule::Default)
}

fn describe(rule: Rule, decision: Decision, tool: &MountedTool) -> String {
    match rule {
        Rule::Tool => format!("[policy.tools.{}] decision = \"{}\"", tool.name(), word(decision)),
        Rule::Effect => format!("[policy.effects] {} = \"{}\"", tool.spec.effect, word(decision)),
        Rule::Default => format!("[policy] default = \"{}\"", word(decision)),
    }
}

fn word(d: Decision) -> &'static str {
    match d {
        Decision::Allow => "allow",
        Decision::Ask => "ask",
        Decision::Deny => "deny",
    }
}

/// Runs the stage: `Ok(verdict)` lets the call through.
pub async fn check(
    plan: &Plan,
    counts: &CallCounts,
    pre: &PreApproved,
    approver: Option<&Approver>,
    tool: &MountedTool,
    id: &str,
    input: &Value,
) -> Result<Verdict, ToolResult> {
    let (decision, source) = decide(plan, tool);
    let rule = || describe(source, decision, tool);
    let verdict = match decision {
        Decision::Deny => {
            return Err(ToolResult::failure(
                id,
                Status::PolicyDenied,
                codes::DENIED,
                format!(
                    "'{}' is denied by the plan ({}); do not retry it",
                    tool.name(),
                    rule()
                ),
            )
            .with_details(json!({ "rule": rule() })));
        }
        Decision::Allow => Verdict::Allowed,
        Decision::Ask => {
            let named = tool.names().any(|n| pre.tools.contains(n));
            if pre.all || named {
                Verdict::Approved("flag")
            } else if let Some(approver) = approver {
                let request = ApprovalRequest {
                    tool: tool.name().to_string(),
                    reason: rule(),
                    input: input.clone(),
                };
                if approver(request).await {
                    Verdict::Approved("approver")
                } else {
                    return Err(ToolResult::failure(
                        id,
                        Status::PolicyDenied,
                        codes::DENIED,
                        format!("the user declined to run '{}'", tool.name()),
                    )
                    .with_details(json!({ "rule": rule(), "approval": "declined" })));
                }
            } else {
                return Err(ToolResult::failure(
                    id,
                    Status::ApprovalRequired,
                    codes::APPROVAL_REQUIRED,
                    format!(
                        "'{}' needs approval ({}) and nobody can be asked here; \
                         rerun with --approve {} or --yes, or change the plan",
                        tool.name(),
                        rule(),
                        tool.name()
                    ),
                )
                .with_details(json!({ "rule": rule() })));
            }
        }
    };
    if let Some(max) = rule_for(plan, tool).and_then(|r| r.max_calls) {
        let mut counts = counts.0.lock().unwrap_or_else(|e| e.into_inner());
        let used = counts.entry(tool.name().to_string()).or_insert(0);
        if *used >= max {
            return Err(ToolResult::failure(
                id,
                Status::PolicyDenied,
                codes::DENIED,
                format!(
                    "'{}' has reached its limit of {max} call(s) in this session ([policy.tools.{}] max_calls)",
                    tool.name(),
                    tool.name()
                ),
            ));
        }
        *used += 1;
    }
    Ok(verdict)
}
