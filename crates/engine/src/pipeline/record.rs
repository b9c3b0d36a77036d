//! Stage 8, record: the `tool:pre` / `tool:post` / `tool:error` events, a
//! `tracing` span per call, and one audit record per call (plus the intent
//! record written before a side-effecting call runs, [`intent`]).

use serde_json::{json, Value};
use toolhost_core::{RequestContext, ToolResult};
use tracing::Span;

use super::audit::{input_digest, now_ms, AuditLog, AuditRecord};
use crate::events::EventBus;
use crate::tool::MountedTool;

/// The span every stage of one call runs in.
fn span(id: &str, name: &str) -> Span {
    tracing::info_span!("tool_call", call = %id, tool = %name)
}

/// One call between its start and its record: what [`finish`] needs.
pub struct Pending {
    /// The call's id.
    pub id: String,
    /// The name it was called by.
    pub name: String,
    /// The caller's input, kept only when an audit log or an observer will
    /// read it (`Null` otherwise).
    pub input: Value,
    /// What the stages learned.
    pub trace: Trace,
    /// The span every stage runs in.
    pub span: Span,
    started: std::time::Instant,
    /// Keeps the call on the operator page's list until it is recorded.
    pub listed: Option<super::in_flight::Listed>,
}

impl Pending {
    /// Starts recording a call; `keep_input` says whether the record needs it.
    pub fn start(id: String, call: &super::Call, keep_input: bool) -> Pending {
        Pending {
            span: span(&id, &call.name),
            id,
            name: call.name.clone(),
            input: if keep_input {
                call.input.clone()
            } else {
                Value::Null
            },
            trace: Trace::for_call(call),
            started: std::time::Instant::now(),
            listed: None,
        }
    }
}

/// What the stages learned about a call, for its record.
#[derive(Default)]
pub struct Trace {
    /// The tool, once resolved.
    pub tool: Option<std::sync::Arc<MountedTool>>,
    /// How policy let it through or why it stopped.
    pub decision: &'static str,
    /// How an `ask` was approved.
    pub approved_by: Option<&'static str>,
    /// The principal who approved it (the caller's own client, or an
    /// operator on the page).
    pub approver: Option<String>,
    /// The idempotency key.
    pub idempotency_key: Option<String>,
    /// Replayed from the idempotency store.
    pub replayed: bool,
    /// The caller's input, kept when the call has an idempotency key.
    pub input_for_key: Option<Value>,
    /// The call's hold on its idempotency key while it runs.
    pub claim: Option<super::idempotency::Claimed>,
    /// Who the call runs for.
    pub principal: String,
    /// The grant that let it through.
    pub grant: Option<String>,
    /// `[policy] version`.
    pub policy_version: Option<String>,
    /// The caller's ids.
    pub context: RequestContext,
    /// The deprecation notice of a deprecated tool.
    pub deprecation: Option<Value>,
    /// The call's OpenTelemetry span, while export is on.
    pub otel: Option<toolhost_telemetry::trace::CallSpan>,
    /// Counts the call in `toolhost_calls_in_flight` while metrics are on.
    pub in_flight: Option<toolhost_telemetry::metrics::InFlight>,
}

impl Trace {
    /// A fresh trace for a call; its span (while export is on) is the child
    /// of the caller's `traceparent`.
    pub fn for_call(call: &super::Call) -> Trace {
        Trace {
            decision: "unknown",
            idempotency_key: call.idempotency_key.clone(),
            input_for_key: call.idempotency_key.as_ref().map(|_| call.input.clone()),
            context: call.context.clone(),
            otel: toolhost_telemetry::trace::CallSpan::start(call.trace_parent.as_ref()),
            in_flight: toolhost_telemetry::metrics::call_started(),
            ..Trace::default()
        }
    }

    /// A stage the call passed, as an event on its span (nothing while
    /// export is off).
    #[inline]
    pub fn stage(&mut self, name: &'static str) {
        if let Some(span) = self.otel.as_mut() {
            span.stage(name);
        }
    }

    /// The trace context the call passes on to what it reaches: its own
    /// span's while export is on, else the caller's as given.
    pub fn outgoing(
        &self,
        caller: Option<toolhost_telemetry::trace::TraceParent>,
    ) -> Option<toolhost_telemetry::trace::TraceParent> {
        match &self.otel {
            Some(span) => Some(span.traceparent()),
            None => caller,
        }
    }
}

/// Emits `tool:pre` before execution.
pub fn pre(
    events: &EventBus,
    tool: &MountedTool,
    id: &str,
    input: &Value,
    principal: &str,
    context: &RequestContext,
) {
    if !events.is_observed() {
        return;
    }
    events.emit(
        "tool:pre",
        &json!({ "tool": tool.name(), "tool_call_id": id, "input": input, "principal": principal, "context": context }),
    );
}

/// The error code of a side-effecting call refused because its intent
/// record could not be written.
pub const AUDIT_UNAVAILABLE: &str = "audit_unavailable";

/// Writes the intent record of a side-effecting call before it runs
/// (`phase: "intent"`, `status: "started"`); the call is refused when this
/// fails.
pub fn intent(
    audit: &AuditLog,
    tool: &MountedTool,
    id: &str,
    input: &Value,
    trace: &Trace,
) -> Result<(), super::audit_sink::AuditSinkError> {
    audit.append(&AuditRecord {
        phase: Some("intent"),
        replayed: false,
        ..record_of(audit, trace, id, tool.name(), Some(tool), input)
    })
}

