//! The plan file's shape, as serde types. Unknown keys are errors.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use toolhost_core::Effect;

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PlanFile {
    #[serde(default)]
    pub host: HostSection,
    #[serde(default)]
    pub tools: Vec<ToolsEntry>,
    #[serde(default)]
    pub policy: PolicySection,
    #[serde(default)]
    pub hooks: Vec<HookEntry>,
    #[serde(default)]
    pub alias_profiles: Vec<crate::alias::ProfileDef>,
    /// `[[principals]]` (issue #16).
    #[serde(default)]
    pub principals: Vec<crate::governance::principals::PrincipalEntry>,
    /// `[[grants]]` (issue #16).
    #[serde(default)]
    pub grants: Vec<crate::governance::grants::GrantEntry>,
    /// `[[toolsets]]`: named subsets of the tools (see `surface::toolsets`).
    #[serde(default)]
    pub toolsets: Vec<crate::toolsets::ToolsetEntry>,
    /// `[[limits]]`: rate limits (see `governance::limits`).
    #[serde(default)]
    pub limits: Vec<crate::governance::limits::LimitEntry>,
}

/// `[host]`: settings of the host itself.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSection {
    /// Where tool inputs' relative paths resolve (default: the current folder).
    pub working_dir: Option<String>,
    /// Deadline for a call when neither the tool nor the plan says otherwise.
    #[serde(default = "default_timeout_secs")]
    pub default_timeout_secs: u64,
    /// Cap on one result's output, after the tool's own limits.
    #[serde(default = "default_max_output_bytes")]
    pub max_output_bytes: u64,
    /// Folders searched for modules by name (after TOOLHOST_MODULE_PATH).
    #[serde(default)]
    pub module_path: Vec<String>,
    /// JSONL audit log, one record per call.
    pub audit_log: Option<String>,
    /// Folder for host state (default: `$XDG_STATE_HOME/toolhost/<project id>`,
    /// outside the workspace; see `plan::state_dir`).
    pub state_dir: Option<String>,
    /// How long a cancelled tool may take to stop before it is abandoned.
    #[serde(default = "default_cancel_grace_ms")]
    pub cancel_grace_ms: u64,
    /// Store raw inputs in the audit log (off: only their hash and size).
    #[serde(default)]
    pub audit_inputs: bool,
    /// At most this many calls of a batch run at once.
    #[serde(default = "default_batch_concurrency")]
    pub batch_concurrency: usize,
    /// Isolation for `[[tools]]` entries that do not set their own
    /// (unset: `module` entries in-process, `path` entries in a process).
    pub default_isolation: Option<Isolation>,
    /// List aliases (with their profiles' schemas) in MCP `tools/list`
    /// beside the canonical tools (off: only canonical names are listed).
    #[serde(default)]
    pub list_aliases: bool,
    /// Alias families whose profiles share a canonical tool's name (Amp's
    /// `edit_file`, `undo_edit`): listed here, that name also accepts the
    /// family's shape when the input does not fit the canonical schema.
    #[serde(default)]
    pub colliding_families: Vec<String>,
    /// How long an idempotency key is remembered: seconds, or a duration
    /// such as `"24h"` or `"30m"` (default 24 h).
    #[serde(default)]
    pub idempotency_ttl: Option<IdempotencyTtl>,
    /// `postgres://…` moves idempotency (and the audit sink) into PostgreSQL
    /// so a fleet of hosts shares them; `${ENV}` expanded. Unset: the
    /// embedded store under `state_dir`.
    pub state_url: Option<String>,
    /// This host's name in shared state (its audit chain); default the
    /// machine's hostname.
    pub host_id: Option<String>,
    /// Who stdio and CLI calls run for (default `local`; issue #16).
    pub principal: Option<String>,
    /// `[host.redact]`: the output guardrail (issue #16).
    #[serde(default)]
    pub redact: crate::redact::RedactSection,
    /// `serve --http`: MCP sessions one principal may hold at once (at
    /// least 1). At the quota, a new `initialize` ends that principal's
    /// least recently used idle session instead of being refused, so one
    /// principal can neither take every `--max-sessions` place nor lock
    /// itself out with a flood of `initialize`.
    #[serde(default = "default_sessions_per_principal")]
    pub sessions_per_principal: usize,
    /// `[host.worker_limits]`: caps on what an isolated module's worker may
    /// send (frames, log lines, events); past one the worker is killed.
    #[serde(default)]
    pub worker_limits: crate::plan::limits::WorkerLimits,
    /// `[host.mcp_limits]`: caps on a mounted MCP server's tool list (tools,
    /// and the pages and bytes of one `tools/list` walk).
    #[serde(default)]
    pub mcp_limits: crate::plan::limits::McpLimits,
    // Surface: what a client sees of the tools (see the `surface` module).
    /// `"all"` lists every tool; `"search"` lists `tool_search` and the
    /// `always_on` tools, and every tool stays callable by name.
    #[serde(default)]
    pub tool_discovery: ToolDiscovery,
    /// Globs over tool names listed even under `tool_discovery = "search"`.
    #[serde(default)]
    pub always_on: Vec<String>,
    /// Bytes of over-limit results kept per principal for reading back
    /// (`read_output`, `resources/read`); the oldest go first.
    #[serde(default = "default_output_store_bytes")]
    pub output_store_bytes: u64,
    /// Seconds an over-limit result stays readable.
    #[serde(default = "default_output_store_secs")]
    pub output_store_secs: u64,
    /// `[host.tasks]`: how long MCP tasks live, how many a principal holds.
    #[serde(default)]
    pub tasks: crate::plan::tasks::TaskSettings,
    /// `[host.oauth]`: `serve --http` also accepts access tokens (JWTs)
    /// from this issuer, mapped to `[[principals]]` by their `claims`.
    pub oauth: Option<crate::plan::oauth::OAuthSection>,
    /// `[host.telemetry]`: a span per call, exported over OTLP.
    #[serde(default)]
    pub telemetry: crate::plan::telemetry::TelemetrySection,
    /// `[host.metrics]`: who may read `/metrics` on `serve --http`.
    #[serde(default)]
    pub metrics: crate::plan::telemetry::MetricsSection,
    /// `[host.ui]`: the operator page of `serve --http` (off without operators).
    #[serde(default)]
    pub ui: crate::plan::ui::UiSection,
}

