//! The JSON documents that cross the boundary: specs, calls, results.
//!
//! These types may grow freely (new optional fields) without an ABI break, so
//! readers ignore fields they do not know and writers skip empty optionals.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What a tool does to the world; drives default annotations and policy.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Reads local state only.
    ReadOnly,
    /// Reads from the outside world (network).
    Retrieve,
    /// Pure computation.
    Compute,
    /// Produces a draft for review; nothing is applied.
    Draft,
    /// Changes local state (files).
    InternalMutation,
    /// Tells someone something (mail, chat).
    ExternalNotification,
    /// Cannot be undone (shell commands, payments).
    Irreversible,
    /// About the toolset itself.
    Meta,
}

impl Effect {
    /// Every effect, in order, for listings and validation.
    pub const ALL: [Effect; 8] = [
        Effect::ReadOnly,
        Effect::Retrieve,
        Effect::Compute,
        Effect::Draft,
        Effect::InternalMutation,
        Effect::ExternalNotification,
        Effect::Irreversible,
        Effect::Meta,
    ];

    /// The snake_case name used in JSON and in plans.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::ReadOnly => "read_only",
            Effect::Retrieve => "retrieve",
            Effect::Compute => "compute",
            Effect::Draft => "draft",
            Effect::InternalMutation => "internal_mutation",
            Effect::ExternalNotification => "external_notification",
            Effect::Irreversible => "irreversible",
            Effect::Meta => "meta",
        }
    }

    /// The annotations this effect implies, so specs agree with their effect
    /// unless an author overrides them on purpose.
    pub fn default_annotations(self) -> Annotations {
        let read_only = matches!(
            self,
            Effect::ReadOnly | Effect::Retrieve | Effect::Compute | Effect::Meta
        );
        Annotations {
            read_only,
            destructive: matches!(self, Effect::InternalMutation | Effect::Irreversible),
            idempotent: read_only,
            open_world: matches!(
                self,
                Effect::Retrieve | Effect::ExternalNotification | Effect::Irreversible
            ),
        }
    }
}

impl std::fmt::Display for Effect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Hints for clients (they map onto MCP's tool annotations).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(default)]
pub struct Annotations {
    /// The tool does not modify its environment.
    pub read_only: bool,
    /// The tool may overwrite or delete, not only add.
    pub destructive: bool,
    /// Repeating a call with the same input has no further effect.
    pub idempotent: bool,
    /// The tool talks to the world beyond this machine.
    pub open_world: bool,
}

/// Whether a resource is read or written, for scheduling batches.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum AccessMode {
    /// Shares with other reads of the same key.
    Read,
    /// Orders against every other access to the same key.
    Write,
}

/// Names the input argument (a JSON pointer) that identifies a resource.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResourceKey {
    /// JSON pointer into the input, e.g. `/file_path`.
    pub arg: String,
    /// How the call uses the resource.
    pub mode: AccessMode,
}

/// How the host may schedule a tool's calls.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(default)]
pub struct Execution {
    /// Calls run alone: nothing else runs beside them in a batch.
    pub serial: bool,
    /// Resources the call touches, for conflict-aware batching.
    pub resource_keys: Vec<ResourceKey>,
    /// The deadline the tool asks for; a plan rule overrides it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// Whether an MCP client may get this tool's calls as tasks (polled
    /// for their result later); a plan rule overrides it.
    #[serde(skip_serializing_if = "TaskSupport::is_forbidden")]
    pub task: TaskSupport,
}

/// Whether a tool's calls may run as MCP tasks (the Tasks extension): the
/// host answers a call with a task handle and the client polls for the
/// result, so a long call outlives the request that started it.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TaskSupport {
    /// Never a task: the call answers its result.
    #[default]
    Forbidden,
    /// A task when the client can take one, else a plain call.
    Allowed,
    /// Only as a task: a client that cannot take one is refused.
    Required,
}

impl TaskSupport {
    /// The default, which specs leave out.
    pub fn is_forbidden(&self) -> bool {
        *self == TaskSupport::Forbidden
    }
}

