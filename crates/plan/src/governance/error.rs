//! What is wrong with a plan's governance sections, as kinds: the plan
//! loader reports them as `PlanError::Invalid`, and each
//! variant carries the entry (`which`) and the value at fault.

/// A `[[principals]]`, `[[grants]]`, `[host.redact]` or
/// `[policy.tools.X] version` entry the host cannot use.
#[derive(Debug, thiserror::Error)]
pub enum GovernanceError {
    /// A `[host.redact] patterns` regex does not compile.
    #[error(transparent)]
    Redact(#[from] super::redact::RedactError),
    /// A `[[principals]]` entry is malformed.
    #[error("{which}: {problem}")]
    Principal {
        /// `[[principals]] #N ('name')`.
        which: String,
        /// What is wrong.
        problem: PrincipalProblem,
    },
    /// A `[[grants]]` entry is malformed.
    #[error("{which}: {problem}")]
    Grant {
        /// `[[grants]] #N (id)`.
        which: String,
        /// What is wrong.
        problem: GrantProblem,
    },
    /// A grant names a principal the plan does not declare.
    #[error(
        "[[grants]] {grant}: principal '{principal}' is neither a [[principals]] entry nor [host] principal ('{host_principal}')"
    )]
    UnknownPrincipal {
        /// The grant's id.
        grant: String,
        /// The principal it names.
        principal: String,
        /// The plan's `[host] principal`.
        host_principal: String,
    },
    /// A `[policy.tools.X] version` is not a semver requirement.
    #[error("[policy.tools.{tool}] version '{requirement}' is not a semver requirement: {error}")]
    VersionPin {
        /// The tool.
        tool: String,
        /// The requirement as written.
        requirement: String,
        /// What the parser said.
        error: semver::Error,
    },
}

/// What is wrong with one `[[principals]]` entry.
#[derive(Debug, thiserror::Error)]
pub enum PrincipalProblem {
    /// The name is empty or holds other characters.
    #[error("a name is letters, digits, '_', '-', '.' or '@'")]
    BadName,
    /// Another entry has the same name.
    #[error("the name is used twice")]
    Duplicate,
    /// Both token sources are given.
    #[error("give `token_env` or `token_sha256`, not both")]
    BothTokens,
    /// Neither token source is given, and it is not the host principal.
    #[error(
        "needs `token_env = \"VAR\"`, `token_sha256 = \"<hex>\"` or `claims = {{ ... }}` (only the host \
         principal '{host_principal}' may go without one)"
    )]
    NoToken {
        /// The plan's `[host] principal`.
        host_principal: String,
    },
    /// The digest is not 64 hex digits.
    #[error("token_sha256 must be 64 hex digits (sha256sum of the token)")]
    BadDigest,
    /// `claims` lists nothing, or a value that is not a string, number,
    /// boolean or array of those.
    #[error("claims: {0}")]
    BadClaims(String),
}

/// What is wrong with one `[[grants]]` entry.
#[derive(Debug, thiserror::Error)]
pub enum GrantProblem {
    /// `tools` is empty.
    #[error("`tools` lists no glob, so it grants nothing")]
    NoTools,
    /// A `tools` glob does not parse.
    #[error("`tools`: {0}")]
    Glob(globset::Error),
    /// `expires_at` is not RFC 3339.
    #[error("expires_at '{value}' is not RFC 3339 (2026-12-31T23:59:59Z): {error}")]
    ExpiresAt {
        /// The value as written.
        value: String,
        /// What the parser said.
        error: chrono::ParseError,
    },
    /// `max_calls = 0`.
    #[error("max_calls = 0 grants nothing; remove the grant instead")]
    ZeroCalls,
}

/// A tool's `deprecated.sunset` that is not a date.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SunsetError {
    /// Neither `YYYY-MM-DD` nor RFC 3339.
    #[error("sunset '{0}' is neither a day (YYYY-MM-DD) nor an RFC 3339 instant")]
    NotADate(String),
    /// A day with no next day in chrono's range.
    #[error("sunset '{0}' is out of range")]
    OutOfRange(String),
}

/// A request-context id that cannot be written to a log line honestly.
/// A single struct: the pipeline answers every such id with the same
/// `invalid_input` refusal, so callers need only the id's name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the request context's {name} must be 1 to {max} bytes without control characters")]
pub struct RequestIdError {
    /// Which id (`run_id`, `tenant`, …).
    pub name: &'static str,
    /// The longest id allowed, in bytes.
    pub max: usize,
}