/// `[host] tool_discovery`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolDiscovery {
    /// `tools/list` shows every tool.
    #[default]
    All,
    /// `tools/list` shows `tool_search` and the `always_on` tools.
    Search,
}

fn default_output_store_bytes() -> u64 {
    256 * 1024 * 1024
}

fn default_output_store_secs() -> u64 {
    3600
}

/// `[host] idempotency_ttl`: seconds, or a duration string.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum IdempotencyTtl {
    /// Seconds.
    Secs(u64),
    /// `"24h"`, `"90m"`, `"7days"` (humantime's syntax).
    Text(String),
}

impl Default for HostSection {
    fn default() -> Self {
        HostSection {
            working_dir: None,
            default_timeout_secs: default_timeout_secs(),
            max_output_bytes: default_max_output_bytes(),
            module_path: Vec::new(),
            audit_log: None,
            state_dir: None,
            cancel_grace_ms: default_cancel_grace_ms(),
            audit_inputs: false,
            batch_concurrency: default_batch_concurrency(),
            default_isolation: None,
            list_aliases: false,
            colliding_families: Vec::new(),
            idempotency_ttl: None,
            state_url: None,
            host_id: None,
            principal: None,
            redact: Default::default(),
            sessions_per_principal: default_sessions_per_principal(),
            worker_limits: Default::default(),
            mcp_limits: Default::default(),
            tool_discovery: ToolDiscovery::All,
            always_on: Vec::new(),
            output_store_bytes: default_output_store_bytes(),
            output_store_secs: default_output_store_secs(),
            tasks: Default::default(),
            oauth: None,
            telemetry: Default::default(),
            metrics: Default::default(),
            ui: Default::default(),
        }
    }
}

fn default_timeout_secs() -> u64 {
    120
}

fn default_max_output_bytes() -> u64 {
    100 * 1024
}

fn default_cancel_grace_ms() -> u64 {
    3000
}

fn default_batch_concurrency() -> usize {
    64
}

fn default_sessions_per_principal() -> usize {
    16
}

fn default_hook_timeout_ms() -> u64 {
    5000
}

fn default_hook_tools() -> String {
    "*".into()
}

/// `[[hooks]]`: a command run on `tool:pre` or `tool:post`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookEntry {
    /// `tool:pre` (may deny or rewrite the input) or `tool:post` (may deny or
    /// rewrite the output).
    pub event: HookEvent,
    /// Glob over tool names (`*`, `fs_*`, `{write_file,edit_file}`).
    #[serde(default = "default_hook_tools")]
    pub tools: String,
    /// The program and its arguments; the event arrives as JSON on stdin.
    pub command: Vec<String>,
    /// How long the hook may take.
    #[serde(default = "default_hook_timeout_ms")]
    pub timeout_ms: u64,
    /// What a hook that fails, hangs or answers garbage means.
    #[serde(default)]
    pub on_failure: HookFailure,
}

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum HookEvent {
    /// Before execution.
    #[serde(rename = "tool:pre")]
    Pre,
    /// After execution.
    #[serde(rename = "tool:post")]
    Post,
}

/// The failure policy of a hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum HookFailure {
    /// Fail closed: the call is denied.
    #[default]
    Deny,
    /// Fail open: the call goes on as if the hook allowed it.
    Allow,
}

/// `[[tools]]`: one module to mount.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsEntry {
    /// Module name, found as `libtoolhost_<name>.so` on the module path.
    pub module: Option<String>,
    /// Or an explicit library file.
    pub path: Option<String>,
    /// Semver requirement on the module's version.
    pub version: Option<String>,
    /// Namespace for the module's tool names and aliases.
    pub prefix: Option<String>,
    /// Handed to the module's mount as JSON; `${ENV}` expands.
    #[serde(default)]
    pub config: toml::Table,
    /// At most this many of the module's calls run at once.
    pub max_concurrent: Option<usize>,
    /// Where the module's code runs: `in-process` or `process`.
    pub isolation: Option<Isolation>,
    /// Address-space cap of an isolated module's worker, in MiB.
    pub memory_limit_mb: Option<u64>,
    /// Or an MCP server to mount (instead of `module` or `path`).
    pub mcp: Option<McpSource>,
}

