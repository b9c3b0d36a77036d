//! The execution pipeline every call goes through, in the order of
//! DESIGN.md:
//!
//! 1. [`resolve`] a name or alias to a tool;
//! 2. [`validate`] the input against its schema;
//! 3. [`policy`] decides allow / ask / deny (and approval);
//! 4. [`hooks`] `tool:pre` may deny or rewrite the input (validated again);
//! 5. [`schedule`] orders a batch into conflict-free groups;
//! 6. [`execute`] on a blocking thread under deadline and cancel token (one
//!    engine, whether the thread is lent or the caller's own: [`inline`]);
//! 7. [`postprocess`] bounds the output and checks `output_schema`;
//! 8. [`record`] events, a span and one [`audit`] record per call.
//!
//! A stage that refuses a call returns the finished result, which skips the
//! rest (`?` on `Result<_, ToolResult>`). [`idempotency`] sits between
//! policy and execute: a replay is still subject to the plan.

pub mod audit;
pub mod audit_sink;
mod batch;
pub mod execute;
pub mod handoff;
pub mod hooks;
pub mod idempotency;
mod inline;
pub mod policy;
pub mod postprocess;
pub mod record;
pub mod resolve;
pub mod schedule;
pub mod validate;
pub mod watchdog;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};
use toolhost_core::wire::codes;
use toolhost_core::{CallRequest, Status, ToolResult};
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
    /// The caller's session (an MCP HTTP session); without one, the call
    /// belongs to this process's session ([`crate::session::process`]).
    pub session_id: Option<String>,
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
    session_id: Option<String>,
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
    hooks: hooks::Hooks,
    audit: Option<AuditLog>,
    store: OnceLock<Result<idempotency::Store, String>>,
    /// The plan's working folder as every CallRequest carries it.
    working_dir: String,
    /// Stage 6: runs tools under their deadline, cancel and grace.
    engine: execute::Engine,
}

impl Pipeline {
    /// A pipeline over `host`; `shutdown` cancels every call in flight. An
    /// audit log that cannot be opened is reported and skipped.
    pub fn new(host: Arc<Host>, shutdown: CancelToken) -> Self {
        let audit = host.plan.host.audit_log.as_ref().and_then(|path| {
            AuditLog::open(std::path::Path::new(path), host.plan.host.audit_inputs)
                .map_err(|e| tracing::error!("cannot open the audit log {path}: {e}"))
                .ok()
        });
        let working_dir = host.plan.working_dir.to_string_lossy().into_owned();
        Pipeline {
            hooks: hooks::Hooks::new(&host.plan),
            host,
            next_id: AtomicU64::new(1),
            pre_approved: PreApproved::default(),
            counts: policy::CallCounts::default(),
            audit,
            store: OnceLock::new(),
            working_dir,
            engine: execute::Engine::new(shutdown),
        }
    }

    /// Approvals given up front (`--yes`, `--approve TOOL`).
    pub fn with_pre_approved(mut self, pre: PreApproved) -> Self {
        self.pre_approved = pre;
        self
    }

    /// The host the pipeline runs against.
    pub fn host(&self) -> &Arc<Host> {
        &self.host
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
        Pending::start(id, call, keep_input)
    }

    /// Stage 8 for one finished call: events, log line, audit record.
    fn finish(&self, pending: Pending, result: ToolResult) -> ToolResult {
        record::finish(&self.host.events, self.audit.as_ref(), pending, result)
    }