/// What a tool tells the host about itself (`FfiTool::spec`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ToolSpec {
    /// Unique name, snake_case.
    pub name: String,
    /// Optional human title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, written for a model.
    pub description: String,
    /// JSON Schema of the input (an object schema).
    pub input_schema: Value,
    /// JSON Schema of a successful output, when the tool commits to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// What the tool does to the world.
    pub effect: Effect,
    /// Client hints; default from the effect.
    #[serde(default)]
    pub annotations: Annotations,
    /// Scheduling facts.
    #[serde(default)]
    pub execution: Execution,
    /// Other names the tool answers to.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// The tool's version (defaults to its module's).
    #[serde(default)]
    pub version: String,
    /// Scopes a principal's grant must cover to call the tool (issue #16).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_scopes: Vec<String>,
    /// Set when the tool is on its way out (issue #16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated: Option<Deprecation>,
}

/// A deprecated tool's schedule: the host warns from `since`, names
/// `replacement`, and refuses calls after `sunset`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Deprecation {
    /// The version (or date) from which the tool is deprecated.
    pub since: String,
    /// The tool to use instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacement: Option<String>,
    /// The day (`YYYY-MM-DD`) or instant (RFC 3339) after which calls are
    /// refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sunset: Option<String>,
}

impl Deprecation {
    /// Deprecated since `since`, with no replacement or sunset yet.
    pub fn new(since: impl Into<String>) -> Self {
        Deprecation {
            since: since.into(),
            replacement: None,
            sunset: None,
        }
    }

    /// Names the tool to use instead.
    pub fn replacement(mut self, tool: impl Into<String>) -> Self {
        self.replacement = Some(tool.into());
        self
    }

    /// Sets the day or instant after which calls are refused.
    pub fn sunset(mut self, when: impl Into<String>) -> Self {
        self.sunset = Some(when.into());
        self
    }
}

impl ToolSpec {
    /// Starts a spec with the annotations of `Effect::ReadOnly`; chain the
    /// builder methods to say more. The SDK fills `input_schema` from the
    /// tool's input type.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        ToolSpec {
            name: name.into(),
            title: None,
            description: description.into(),
            input_schema: Value::Null,
            output_schema: None,
            effect: Effect::ReadOnly,
            annotations: Effect::ReadOnly.default_annotations(),
            execution: Execution::default(),
            aliases: Vec::new(),
            version: String::new(),
            required_scopes: Vec::new(),
            deprecated: None,
        }
    }

    /// Sets the effect and the annotations it implies.
    pub fn effect(mut self, effect: Effect) -> Self {
        self.effect = effect;
        self.annotations = effect.default_annotations();
        self
    }

    /// Overrides the annotations (after `effect`).
    pub fn annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// Sets a human title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Adds another name the tool answers to.
    pub fn alias(mut self, alias: impl Into<String>) -> Self {
        self.aliases.push(alias.into());
        self
    }

    /// Declares that the input at `arg` (a JSON pointer) names a resource.
    pub fn resource_key(mut self, arg: impl Into<String>, mode: AccessMode) -> Self {
        self.execution.resource_keys.push(ResourceKey {
            arg: arg.into(),
            mode,
        });
        self
    }

    /// Makes every call run alone.
    pub fn serial(mut self, serial: bool) -> Self {
        self.execution.serial = serial;
        self
    }

    /// Lets clients get calls as MCP tasks (a plan rule wins).
    pub fn task_support(mut self, task: TaskSupport) -> Self {
        self.execution.task = task;
        self
    }

    /// Asks for a deadline other than the host default (a plan rule wins).
    pub fn timeout_secs(mut self, secs: u64) -> Self {
        self.execution.timeout_secs = Some(secs);
        self
    }

    /// Sets the output schema.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Sets the version (otherwise the module's version is used).
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// Adds a scope a caller's grant must cover.
    pub fn required_scope(mut self, scope: impl Into<String>) -> Self {
        self.required_scopes.push(scope.into());
        self
    }

    /// Marks the tool deprecated.
    pub fn deprecated(mut self, deprecation: Deprecation) -> Self {
        self.deprecated = Some(deprecation);
        self
    }
}

