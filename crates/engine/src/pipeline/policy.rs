//! Stage 3, policy: the plan's rules by tool name, then by effect, then the
//! default decide allow, deny or ask; `max_calls` caps a tool per process.
//! An `ask` is answered by a pre-approval flag, an approver (terminal
//! prompt, MCP elicitation), an operator on the operator page (whichever of
//! the last two answers first), or, with nobody to ask, `approval_required`.
//! A tool with `approval = "another_principal"` is approved only on the
//! page, by an operator who is not the caller (separation of duties).

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use serde_json::{json, Value};
use toolhost_core::wire::codes;
use toolhost_core::{Status, ToolResult};

use super::approvals::{Approvals, Decided, Waiting};
use super::{ApprovalRequest, Approver};
use crate::cancel::CancelToken;
use crate::plan::ui::ApprovalRule;
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
    /// Approved by a flag, an approver or an operator; with the principal
    /// who approved, when one did.
    Approved(&'static str, Option<String>),
}

impl Verdict {
    /// The audit log's word for it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::Allowed => "allow",
            Verdict::Approved(..) => "approved",
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

/// Who can answer a call's `ask`.
pub struct Asking<'a> {
    /// Approvals given up front.
    pub pre: &'a PreApproved,
    /// The caller's own client (or terminal).
    pub approver: Option<&'a Approver>,
    /// The operator page's registry.
    pub page: &'a std::sync::Arc<Approvals>,
    /// Whether the call may wait for the page with no approver of its own.
    pub operator_may_answer: bool,
    /// The caller.
    pub principal: &'a str,
    /// Cancels the wait.
    pub cancel: Option<&'a CancelToken>,
}

/// An answer from either side.
enum Answer {
    Client(bool),
    Page(Decided),
    /// The page's offer ended without an answer, the call was cancelled,
    /// or nobody answered in time.
    Nobody(&'static str),
}

/// Runs the stage: `Ok(verdict)` lets the call through.
pub async fn check(
    plan: &Plan,
    counts: &CallCounts,
    asking: Asking<'_>,
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
        Decision::Ask => ask(plan, &asking, tool, id, input, rule()).await?,
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

/// An `ask`: flags first, then the caller's client and the operator page,
/// whichever answers first.
async fn ask(
    plan: &Plan,
    asking: &Asking<'_>,
    tool: &MountedTool,
    id: &str,
    input: &Value,
    rule: String,
) -> Result<Verdict, ToolResult> {
    let separate = rule_for(plan, tool).is_some_and(|r| r.approval == ApprovalRule::AnotherPrincipal);
    let named = tool.names().any(|n| asking.pre.tools.contains(n));
    if !separate && (asking.pre.all || named) {
        return Ok(Verdict::Approved("flag", None));
    }
    // Separation of duties: the caller's own client is not asked.
    let client = asking.approver.filter(|_| !separate);
    let page = if client.is_some() || asking.operator_may_answer || separate {
        asking.page.offer(Waiting {
            id: 0,
            call_id: id.to_string(),
            tool: tool.name().to_string(),
            principal: asking.principal.to_string(),
            reason: rule.clone(),
            input: input.clone(),
            since_unix_ms: crate::audit::now_ms(),
            another_principal: separate,
        })
    } else {
        None
    };
    if client.is_none() && page.is_none() {
        let (message, details) = if separate {
            (
                format!(
                    "'{}' needs approval by another principal than '{}' ({rule}; [policy.tools.{}] \
                     approval = \"another_principal\"), given on the operator page of `toolhost serve --http`",
                    tool.name(),
                    asking.principal,
                    tool.name()
                ),
                json!({ "rule": rule, "approval": "another_principal" }),
            )
        } else {
            (
                format!(
                    "'{}' needs approval ({rule}) and nobody can be asked here; \
                     rerun with --approve {} or --yes, or change the plan",
                    tool.name(),
                    tool.name()
                ),
                json!({ "rule": rule }),
            )
        };
        return Err(
            ToolResult::failure(id, Status::ApprovalRequired, codes::APPROVAL_REQUIRED, message)
                .with_details(details),
        );
    }
    let request = ApprovalRequest {
        tool: tool.name().to_string(),
        reason: rule.clone(),
        input: input.clone(),
    };
    let wait = std::time::Duration::from_secs(plan.host.default_timeout_secs.max(1));
    let answer = match (client, page) {
        (Some(client), None) => Answer::Client(client(request).await),
        (client, Some(mut offered)) => {
            let client = async {
                match client {
                    Some(client) => client(request).await,
                    None => std::future::pending().await,
                }
            };
            let cancelled = async {
                match asking.cancel {
                    Some(cancel) => cancel.cancelled().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                approved = client => Answer::Client(approved),
                decided = &mut offered.answer => match decided {
                    Ok(decided) => Answer::Page(decided),
                    Err(_) => Answer::Nobody("the approval was withdrawn"),
                },
                () = cancelled => Answer::Nobody("the call was cancelled while it waited for approval"),
                () = tokio::time::sleep(wait) => Answer::Nobody("nobody answered in time"),
            }
        }
        (None, None) => Answer::Nobody("nobody can be asked"),
    };
    let declined = |message: String, details: Value| {
        Err(ToolResult::failure(id, Status::PolicyDenied, codes::DENIED, message).with_details(details))
    };
    match answer {
        Answer::Client(true) => Ok(Verdict::Approved("approver", Some(asking.principal.to_string()))),
        Answer::Page(Decided { approve: true, by }) => Ok(Verdict::Approved("operator_page", Some(by))),
        Answer::Client(false) => declined(
            format!("the user declined to run '{}'", tool.name()),
            json!({ "rule": rule, "approval": "declined" }),
        ),
        Answer::Page(Decided { approve: false, by }) => declined(
            format!(
                "operator '{by}' denied running '{}'; do not retry it unasked",
                tool.name()
            ),
            json!({ "rule": rule, "approval": "declined", "denied_by": by }),
        ),
        Answer::Nobody(why) => declined(
            format!(
                "'{}' was not approved: {why} (waited up to {} s; [host] default_timeout_secs)",
                tool.name(),
                wait.as_secs()
            ),
            json!({ "rule": rule, "approval": "unanswered" }),
        ),
    }
}
