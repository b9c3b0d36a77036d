//! The execution pipeline every call goes through, in the order of
//! DESIGN.md:
//!
//! 1. [`resolve`] a name or alias to a tool for the calling principal, and
//!    check its grant ([`crate::governance::grants`]): a tool its grants do
//!    not cover is refused exactly like a name that does not exist; then
//!    the selected toolsets and `toolhost.lock` ([`crate::surface`]) may
//!    refuse it (`not_in_toolset`, `tool_changed`); the host's own tools
//!    (`tool_search`, `read_output`) skip these, showing each principal
//!    only what it may see;
//!    then [`rate_limit`] takes a token from each `[[limits]]` bucket that
//!    applies, or refuses the call before any work is done for it;
//! 2. [`validate`] the input against its schema;
//! 3. [`policy`] decides allow / ask / deny (and approval), after the
//!    tool's deprecation ([`crate::governance::deprecation`]) is checked;
//! 4. [`hooks`] `tool:pre` may deny or rewrite the input (validated again);
//! 5. [`schedule`] orders a batch into conflict-free groups;
//! 6. [`execute`] on a blocking thread under deadline and cancel token (one
//!    engine, whether the thread is lent or the caller's own: [`inline`]);
//! 7. [`postprocess`] checks `output_schema`, redacts secrets
//!    ([`crate::governance::redact`]) and bounds the output, keeping an
//!    over-limit one whole for reading back ([`crate::surface::outputs`]);
//! 8. [`record`] events, a span and one [`audit`] record per call.
//!
//! A stage that refuses a call returns the finished result, which skips the
//! rest (`?` on `Result<_, ToolResult>`). [`idempotency`] sits between
//! policy and execute: a replay is still subject to the plan.

// The audit log sits below the pipeline (the host opens it), and its sink
// below the state stores (PostgreSQL is one); their old paths stay.
pub use crate::audit;
pub use crate::audit::{file as audit_file, verify as audit_verify};
pub use crate::state::audit_sink;
pub mod approvals;
mod batch;
pub use crate::deadline;
pub mod execute;
pub mod handoff;
pub mod hooks;
pub mod idempotency;
pub mod in_flight;
mod inline;
mod lent_state;
pub mod policy;
pub mod postprocess;
pub mod rate_limit;
pub mod record;
pub mod resolve;
pub mod schedule;
pub mod validate;
pub mod validate_alias;
pub mod watchdog;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};
use toolhost_core::wire::codes;
use toolhost_core::{CallRequest, RequestContext, Status, ToolResult};
use tracing::Instrument;

pub use batch::BatchItem;
pub use inline::Answer;
pub use policy::PreApproved;

use crate::cancel::CancelToken;
use crate::context::ProgressSink;
use crate::host::Host;
use crate::tool::MountedTool;
use audit::AuditLog;
use record::{Pending, Trace};

/// One call as a caller hands it in.
#[derive(Default)]
pub struct Call {
    /// Tool name or alias.
    pub name: String,
    /// The input object.
    pub input: Value,
    /// The caller's id for the call; one is made up when absent.
    pub tool_call_id: Option<String>,
    /// Runs a side-effecting call at most once per key (see [`idempotency`]).
    pub idempotency_key: Option<String>,
    /// Cancels this call alone (MCP `notifications/cancelled`).
    pub cancel: Option<CancelToken>,
    /// Where progress reports go.
    pub progress: Option<ProgressSink>,
    /// Who to ask when policy says `ask` (a terminal prompt, MCP
    /// elicitation). Without one, such calls answer `approval_required`.
    pub approver: Option<Approver>,
    /// Who answers a backend's request for input during the call (an MCP
    /// client that declared elicitation); without one, such requests are
    /// declined.
    pub asker: Option<crate::ask::Asker>,
    /// The caller's session (an MCP HTTP session); without one, the call
    /// belongs to this process's session ([`crate::session::process`]).
    pub session_id: Option<String>,
    /// Who the call runs for (an HTTP token's principal, `--as`); without
    /// one, `[host] principal`.
    pub principal: Option<String>,
    /// The caller's run/thread/tenant/agent/correlation ids.
    pub context: RequestContext,
    /// The toolset the caller selected (HTTP `?toolset=`), on top of the
    /// server's (see [`crate::surface::toolsets`]).
    pub toolset: Option<String>,
    /// The principal that owns what the call's module keeps past the call,
    /// for a call without a session (a 2026-07-28 HTTP request); `None`:
    /// the session owns it (see `lent_state`).
    pub state_owner: Option<String>,
    /// The caller's W3C trace context (MCP `_meta.traceparent`): the call's
    /// span is its child, and mounted servers continue the trace.
    pub trace_parent: Option<toolhost_telemetry::trace::TraceParent>,
    /// Whether, with no `approver`, the call may wait for an operator's
    /// answer on the operator page (when served) instead of answering
    /// `approval_required` at once: true for an MCP client that cannot be
    /// asked, false where `approval_required` is itself the question (an
    /// input-required client) or nobody serves the page (CLI).
    pub operator_may_answer: bool,
}