/// One call, host to tool.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct CallRequest {
    /// Echoed in the result; unique per call.
    pub tool_call_id: String,
    /// The tool's registered name (after alias resolution).
    pub name: String,
    /// The input, already validated against the schema by the host.
    pub input: Value,
    /// Time budget in milliseconds from the start of the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<u64>,
    /// Folder that relative paths in the input resolve against.
    pub working_dir: String,
    /// The session the call belongs to (an MCP session, or one CLI process
    /// or batch): modules keep per-session state under it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Who the call runs for (a `[[principals]]` name, or the host's
    /// `[host] principal`; issue #16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// The caller's run, thread, tenant, agent and correlation ids, when
    /// given (issue #16).
    #[serde(default, skip_serializing_if = "RequestContext::is_empty")]
    pub context: RequestContext,
    /// The call's W3C trace context (`00-<trace id>-<span id>-<flags>`):
    /// the host's span for the call, or the caller's when the host exports
    /// no spans. A tool that calls further services passes it on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// The W3C `tracestate` that goes with `traceparent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracestate: Option<String>,
}

/// The ids a caller attaches to a request (MCP `_meta`, CLI flags), so a
/// tool, the audit log and per-run limits can tell runs apart.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct RequestContext {
    /// One agent run (per-run grant limits count by it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The conversation thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// The tenant the run works for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The agent making the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Ties the call to the caller's own logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
}

impl RequestContext {
    /// Whether no id is set.
    pub fn is_empty(&self) -> bool {
        self.run_id.is_none()
            && self.thread_id.is_none()
            && self.tenant.is_none()
            && self.agent.is_none()
            && self.correlation_id.is_none()
    }
}

impl CallRequest {
    /// A call of tool `name` with `input`, relative paths resolving against
    /// `working_dir`, and no deadline (set `deadline_ms` for one).
    pub fn new(
        tool_call_id: impl Into<String>,
        name: impl Into<String>,
        input: Value,
        working_dir: impl Into<String>,
    ) -> Self {
        CallRequest {
            tool_call_id: tool_call_id.into(),
            name: name.into(),
            input,
            deadline_ms: None,
            working_dir: working_dir.into(),
            session_id: None,
            principal: None,
            context: RequestContext::default(),
            traceparent: None,
            tracestate: None,
        }
    }
}

/// The outcome class of a call.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The tool did what was asked.
    Success,
    /// The input was malformed; fix it and retry.
    ValidationError,
    /// A policy refused the call.
    PolicyDenied,
    /// A human must approve the call and nobody could be asked.
    ApprovalRequired,
    /// The deadline passed.
    Timeout,
    /// Cancelled by the caller.
    Cancelled,
    /// The tool failed.
    Error,
}

impl Status {
    /// The snake_case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Success => "success",
            Status::ValidationError => "validation_error",
            Status::PolicyDenied => "policy_denied",
            Status::ApprovalRequired => "approval_required",
            Status::Timeout => "timeout",
            Status::Cancelled => "cancelled",
            Status::Error => "error",
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Well-known error codes; tools may use their own as well.
pub mod codes {
    /// The tool panicked; the host kept running.
    pub const PANICKED: &str = "panicked";
    /// The input did not match the schema or the tool's own checks.
    pub const INVALID_INPUT: &str = "invalid_input";
    /// No tool by that name.
    pub const UNKNOWN_TOOL: &str = "unknown_tool";
    /// A policy denied the call.
    pub const DENIED: &str = "denied";
    /// Approval is needed.
    pub const APPROVAL_REQUIRED: &str = "approval_required";
    /// The deadline passed.
    pub const TIMEOUT: &str = "timeout";
    /// The call was cancelled.
    pub const CANCELLED: &str = "cancelled";
    /// Something was not found.
    pub const NOT_FOUND: &str = "not_found";
    /// An I/O operation failed.
    pub const IO: &str = "io_error";
    /// The tool answered something the host could not accept.
    pub const INVALID_OUTPUT: &str = "invalid_output";
    /// A bug or broken invariant.
    pub const INTERNAL: &str = "internal";
    /// The process running the tool (an isolated module's worker, a mounted
    /// MCP server) died during the call; it restarts on the next call.
    pub const MODULE_CRASHED: &str = "module_crashed";
    /// The module crashed too often; it answers this until the host restarts.
    pub const MODULE_FAILED: &str = "module_failed";
}

/// Why a call failed, in words a model can act on.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ErrorInfo {
    /// Machine-readable code (see [`codes`]).
    pub code: String,
    /// What went wrong and what to do about it.
    pub message: String,
    /// Whether the same call may succeed if retried.
    #[serde(default)]
    pub retryable: bool,
    /// Structured particulars (violations, candidates, sizes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl ErrorInfo {
    /// An error with a code and a message a model can act on; not
    /// retryable, no details (see [`ErrorInfo::retryable`],
    /// [`ErrorInfo::details`]).
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        ErrorInfo {
            code: code.into(),
            message: message.into(),
            retryable: false,
            details: None,
        }
    }

    /// Whether the same call may succeed later.
    pub fn retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }

    /// Structured particulars.
    pub fn details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }
}