    /// Stages 1–4 (and the idempotency lookup).
    async fn prepare(&self, id: &str, call: Call, trace: &mut Trace) -> Result<Prepared, ToolResult> {
        // 1. resolve
        let tool = resolve::tool(&self.host, id, &call.name)?;
        trace.tool = Some(tool.clone());
        // 2. validate
        trace.decision = "invalid";
        validate::input(&tool, id, &call.input)?;
        // 3. policy (and approval)
        trace.decision = "deny";
        let verdict = policy::check(
            &self.host.plan,
            &self.counts,
            &self.pre_approved,
            call.approver.as_ref(),
            &tool,
            id,
            &call.input,
        )
        .await
        .inspect_err(|r| {
            if r.status == Status::ApprovalRequired {
                trace.decision = "approval_required";
            }
        })?;
        trace.decision = verdict.as_str();
        if let policy::Verdict::Approved(by) = verdict {
            trace.approved_by = Some(by);
        }
        // Idempotency: replay a recorded result instead of acting twice.
        if let Some(replayed) = self.replay(&tool, id, &call)? {
            trace.replayed = true;
            return Err(replayed);
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
        Ok(Prepared {
            id: id.to_string(),
            tool,
            input,
            cancel: call.cancel.unwrap_or_default(),
            progress: call.progress,
            session_id: call.session_id,
        })
    }

    /// Stages 6–7 and the post hooks; recording is the caller's.
    async fn run(&self, prepared: Prepared, trace: &mut Trace) -> ToolResult {
        let Launch { stage6, input } = self.launch(prepared);
        let tool = stage6.tool.clone();
        // 6. execute
        let result = self.engine.run(stage6).await;
        self.after(&tool, &input, trace, result).await
    }

    /// What stage 6 needs, from a prepared call; emits `tool:pre`.
    fn launch(&self, prepared: Prepared) -> Launch {
        let Prepared {
            id,
            tool,
            mut input,
            cancel,
            progress,
            session_id,
        } = prepared;
        record::pre(&self.host.events, &tool, &id, &input);
        let limits = execute::Limits {
            timeout: self.timeout_for(&tool),
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
        request.deadline_ms = Some(limits.timeout.as_millis() as u64);
        request.session_id = Some(session_id.unwrap_or_else(|| crate::session::process().to_string()));
        Launch {
            stage6: execute::Stage6 {
                tool,
                request,
                limits,
                cancel,
                progress,
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
        trace: &Trace,
        result: ToolResult,
    ) -> ToolResult {
        // 7. post-process
        let result = postprocess::check_output(tool, result);
        let result = postprocess::bound(result, self.host.plan.host.max_output_bytes as usize);
        let result = if self.hooks.any(crate::plan::HookEvent::Post) {
            self.hooks.post(tool, input, result).await
        } else {
            result
        };
        self.remember(tool, trace, &result);
        result
    }

    /// The deadline for a tool: the plan's rule, else what the tool asks
    /// for in its spec, else the host default.
    fn timeout_for(&self, tool: &MountedTool) -> Duration {
        let plan = &self.host.plan;
        let secs = tool
            .names()
            .find_map(|n| plan.policy.tools.get(n).and_then(|r| r.timeout_secs))
            .or(tool.spec.execution.timeout_secs)
            .unwrap_or(plan.host.default_timeout_secs);
        Duration::from_secs(secs)
    }

    fn store(&self) -> Result<&idempotency::Store, String> {
        self.store
            .get_or_init(|| idempotency::Store::open(&self.host.plan.state_dir()))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The recorded result for the call's key, or an error when the key was
    /// used with another tool or input. Read-only tools ignore keys.
    fn replay(&self, tool: &MountedTool, id: &str, call: &Call) -> Result<Option<ToolResult>, ToolResult> {
        let Some(key) = call.idempotency_key.as_deref() else {
            return Ok(None);
        };
        if tool.spec.annotations.read_only {
            return Ok(None);
        }
        let store = self
            .store()
            .map_err(|e| ToolResult::failure(id, Status::Error, codes::INTERNAL, e))?;
        let recorded = store
            .get(key)
            .map_err(|e| ToolResult::failure(id, Status::Error, codes::INTERNAL, e))?;
        let Some(recorded) = recorded else { return Ok(None) };
        let (digest, _) = audit::input_digest(&call.input);
        if recorded.tool != tool.name() || recorded.input_sha256 != digest {
            return Err(ToolResult::failure(
                id,
                Status::ValidationError,
                "idempotency_conflict",
                format!(
                    "idempotency key '{key}' was already used for a different call ({}); use a new key for a new call",
                    if recorded.tool != tool.name() { format!("tool '{}'", recorded.tool) } else { "another input".into() }
                ),
            ));
        }
        let mut result = recorded.result;
        result.tool_call_id = id.to_string();
        result
            .metadata
            .extra
            .insert("idempotent_replay".into(), json!(true));
        Ok(Some(result))
    }

    /// Records a successful side-effecting result under its key.
    fn remember(&self, tool: &MountedTool, trace: &Trace, result: &ToolResult) {
        let Some(key) = trace.idempotency_key.as_deref() else {
            return;
        };
        if tool.spec.annotations.read_only || !result.success {
            return;
        }
        let Some(input) = trace.input_for_key.as_ref() else {
            return;
        };
        let recorded = idempotency::Recorded {
            tool: tool.name().to_string(),
            input_sha256: audit::input_digest(input).0,
            result: result.clone(),
        };
        if let Err(e) = self.store().and_then(|s| s.put(key, &recorded)) {
            tracing::error!(key, "cannot record the idempotent result: {e}");
        }
    }
}