/// What an approver is asked.
#[derive(Debug, Clone)]
pub struct ApprovalRequest {
    /// The tool's public name.
    pub tool: String,
    /// Why approval is needed (the policy rule that said `ask`).
    pub reason: String,
    /// The (validated) input the tool would run with.
    pub input: Value,
}

/// Asks a human; resolves to `true` when the call is approved.
pub type Approver = Arc<dyn Fn(ApprovalRequest) -> Pin<Box<dyn Future<Output = bool> + Send>> + Send + Sync>;

/// A call that passed stages 1–4 and waits to execute.
pub(crate) struct Prepared {
    id: String,
    tool: Arc<MountedTool>,
    input: Value,
    cancel: CancelToken,
    progress: Option<ProgressSink>,
    asker: Option<crate::ask::Asker>,
    session_id: Option<String>,
    principal: String,
    context: RequestContext,
    toolset: Option<String>,
    state_owner: Option<String>,
    /// The call holds an idempotency key's lease, which its run must not
    /// outlive (see [`Pipeline::bounds_for`]).
    leased: bool,
    /// The trace context the call passes on (see [`record::Trace::outgoing`]).
    trace_parent: Option<toolhost_telemetry::trace::TraceParent>,
}

/// A prepared call as stage 6 takes it.
struct Launch {
    stage6: execute::Stage6,
    /// The input again, for the post hooks (`Null` when there are none).
    input: Value,
}

/// Runs calls against a loaded host.
pub struct Pipeline {
    host: Arc<Host>,
    next_id: AtomicU64,
    pre_approved: PreApproved,
    counts: policy::CallCounts,
    run_counts: crate::governance::grants::RunCounts,
    /// `[[limits]]` buckets of this host.
    rate_limits: rate_limit::RateLimits,
    /// The output guardrail, compiled at the first call that needs it:
    /// compiling its one regex over every secret and format was about 5%
    /// of the CPU `toolhost serve` spent before it could answer the
    /// client's `initialize` (~0.3 ms; perf profile of 10 starts).
    redactor: OnceLock<Option<crate::governance::redact::Redactor>>,
    hooks: hooks::Hooks,
    audit: Option<Arc<AuditLog>>,
    /// The idempotency store once opened (a failed open is tried again at
    /// the next keyed call).
    store: Mutex<Option<Arc<crate::state::Store>>>,
    /// Lends calls without a session the fleet's state store.
    lender: lent_state::Lender,
    /// The plan's working folder as every CallRequest carries it.
    working_dir: String,
    /// Stage 6: runs tools under their deadline, cancel and grace.
    engine: execute::Engine,
    /// Toolsets, discovery, pins, kept outputs (see [`crate::surface`]).
    surface: crate::surface::Surface,
    /// The toolset every call and listing is limited to (`serve --toolset`).
    toolset: Option<String>,
    /// Approvals waiting for the operator page.
    approvals: Arc<approvals::Approvals>,
    /// The calls running now (the operator page lists them).
    in_flight: Arc<in_flight::InFlight>,
}

