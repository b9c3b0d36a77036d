//! The execution pipeline every call goes through, in the order of
//! DESIGN.md: resolve, validate, policy, hooks, schedule, execute,
//! post-process, record. Each stage is one file; a stage that refuses a call
//! returns the finished result, which short-circuits the rest.

pub mod execute;
pub mod postprocess;
pub mod record;
pub mod resolve;
pub mod validate;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use toolhost_core::{CallRequest, ToolResult};
use tracing::Instrument;

use crate::cancel::CancelToken;
use crate::context::ProgressSink;
use crate::host::Host;

/// One call as a caller hands it in.
#[derive(Default)]
pub struct Call {
    /// Tool name or alias.
    pub name: String,
    /// The input object.
    pub input: Value,
    /// The caller's id for the call; one is made up when absent.
    pub tool_call_id: Option<String>,
    /// Cancels this call alone (MCP `notifications/cancelled`).
    pub cancel: Option<CancelToken>,
    /// Where progress reports go.
    pub progress: Option<ProgressSink>,
    /// Who to ask when policy says `ask` (a terminal prompt, MCP
    /// elicitation). Without one, such calls answer `approval_required`.
    pub approver: Option<Approver>,
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

/// Runs calls against a loaded host.
pub struct Pipeline {
    host: Arc<Host>,
    shutdown: CancelToken,
    next_id: AtomicU64,
}

impl Pipeline {
    /// A pipeline over `host`; `shutdown` cancels every call in flight.
    pub fn new(host: Arc<Host>, shutdown: CancelToken) -> Self {
        Pipeline {
            host,
            shutdown,
            next_id: AtomicU64::new(1),
        }
    }

    /// The host the pipeline runs against.
    pub fn host(&self) -> &Arc<Host> {
        &self.host
    }

    /// Runs one call through every stage and returns its result.
    pub async fn call(&self, call: Call) -> ToolResult {
        let started = Instant::now();
        let id = call
            .tool_call_id
            .clone()
            .unwrap_or_else(|| format!("call-{}", self.next_id.fetch_add(1, Ordering::Relaxed)));
        let span = record::span(&id, &call.name);
        let (mut result, module) = async {
            let mut module = None;
            let result = self
                .stages(&id, call, &mut module)
                .await
                .unwrap_or_else(|refusal| refusal);
            (result, module)
        }
        .instrument(span.clone())
        .await;
        result.metadata.duration_ms = started.elapsed().as_secs_f64() * 1000.0;
        let _entered = span.enter();
        record::finish(&result, module.as_deref(), started.elapsed());
        result
    }

    async fn stages(
        &self,
        id: &str,
        call: Call,
        module: &mut Option<String>,
    ) -> Result<ToolResult, ToolResult> {
        // 1. resolve
        let tool = resolve::tool(&self.host, id, &call.name)?;
        *module = Some(tool.module.name.clone());
        // 2. validate
        validate::input(&tool, id, &call.input)?;
        // 6. execute
        let limits = execute::Limits {
            timeout: self.timeout_for(tool.name()),
            grace: Duration::from_millis(self.host.plan.host.cancel_grace_ms),
        };
        let request = CallRequest {
            tool_call_id: id.to_string(),
            name: tool.module_name.clone(),
            input: call.input,
            deadline_ms: Some(limits.timeout.as_millis() as u64),
            working_dir: self.host.plan.working_dir.to_string_lossy().into_owned(),
        };
        let cancel = call.cancel.unwrap_or_default();
        let result = execute::run(tool, request, limits, cancel, &self.shutdown, call.progress).await;
        // 7. post-process
        Ok(postprocess::bound(
            result,
            self.host.plan.host.max_output_bytes as usize,
        ))
    }

    /// The deadline for a tool: the plan's rule, else the host default.
    fn timeout_for(&self, name: &str) -> Duration {
        let plan = &self.host.plan;
        let secs = plan
            .policy
            .tools
            .get(name)
            .and_then(|rule| rule.timeout_secs)
            .unwrap_or(plan.host.default_timeout_secs);
        Duration::from_secs(secs)
    }
}