/// How much of an output was cut.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Truncation {
    /// Bytes the output had.
    pub original_bytes: u64,
    /// Bytes that were kept (head plus tail).
    pub kept_bytes: u64,
}

impl Truncation {
    /// An output of `original_bytes` cut to `kept_bytes`.
    pub fn new(original_bytes: u64, kept_bytes: u64) -> Self {
        Truncation {
            original_bytes,
            kept_bytes,
        }
    }
}

/// Facts about the call beside its output.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Metadata {
    /// Wall time of the call in milliseconds.
    #[serde(default)]
    pub duration_ms: f64,
    /// Set when the output was cut to fit a limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<Truncation>,
    /// Tool- and host-specific facts (`trust`, `final_url`, `module`…).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One call's outcome, tool to host to caller.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ToolResult {
    /// The call's id.
    pub tool_call_id: String,
    /// The outcome class.
    pub status: Status,
    /// `status == success`, for callers that want a bool.
    #[serde(default)]
    pub success: bool,
    /// The output (on failure, whatever partial output exists).
    #[serde(default)]
    pub output: Value,
    /// Set on every failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorInfo>,
    /// Facts beside the output.
    #[serde(default)]
    pub metadata: Metadata,
    /// Content blocks beside `output` (an image a tool read, text split in
    /// parts). Empty for most tools: the MCP server then sends `output` as
    /// one text block, as before. It crosses the ABI inside the result's
    /// JSON, so adding it changed no ABI type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content: Vec<ContentBlock>,
    /// Structured data beside a text `output` (MCP `structuredContent`),
    /// valid under the spec's `output_schema`; set by tools whose output is
    /// an SDK [`Structured`](crate::sdk::structured::Structured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
}

/// One block of a result's content, mapped by the MCP server to MCP's own
/// content types. Tagged by `type` as MCP tags its blocks, so a block reads
/// the same in `--json` output and on the wire.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// Its MIME type (`image/png`, `image/jpeg`…).
        mime_type: String,
        /// The image bytes, standard base64 with padding.
        data: String,
    },
    /// Audio, base64-encoded (MCP `audio` content).
    Audio {
        /// Its MIME type (`audio/wav`, `audio/mpeg`…).
        mime_type: String,
        /// The audio bytes, standard base64 with padding.
        data: String,
    },
    /// A link to a resource the caller may read (MCP `resource_link`).
    ResourceLink {
        /// The resource's URI.
        uri: String,
        /// Its name.
        name: String,
        /// A title for people.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// What it is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Its MIME type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Its size in bytes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
    },
    /// A resource's contents sent inline (MCP embedded `resource`): its
    /// `text`, or its bytes as base64 `blob`.
    Resource {
        /// The resource's URI.
        uri: String,
        /// Its MIME type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Its text, for a text resource.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        /// Its bytes, standard base64, for a binary resource.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        blob: Option<String>,
    },
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }

    /// An image block from its MIME type and base64 data.
    pub fn image(mime_type: impl Into<String>, data: impl Into<String>) -> Self {
        ContentBlock::Image {
            mime_type: mime_type.into(),
            data: data.into(),
        }
    }
}