/// Starts span export for this process when the plan or the environment
/// names an OTLP collector (the first pipeline's plan decides; see
/// [`toolhost_telemetry::trace::install`]). A collector that cannot be set
/// up is logged, and calls run without spans.
fn install_telemetry(section: &crate::plan::telemetry::TelemetrySection) {
    let config = toolhost_telemetry::trace::Config {
        otlp_endpoint: section.otlp_endpoint.as_ref().map(|e| e.0.clone()),
        service_name: section.service_name.clone(),
        max_queued_spans: section.max_queued_spans,
        export_timeout: Duration::from_millis(section.export_timeout_ms),
        export_interval: Duration::from_millis(section.export_interval_ms),
    };
    if let Err(e) = toolhost_telemetry::trace::install(&config) {
        tracing::error!("{e}; calls run without spans");
    }
}

impl Pipeline {
    /// A pipeline over `host`; `shutdown` cancels every call in flight. The
    /// audit log is the host's (opened when it loaded); the redaction
    /// guardrail reads the environment when it is first needed.
    pub fn new(host: Arc<Host>, shutdown: CancelToken) -> Self {
        let audit = host.audit.clone();
        let working_dir = host.plan.working_dir.to_string_lossy().into_owned();
        let pipeline = Pipeline {
            surface: crate::surface::Surface::new(&host.plan),
            toolset: None,
            hooks: hooks::Hooks::new(&host.plan),
            host,
            next_id: AtomicU64::new(1),
            pre_approved: PreApproved::default(),
            counts: policy::CallCounts::default(),
            run_counts: Default::default(),
            rate_limits: Default::default(),
            redactor: OnceLock::new(),
            audit,
            store: Mutex::new(None),
            lender: Default::default(),
            working_dir,
            engine: execute::Engine::new(shutdown),
            approvals: Default::default(),
            in_flight: Default::default(),
        };
        install_telemetry(&pipeline.host.plan.host.telemetry);
        // A fleet store starts connecting (and migrating) at mount.
        if pipeline.host.plan.host.state_url.is_some() {
            if let Err(e) = pipeline.store() {
                tracing::error!("cannot open the state store: {e}");
            }
        }
        pipeline
    }

    /// The output guardrail (`None` when `[host.redact] enabled = false`),
    /// compiled on first use.
    fn redactor(&self) -> Option<&crate::governance::redact::Redactor> {
        self.redactor
            .get_or_init(|| {
                self.host.plan.host.redact.redactor().unwrap_or_else(|e| {
                    // The plan's patterns were checked when it was parsed;
                    // this is a pattern too large to compile.
                    tracing::error!("{e}; only the built-in formats are redacted");
                    crate::governance::redact::Redactor::new(&Default::default(), std::env::vars())
                        .ok()
                        .flatten()
                })
            })
            .as_ref()
    }

    /// Approvals given up front (`--yes`, `--approve TOOL`).
    pub fn with_pre_approved(mut self, pre: PreApproved) -> Self {
        self.pre_approved = pre;
        self
    }

    /// Limits every call and listing to the toolset `name` (`serve
    /// --toolset`), or answers why it cannot.
    pub fn with_toolset(mut self, name: Option<String>) -> Result<Self, ToolResult> {
        if let Some(name) = &name {
            crate::surface::toolsets::find(&self.host.plan.toolsets, name, "")?;
        }
        self.toolset = name;
        Ok(self)
    }

    /// The MCP `tools/list` for `principal` (default: `[host] principal`)
    /// through the client's `toolset`, if it selected one: see
    /// [`crate::surface::Surface::listed`].
    pub fn list_tools(
        &self,
        principal: Option<&str>,
        toolset: Option<&str>,
    ) -> Result<Vec<rmcp::model::Tool>, ToolResult> {
        let plan = &self.host.plan;
        let principal = principal.unwrap_or(&plan.governance.host_principal);
        let viewer =
            crate::surface::Surface::viewer(plan, principal, [self.toolset.as_deref(), toolset], "")?;
        Ok(self.surface.listed(&self.host, &viewer))
    }

    /// The surface state (host tools, search index, kept outputs).
    pub fn surface(&self) -> &crate::surface::Surface {
        &self.surface
    }

