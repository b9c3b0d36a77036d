//! What is wrong with one `[[tools]]` or `[[hooks]]` entry, as a kind; the
//! plan loader wraps it in [`super::PlanError::Tool`] or
//! [`super::PlanError::Hook`] with the file and the entry's number.

use super::env_expand::ExpandError;

/// A `[[tools]]` entry the host cannot use.
#[derive(Debug, thiserror::Error)]
pub enum ToolEntryProblem {
    /// `module` holds other characters.
    #[error("module name '{0}' must be letters, digits, '_' or '-'")]
    ModuleName(String),
    /// No `module`, `path` or `[tools.mcp]`.
    #[error("needs `module = \"name\"`, `path = \"file\"` or a `[tools.mcp]` table")]
    NoSource,
    /// More than one of them.
    #[error("give exactly one of `module`, `path` or `[tools.mcp]`, not several")]
    SeveralSources,
    /// `isolation = "in-process"` or `memory_limit_mb` on an MCP server.
    #[error(
        "an MCP server always runs in its own process; drop `isolation` \
         and `memory_limit_mb` from this entry"
    )]
    McpIsolation,
    /// `config` or `version` on an MCP server.
    #[error("`config` and `version` apply to modules, not to `[tools.mcp]`")]
    McpModuleKeys,
    /// `memory_limit_mb` on an in-process module.
    #[error(
        "memory_limit_mb needs `isolation = \"process\"`: an in-process module \
         shares the host's memory and cannot be capped"
    )]
    MemoryInProcess,
    /// `memory_limit_mb = 0`.
    #[error("memory_limit_mb must be at least 1")]
    MemoryZero,
    /// `version` is not a semver requirement.
    #[error("version requirement '{requirement}' is not semver: {error}")]
    Version {
        /// The requirement as written.
        requirement: String,
        /// What the parser said.
        error: semver::Error,
    },
    /// `config` has a value JSON cannot hold.
    #[error("config cannot be converted to JSON: {0}")]
    ConfigJson(serde_json::Error),
    /// A `${VAR}` in `config` that cannot be expanded.
    #[error("config: {0}")]
    ConfigEnv(ExpandError),
    /// `max_concurrent = 0`.
    #[error("max_concurrent must be at least 1")]
    ConcurrencyZero,
}

/// A `[[hooks]]` entry the host cannot use.
#[derive(Debug, thiserror::Error)]
pub enum HookEntryProblem {
    /// `command` is empty or starts with an empty program.
    #[error("`command` needs a program")]
    NoProgram,
    /// `tools` is not a glob.
    #[error("`tools` is not a valid glob: {0}")]
    Glob(globset::Error),
}