/// Where a module's code runs (`"in-process"`, as DESIGN.md spells it, or
/// `"in_process"`; `"process"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Isolation {
    /// Loaded into the host process: fastest, trusted completely.
    #[serde(rename = "in-process", alias = "in_process")]
    InProcess,
    /// Loaded into a worker process (the `toolhost` binary re-executed):
    /// a crash ends the worker, not the host.
    Process,
}

/// `[tools.mcp]`: an MCP server mounted as a tool source.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSource {
    /// Program and arguments of a stdio server.
    #[serde(default)]
    pub command: Vec<String>,
    /// Extra environment for the stdio server; `${ENV}` expands.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Or the URL of a streamable HTTP server.
    pub url: Option<String>,
    /// HTTP headers for `url`; `${ENV}` expands.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// What the server's requests for input (elicitation, `input_required`)
    /// meet: `pass` (the default) asks the caller when its client can
    /// answer, `decline` declines them all.
    #[serde(default)]
    pub elicitation: crate::ask::InputPolicy,
}

/// allow, ask or deny.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Run the call.
    #[default]
    Allow,
    /// Ask a human first (or answer `approval_required`).
    Ask,
    /// Refuse the call.
    Deny,
}

/// `[policy]`: who may run what.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySection {
    /// Decision when no rule matches.
    #[serde(default)]
    pub default: Decision,
    /// Rules by effect (`irreversible = "ask"`).
    #[serde(default)]
    pub effects: BTreeMap<Effect, Decision>,
    /// Rules by tool name.
    #[serde(default)]
    pub tools: BTreeMap<String, ToolRule>,
    /// The policy's version, recorded with every decision (issue #16).
    pub version: Option<String>,
}

/// `[policy.tools.NAME]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolRule {
    /// Overrides the effect rules and the default.
    pub decision: Option<Decision>,
    /// Deadline for this tool's calls, in seconds, or `"none"` for no
    /// timeout (cancel and session end still stop the call). With
    /// `max_duration_secs`, an inactivity timeout that each progress report
    /// starts again.
    pub timeout_secs: Option<SecsOrNone>,
    /// The hard cap on one call's whole run, in seconds, or `"none"`.
    /// Setting it turns `timeout_secs` into an inactivity timeout (see
    /// `pipeline::deadline`).
    pub max_duration_secs: Option<SecsOrNone>,
    /// More names for the tool.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// At most this many calls per host process.
    pub max_calls: Option<u64>,
    /// Overrides the tool's declared effect (for MCP tools, whose effect
    /// otherwise comes from their annotations).
    pub effect: Option<Effect>,
    /// Semver requirement the tool's version must meet (issue #16).
    pub version: Option<String>,
    /// Whether an MCP client may get this tool's calls as tasks:
    /// `"allowed"`, `"required"` or `"forbidden"` (default: what the tool's
    /// spec says; `bash` allows them, other tools forbid them).
    pub task: Option<toolhost_core::TaskSupport>,
    /// Who may approve its `ask`: `"any"` or `"another_principal"`
    /// (separation of duties: an operator on the page, not the caller).
    #[serde(default)]
    pub approval: crate::plan::ui::ApprovalRule,
}

// Long calls: `[policy.tools.NAME] timeout_secs` / `max_duration_secs`.

/// A number of seconds, or `"none"` (no bound).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecsOrNone {
    /// This many seconds (at least 1).
    Secs(u64),
    /// No bound.
    None,
}

impl SecsOrNone {
    /// The bound as a duration; `None` for `"none"`.
    pub fn duration(self) -> Option<std::time::Duration> {
        match self {
            SecsOrNone::Secs(s) => Some(std::time::Duration::from_secs(s)),
            SecsOrNone::None => None,
        }
    }
}

impl<'de> Deserialize<'de> for SecsOrNone {
    /// A positive integer or the string `"none"`; anything else is an error
    /// that says so (an untagged enum would only say that no variant fit).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = SecsOrNone;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number of seconds (at least 1) or \"none\"")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<SecsOrNone, E> {
                match u64::try_from(v) {
                    Ok(v) => self.visit_u64(v),
                    Err(_) => Err(E::custom(format!(
                        "{v} is not a number of seconds: give at least 1, or \"none\""
                    ))),
                }
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<SecsOrNone, E> {
                if v == 0 {
                    return Err(E::custom(
                        "0 seconds would end every call at once: give at least 1, or \"none\" for no bound",
                    ));
                }
                Ok(SecsOrNone::Secs(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<SecsOrNone, E> {
                if v == "none" {
                    Ok(SecsOrNone::None)
                } else {
                    Err(E::custom(format!(
                        "\"{v}\" is not a bound: give a number of seconds, or \"none\""
                    )))
                }
            }
        }
        d.deserialize_any(Visitor)
    }
}