    /// Whether `principal` (default: `[host] principal`) may see the tool
    /// named `name` in a listing: no grants in the plan, or one of its
    /// grants covers the tool.
    pub fn visible(&self, principal: Option<&str>, name: &str) -> bool {
        let governance = &self.host.plan.governance;
        let principal = principal.unwrap_or(&governance.host_principal);
        // `resolve`, not `tool`: an alias profile listed under its own name
        // is hidden with its tool.
        self.host.resolve(name).is_none_or(|resolved| {
            crate::governance::grants::visible(&governance.grants, principal, &resolved.tool)
        })
    }

    /// The host the pipeline runs against.
    pub fn host(&self) -> &Arc<Host> {
        &self.host
    }

    /// Approvals waiting for the operator page.
    pub fn approvals(&self) -> &approvals::Approvals {
        &self.approvals
    }

    /// The calls running now.
    pub fn in_flight(&self) -> Vec<in_flight::Running> {
        self.in_flight.list()
    }

    fn new_id(&self) -> String {
        format!("call-{}", self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Runs one call through every stage and returns its result.
    pub async fn call(&self, call: Call) -> ToolResult {
        let mut pending = self.begin(&call);
        let id = pending.id.clone();
        let result = async {
            match self.prepare(&id, call, &mut pending.trace).await {
                Ok(prepared) => self.run(prepared, &mut pending.trace).await,
                Err(refusal) => refusal,
            }
        }
        .instrument(pending.span.clone())
        .await;
        self.finish(pending, result)
    }

    /// Starts recording a call (its id, span and trace); the input is kept
    /// for the record only when an audit log or an observer will read it.
    fn begin(&self, call: &Call) -> Pending {
        let id = call.tool_call_id.clone().unwrap_or_else(|| self.new_id());
        let keep_input = self.audit.is_some() || self.host.events.is_observed();
        let mut pending = Pending::start(id, call, keep_input);
        pending.trace.principal = call
            .principal
            .clone()
            .unwrap_or_else(|| self.host.plan.governance.host_principal.clone());
        pending.trace.policy_version = self.host.plan.policy.version.clone();
        // Only the operator page reads the list: without it, no call pays
        // for being listed.
        pending.listed = self.host.plan.host.ui.enabled().then(|| {
            self.in_flight
                .enter(&pending.id, &call.name, &pending.trace.principal)
        });
        pending
    }

    /// Stage 8 for one finished call: events, log line, audit record.
    fn finish(&self, pending: Pending, result: ToolResult) -> ToolResult {
        record::finish(&self.host.events, self.audit.as_deref(), pending, result)
    }

    /// Stages 1–4 (and the idempotency lookup). A refusal leaves the host
    /// through the same output guardrail as a tool's result: a validation
    /// error quotes the caller's input, which may hold a secret.
    async fn prepare(&self, id: &str, call: Call, trace: &mut Trace) -> Result<Prepared, ToolResult> {
        let prepared = self.stages_1_to_4(id, call, trace).await;
        prepared.map_err(|mut refusal| {
            // A replay is a stored result, redacted when it was produced.
            if let Some(redactor) = self.redactor().filter(|_| !trace.replayed) {
                toolhost_telemetry::metrics::redacted(redactor.redact_result(&mut refusal));
            }
            refusal
        })
    }

    async fn stages_1_to_4(
        &self,
        id: &str,
        mut call: Call,
        trace: &mut Trace,
    ) -> Result<Prepared, ToolResult> {
        // 1. resolve the name for this principal, then its grant: a tool
        // the principal's grants do not cover is refused like a name that
        // does not exist, before its schema can show in a validation error.
        // (The request ids are checked first: the grant counts per run.)
        trace.decision = "invalid";
        crate::governance::request::check(&call.context).map_err(|e| {
            ToolResult::failure(id, Status::ValidationError, codes::INVALID_INPUT, e.to_string())
        })?;
        let grants = &self.host.plan.governance.grants;
        // The host's own tools (tool_search, read_output) answer every
        // principal with only what that principal may see.
        let host_tool = self.surface.host_tool(&self.host, &call.name);
        let resolved = match host_tool {
            Some(tool) => crate::registry::Resolved {
                tool,
                profile: None,
                alternative: false,
            },
            None => resolve::for_principal(&self.host, grants, &trace.principal, id, &call.name)
                .inspect_err(|r| {
                    let code = r.error.as_ref().map(|e| e.code.as_str());
                    trace.decision = if code == Some(crate::governance::grants::GRANT_MISSING) {
                        "grant_denied"
                    } else {
                        "unknown"
                    };
                })?,
        };
        let tool = resolved.tool.clone();
        trace.tool = Some(tool.clone());
        trace.stage("resolve");
        if !self.surface.is_host_tool(&tool) {
            // Toolsets and pins (see crate::surface).
            trace.decision = "not_offered";
            let viewer = crate::surface::Surface::viewer(
                &self.host.plan,
                &trace.principal,
                [self.toolset.as_deref(), call.toolset.as_deref()],
                id,
            )?;
            crate::surface::Surface::gate(&viewer, &tool, &call.name, id)?;
            trace.decision = "grant_denied";
            trace.grant = crate::governance::grants::check(
                grants,
                &self.run_counts,
                &trace.principal,
                &call.context,
                &tool,
                id,
            )?;
        }
        // Rate limits: after authorization, before any work for the call.
        trace.decision = "rate_limited";
        rate_limit::check(
            &self.rate_limits,
            &self.host.plan.limits,
            &trace.principal,
            &tool,
            id,
        )?;
        // 2. validate (an alias profile's input is mapped to the canonical one)
        trace.decision = "invalid";
        call.input = validate_alias::call(&resolved, &call.name, id, std::mem::take(&mut call.input))?;
        if trace.input_for_key.is_some() {
            trace.input_for_key = Some(call.input.clone());
        }
        trace.stage("validate");
        // 3. deprecation, then the policy rules (and approval)
        trace.decision = "deprecated";
        trace.deprecation = crate::governance::deprecation::check(&tool, id)?;
        trace.decision = "deny";
        let asking = policy::Asking {
            pre: &self.pre_approved,
            approver: call.approver.as_ref(),
            page: &self.approvals,
            operator_may_answer: call.operator_may_answer,
            principal: &trace.principal,
            cancel: call.cancel.as_ref(),
        };
        let verdict = policy::check(&self.host.plan, &self.counts, asking, &tool, id, &call.input)
            .await
            .inspect_err(|r| {
                if r.status == Status::ApprovalRequired {
                    trace.decision = "approval_required";
                }
            })?;
        trace.decision = verdict.as_str();
        if let policy::Verdict::Approved(by, approver) = verdict {
            trace.approved_by = Some(by);
            trace.approver = approver;
        }
        trace.stage("policy");
        // Idempotency: claim the key, or wait for and replay its result.
        match self.claim(&tool, id, &call, &trace.principal).await? {
            Some(idempotency::Begun::Replay(replayed)) => {
                trace.replayed = true;
                return Err(*replayed);
            }
            Some(idempotency::Begun::Run(claimed)) => trace.claim = Some(claimed),
            None => {}
        }
        // 4. hooks (tool:pre); a rewritten input is validated again.
        let (input, modified) = self.hooks.pre(&tool, id, call.input).await.inspect_err(|_| {
            trace.decision = "hook_denied";
        })?;
        if modified {
            validate::input(&tool, id, &input).map_err(|mut r| {
                if let Some(e) = r.error.as_mut() {
                    e.message = format!(
                        "a tool:pre hook rewrote the input into an invalid one: {}",
                        e.message
                    );
                }
                trace.decision = "hook_invalid";
                r
            })?;
        }
        trace.stage("hooks");
        // Write-before-execute: a side-effecting call runs only once its
        // intent is on record.
        if !tool.spec.annotations.read_only {
            if let Some(audit) = &self.audit {
                record::intent(audit, &tool, id, &input, trace).map_err(|e| {
                    trace.decision = "audit_failed";
                    let mut refused = ToolResult::failure(
                        id,
                        Status::Error,
                        record::AUDIT_UNAVAILABLE,
                        format!(
                            "'{}' was not run: its audit record could not be written ({e}); \
                             side-effecting calls wait until the audit log can be written",
                            tool.name()
                        ),
                    )
                    .with_details(json!({ "retryable_after": "the audit log is writable again" }));
                    if let Some(err) = refused.error.as_mut() {
                        err.retryable = true;
                    }
                    refused
                })?;
            }
        }
        Ok(Prepared {
            id: id.to_string(),
            tool,
            input,
            cancel: call.cancel.unwrap_or_default(),
            progress: match self.redactor() {
                Some(redactor) => redactor.progress_sink(call.progress),
                None => call.progress,
            },
            asker: call.asker,
            session_id: call.session_id,
            principal: trace.principal.clone(),
            context: call.context,
            toolset: call.toolset,
            state_owner: call.state_owner,
            leased: trace.claim.is_some(),
            trace_parent: trace.outgoing(call.trace_parent),
        })
    }

    /// Stages 6–7 and the post hooks; recording is the caller's.
    async fn run(&self, prepared: Prepared, trace: &mut Trace) -> ToolResult {
        if let Some(result) = self.run_host_tool(&prepared) {
            trace.stage("execute");
            return self.after(&prepared.tool, &prepared.input, trace, result).await;
        }
        let Launch { stage6, input } = self.launch(prepared);
        let tool = stage6.tool.clone();
        // 6. execute
        let result = self.engine.run(stage6).await;
        trace.stage("execute");
        self.after(&tool, &input, trace, result).await
    }

    /// Stage 6 for the host's own tools, which answer from the host's
    /// state; `None` for every other tool.
    fn run_host_tool(&self, prepared: &Prepared) -> Option<ToolResult> {
        if !self.surface.is_host_tool(&prepared.tool) {
            return None;
        }
        record::pre(
            &self.host.events,
            &prepared.tool,
            &prepared.id,
            &prepared.input,
            &prepared.principal,
            &prepared.context,
        );
        let selected = [self.toolset.as_deref(), prepared.toolset.as_deref()];
        let viewer = match crate::surface::Surface::viewer(
            &self.host.plan,
            &prepared.principal,
            selected,
            &prepared.id,
        ) {
            Ok(viewer) => viewer,
            Err(refused) => return Some(refused),
        };
        self.surface
            .run(&self.host, &viewer, &prepared.tool, &prepared.id, &prepared.input)
    }

    /// What stage 6 needs, from a prepared call; emits `tool:pre`.
    fn launch(&self, prepared: Prepared) -> Launch {
        let Prepared {
            id,
            tool,
            mut input,
            cancel,
            progress,
            asker,
            session_id,
            principal,
            context,
            toolset: _,
            state_owner,
            leased,
            trace_parent,
        } = prepared;
        record::pre(&self.host.events, &tool, &id, &input, &principal, &context);
        let limits = execute::Limits {
            bounds: self.bounds_for(&tool, leased),
            grace: Duration::from_millis(self.host.plan.host.cancel_grace_ms),
        };
        // The input is kept past execution only for the post hooks.
        let post_hooks = self.hooks.any(crate::plan::HookEvent::Post);
        let call_input = if post_hooks {
            input.clone()
        } else {
            std::mem::take(&mut input)
        };
        let mut request =
            CallRequest::new(id, tool.module_name.clone(), call_input, self.working_dir.clone());
        request.deadline_ms = limits.bounds.initial().map(|d| d.as_millis() as u64);
        request.session_id = Some(session_id.unwrap_or_else(|| crate::session::process().to_string()));
        request.principal = Some(principal);
        request.context = context;
        let state = self.lender.lend(
            self.host.plan.host.state_url.as_deref(),
            state_owner.as_deref(),
            &tool.module.name,
        );
        if let Some(parent) = trace_parent {
            request.traceparent = Some(parent.traceparent);
            request.tracestate = parent.tracestate;
        }
        Launch {
            stage6: execute::Stage6 {
                tool,
                request,
                limits,
                cancel,
                progress,
                ask: asker,
                state,
            },
            input,
        }
    }

    /// Stage 7 and the post hooks, for the tool's (or the host's) result;
    /// remembers it under its idempotency key.
    async fn after(
        &self,
        tool: &MountedTool,
        input: &Value,
        trace: &mut Trace,
        result: ToolResult,
    ) -> ToolResult {
        // 7. post-process: schema, secrets (before truncation, so a secret
        // across the cut is still seen whole), size
        let mut result = postprocess::check_output(tool, result);
        if let Some(redactor) = self.redactor() {
            toolhost_telemetry::metrics::redacted(redactor.redact_result(&mut result));
        }
        if let Some(notice) = &trace.deprecation {
            result.metadata.extra.insert("deprecated".into(), notice.clone());
        }
        let max = self.host.plan.host.max_output_bytes as usize;
        let result = postprocess::bound_keeping(result, max, &self.surface.outputs, &trace.principal);
        let result = postprocess::bound_content(result, max);
        let result = if self.hooks.any(crate::plan::HookEvent::Post) {
            self.hooks.post(tool, input, result).await
        } else {
            result
        };
        if let Some(claimed) = trace.claim.as_ref() {
            claimed.complete(&result).await;
        }
        trace.stage("post_process");
        result
    }

    /// The time bounds of a tool's calls (see [`deadline`]): the timeout
    /// is the plan's rule, else what the tool asks for in its spec, else
    /// the host default; the plan's `max_duration_secs` makes it an
    /// inactivity timeout under that hard cap. A call holding an
    /// idempotency lease (`leased`) must end within it: when nothing else
    /// bounds its whole run, its timeout (or the host default) does.
    fn bounds_for(&self, tool: &MountedTool, leased: bool) -> deadline::Bounds {
        let plan = &self.host.plan;
        let rule = |pick: fn(&crate::plan::ToolRule) -> Option<crate::plan::schema::SecsOrNone>| {
            tool.names().find_map(|n| plan.policy.tools.get(n).and_then(pick))
        };
        let default = Duration::from_secs(plan.host.default_timeout_secs);
        let timeout = match rule(|r| r.timeout_secs) {
            Some(bound) => bound.duration(),
            None => Some(
                tool.spec
                    .execution
                    .timeout_secs
                    .map_or(default, Duration::from_secs),
            ),
        };
        let max_duration = rule(|r| r.max_duration_secs);
        let mut bounds = deadline::Bounds {
            timeout,
            extends: max_duration.is_some(),
            hard_cap: max_duration.and_then(|m| m.duration()),
        };
        if leased && bounds.total().is_none() {
            bounds.hard_cap = Some(timeout.unwrap_or(default));
        }
        bounds
    }

    fn store(&self) -> Result<Arc<crate::state::Store>, crate::state::StateError> {
        let mut slot = self.store.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(store) = slot.as_ref() {
            return Ok(store.clone());
        }
        let store = crate::state::Store::open(&self.host.plan)?;
        *slot = Some(store.clone());
        Ok(store)
    }

    /// Claims the call's idempotency key (see [`idempotency`]); `None` when
    /// the call has no key or its tool is read-only (keys mean nothing there).
    async fn claim(
        &self,
        tool: &MountedTool,
        id: &str,
        call: &Call,
        principal: &str,
    ) -> Result<Option<idempotency::Begun>, ToolResult> {
        let Some(key) = call.idempotency_key.as_deref() else {
            return Ok(None);
        };
        if tool.spec.annotations.read_only {
            return Ok(None);
        }
        idempotency::check_key(id, key)?;
        let store = self.store().map_err(|e| {
            let mut refused = ToolResult::failure(
                id,
                Status::Error,
                idempotency::STATE_UNAVAILABLE,
                format!("cannot open the state store, so the keyed call did not run: {e}"),
            );
            if let Some(err) = refused.error.as_mut() {
                err.retryable = true;
            }
            refused
        })?;
        let host = &self.host.plan.host;
        let timeout = self
            .bounds_for(tool, true)
            .total()
            .unwrap_or(Duration::from_secs(host.default_timeout_secs));
        let keyed = idempotency::KeyedCall {
            id,
            key,
            principal,
            tool: tool.name(),
            input: &call.input,
            timeout,
            lease: idempotency::lease_for(timeout, Duration::from_millis(host.cancel_grace_ms)),
            ttl: crate::state::config::ttl(host).unwrap_or(crate::state::config::DEFAULT_TTL),
            cancel: call.cancel.as_ref(),
            shutdown: self.engine.shutdown(),
        };
        idempotency::begin(&store, keyed).await.map(Some)
    }
}