/// The fields every audit record of a call takes from its trace (who, which
/// grant and policy version, the decision, the input's digest), as a record
/// of status `started` with nothing produced yet: [`intent`] and [`finish`]
/// override what differs, so the two records can never disagree on these.
fn record_of<'a>(
    audit: &AuditLog,
    trace: &'a Trace,
    call_id: &'a str,
    name: &'a str,
    tool: Option<&'a MountedTool>,
    input: &'a Value,
) -> AuditRecord<'a> {
    let (input_sha256, input_bytes) = input_digest(input);
    AuditRecord {
        ts_unix_ms: now_ms(),
        call_id,
        phase: None,
        tool: name,
        module: tool.map(|t| t.module.name.as_str()),
        version: tool.map(|t| t.spec.version.as_str()),
        effect: tool.map(|t| t.spec.effect.as_str()),
        decision: trace.decision,
        approved_by: trace.approved_by,
        approver: trace.approver.as_deref(),
        principal: &trace.principal,
        grant: trace.grant.as_deref(),
        policy_version: trace.policy_version.as_deref(),
        context: &trace.context,
        status: "started",
        error_code: None,
        duration_ms: 0.0,
        input_sha256,
        input_bytes,
        output_bytes: 0,
        idempotency_key: trace.idempotency_key.as_deref(),
        replayed: trace.replayed,
        redactions: None,
        input: audit.raw_inputs().then_some(input),
        timeout: None,
        rate_limit: None,
    }
}

/// The error details of a result failed with `code`, when they hold `key`
/// (the host's own answer, not a tool's details under the same code).
fn error_details<'a>(result: &'a ToolResult, code: &str, key: &str) -> Option<&'a Value> {
    let error = result.error.as_ref().filter(|e| e.code == code)?;
    error.details.as_ref().filter(|d| d.get(key).is_some())
}

/// Stamps the call's duration, emits `tool:post` or `tool:error`, logs the
/// outcome and appends the audit record.
pub fn finish(
    events: &EventBus,
    audit: Option<&AuditLog>,
    pending: Pending,
    mut result: ToolResult,
) -> ToolResult {
    result.metadata.duration_ms = pending.started.elapsed().as_secs_f64() * 1000.0;
    let _entered = pending.span.enter();
    let Pending {
        name, input, trace, ..
    } = &pending;
    let (name, input) = (name.as_str(), input);
    let ms = result.metadata.duration_ms;
    let module = trace.tool.as_ref().map(|t| t.module.name.as_str());
    if events.is_observed() {
        let event = if result.success { "tool:post" } else { "tool:error" };
        events.emit(
            event,
            &json!({ "tool": name, "tool_call_id": result.tool_call_id, "input": input, "result": result, "duration_ms": ms, "principal": trace.principal, "context": trace.context, "policy_version": trace.policy_version }),
        );
    }
    if result.success {
        tracing::debug!(status = %result.status, module, duration_ms = ms, "call finished");
    } else {
        tracing::info!(status = %result.status, module, duration_ms = ms, error = result.message(), "call failed");
    }
    if let Some(audit) = audit {
        let tool = trace.tool.as_deref();
        let appended = audit.append(&AuditRecord {
            status: result.status.as_str(),
            error_code: result.error.as_ref().map(|e| e.code.as_str()),
            duration_ms: ms,
            output_bytes: super::postprocess::json_len(&result.output),
            redactions: result.metadata.extra.get("redactions"),
            timeout: error_details(&result, toolhost_core::wire::codes::TIMEOUT, "bound"),
            rate_limit: error_details(&result, super::rate_limit::RATE_LIMITED, "limit"),
            ..record_of(
                audit,
                trace,
                &result.tool_call_id,
                tool.map(|t| t.name()).unwrap_or(name),
                tool,
                input,
            )
        });
        if let Err(e) = appended {
            // The call has happened (a side-effecting one had its intent
            // recorded first); say that its outcome is not on record.
            tracing::error!(call = %result.tool_call_id, "the call's audit record was not written: {e}");
            result
                .metadata
                .extra
                .insert("audit_error".into(), json!(e.to_string()));
        }
    }
    drop(_entered);
    observe(pending, &result);
    result
}

/// The call's metrics and the end of its span (each a branch while off).
fn observe(pending: Pending, result: &ToolResult) {
    let Pending {
        id,
        name,
        mut trace,
        started,
        ..
    } = pending;
    let elapsed = started.elapsed();
    let span = trace.otel.take();
    drop(trace.in_flight.take());
    let tool = trace.tool.as_ref().map(|t| t.name());
    let status = result.status.as_str();
    toolhost_telemetry::metrics::call_finished(
        tool.unwrap_or(toolhost_telemetry::metrics::UNRESOLVED),
        status,
        elapsed,
    );
    if let Some(mut span) = span {
        span.stage("record");
        span.finish(toolhost_telemetry::trace::Finished {
            tool,
            name: &name,
            principal: &trace.principal,
            status,
            decision: trace.decision,
            code: result.error.as_ref().map(|e| e.code.as_str()),
            call_id: &id,
            duration: elapsed,
        });
    }
}