impl ToolResult {
    /// This result with content blocks beside its output.
    pub fn with_content(mut self, content: Vec<ContentBlock>) -> Self {
        self.content = content;
        self
    }

    /// A successful result.
    pub fn success(tool_call_id: impl Into<String>, output: Value) -> Self {
        ToolResult {
            tool_call_id: tool_call_id.into(),
            status: Status::Success,
            success: true,
            output,
            error: None,
            metadata: Metadata::default(),
            content: Vec::new(),
            structured: None,
        }
    }

    /// A failed result with the given status, code and message.
    pub fn failure(
        tool_call_id: impl Into<String>,
        status: Status,
        code: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        ToolResult {
            tool_call_id: tool_call_id.into(),
            status,
            success: status == Status::Success,
            output: Value::Null,
            error: Some(ErrorInfo {
                code: code.into(),
                message: message.into(),
                retryable: matches!(status, Status::Timeout),
                details: None,
            }),
            metadata: Metadata::default(),
            content: Vec::new(),
            structured: None,
        }
    }

    /// Attaches structured details to the error.
    pub fn with_details(mut self, details: Value) -> Self {
        if let Some(error) = self.error.as_mut() {
            error.details = Some(details);
        }
        self
    }

    /// The error message, or "" on success.
    pub fn message(&self) -> &str {
        self.error.as_ref().map(|e| e.message.as_str()).unwrap_or("")
    }
}

/// What a library says about itself before it is mounted.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Manifest {
    /// The module's name (`filesystem`, `acme_tools`).
    pub name: String,
    /// The module's own semver version.
    pub version: String,
    /// One line on what the module offers.
    #[serde(default)]
    pub description: String,
    /// The toolhost-core version the module was built against.
    pub toolhost_core: String,
}

/// What `mount` receives: the plan's config plus facts about the host.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct MountEnvelope {
    /// The `[tools.config]` table of the plan, as JSON, `${ENV}` expanded.
    #[serde(default)]
    pub config: Value,
    /// Facts about the host.
    #[serde(default)]
    pub host: HostInfo,
}

impl MountEnvelope {
    /// The envelope for `config` on `host`.
    pub fn new(config: Value, host: HostInfo) -> Self {
        MountEnvelope { config, host }
    }
}

/// Facts about the host a module may need while mounting.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct HostInfo {
    /// The plan's working folder (absolute).
    #[serde(default)]
    pub working_dir: String,
    /// The host's version.
    #[serde(default)]
    pub host_version: String,
    /// A folder the module may keep state and scratch files in.
    #[serde(default)]
    pub state_dir: String,
    /// The plan file the host mounted the module from (absolute; empty for
    /// the built-in plan): a module that runs commands hides it from them.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub plan_file: String,
    /// The control plane: files and folders that decide what the agent may
    /// do on its next run (plans, hooks, modules, the state folder, the
    /// audit log). A module that changes files refuses to change these; see
    /// [`crate::protected`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protected_paths: Vec<ProtectedPath>,
}

/// One entry of [`HostInfo::protected_paths`].
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct ProtectedPath {
    /// Absolute path (it may not exist yet: a plan name discovery would read).
    pub path: String,
    /// A folder: everything below it is protected too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub folder: bool,
    /// Secret (the state folder, token files): not to be read or listed
    /// either, only to be left alone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub secret: bool,
}

impl HostInfo {
    /// Facts about a host of `host_version` working in `working_dir`, with
    /// `state_dir` for the module.
    pub fn new(
        working_dir: impl Into<String>,
        host_version: impl Into<String>,
        state_dir: impl Into<String>,
    ) -> Self {
        HostInfo {
            working_dir: working_dir.into(),
            host_version: host_version.into(),
            state_dir: state_dir.into(),
            plan_file: String::new(),
            protected_paths: Vec::new(),
        }
    }

    /// The same facts, with the control-plane set.
    pub fn with_protected_paths(mut self, protected: Vec<ProtectedPath>) -> Self {
        self.protected_paths = protected;
        self
    }

    /// The same facts, naming the plan file.
    pub fn with_plan_file(mut self, plan_file: impl Into<String>) -> Self {
        self.plan_file = plan_file.into();
        self
    }
}
