//! `[host.tasks]`: how long MCP tasks live and how many one principal may
//! hold. Which tools may run as tasks is per tool: the tool's spec says
//! (`bash` allows it), `[policy.tools.NAME] task` overrides.
//!
//! Both numbers are bounded here, at load time, so a plan cannot ask the
//! state store to keep results for ever or without limit.

use serde::Deserialize;

/// The longest `ttl_secs` a plan may set: a week.
pub const MAX_TTL_SECS: u64 = 7 * 24 * 3600;

/// The most tasks a plan may let one principal hold.
pub const MAX_PER_PRINCIPAL: u32 = 10_000;

/// `[host.tasks]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, try_from = "RawTaskSettings")]
pub struct TaskSettings {
    /// How long a task (and its result) is kept, from its creation, in
    /// seconds; then it is deleted, and a running one cancelled. Clients
    /// see it as the task's `ttlMs`.
    pub ttl_secs: u64,
    /// Tasks one principal may hold at once. At the limit, its oldest
    /// finished task is dropped for the new one; when all of them are
    /// still running, the new call is refused.
    pub max_per_principal: u32,
}

impl Default for TaskSettings {
    fn default() -> Self {
        TaskSettings {
            ttl_secs: 3600,
            max_per_principal: 64,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTaskSettings {
    ttl_secs: Option<u64>,
    max_per_principal: Option<u32>,
}

impl TryFrom<RawTaskSettings> for TaskSettings {
    type Error = String;

    fn try_from(raw: RawTaskSettings) -> Result<Self, String> {
        let default = TaskSettings::default();
        let ttl_secs = raw.ttl_secs.unwrap_or(default.ttl_secs);
        if !(1..=MAX_TTL_SECS).contains(&ttl_secs) {
            return Err(format!(
                "host.tasks.ttl_secs must be 1 to {MAX_TTL_SECS} (a week), not {ttl_secs}"
            ));
        }
        let max_per_principal = raw.max_per_principal.unwrap_or(default.max_per_principal);
        if !(1..=MAX_PER_PRINCIPAL).contains(&max_per_principal) {
            return Err(format!(
                "host.tasks.max_per_principal must be 1 to {MAX_PER_PRINCIPAL}, not {max_per_principal}"
            ));
        }
        Ok(TaskSettings {
            ttl_secs,
            max_per_principal,
        })
    }
}
