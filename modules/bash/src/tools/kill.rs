//! `bash_kill {id}`: ends a background job and everything it started.

use std::sync::Arc;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use toolhost_core::{Context, Effect, Tool, ToolError, ToolSpec};

use crate::shared_job::{self, JobStatus, Lookup};
use crate::state::Module;
use crate::tools::output::{drain, unknown_job};

/// Input of `bash_kill`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KillInput {
    /// The job id `bash` returned (`job-1`).
    pub id: String,
}

/// Ends a background job.
pub struct BashKill {
    /// Shared module state.
    pub module: Arc<Module>,
}

impl Tool for BashKill {
    type Input = KillInput;
    type Output = Value;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "bash_kill",
            "Ends a background job: SIGTERM, then SIGKILL after a grace, to every process it started. \
             Returns its last output and how it ended.",
        )
        .effect(Effect::InternalMutation)
        .alias("KillShell")
    }

    fn execute(&self, input: KillInput, ctx: &Context<'_>) -> Result<Value, ToolError> {
        match shared_job::lookup(ctx, &input.id)? {
            Lookup::Found(status) => return self.kill_shared(&input.id, status, ctx),
            Lookup::Gone => return Err(shared_job::expired(&input.id)),
            Lookup::InMemory => {}
        }
        let job = self
            .module
            .jobs
            .get(ctx.session_id(), &input.id)
            .ok_or_else(|| unknown_job(&self.module, ctx.session_id(), &input.id))?;
        let was_running = job.is_running();
        job.kill();
        let (mut out, _) = drain(&job, self.module.config.max_output_bytes);
        self.module.jobs.remove(&job.id);
        out.insert("killed".into(), json!(was_running));
        if !was_running {
            out.insert("note".into(), json!("the job had already ended by itself"));
        }
        Ok(Value::Object(out))
    }
}

impl BashKill {
    /// Ends a job the fleet shares: directly when it runs here, otherwise
    /// by asking its host through the store and waiting (bounded) for the
    /// end it writes back.
    fn kill_shared(&self, handle: &str, status: JobStatus, ctx: &Context<'_>) -> Result<Value, ToolError> {
        let budget = self.module.config.max_output_bytes;
        let was_running = !status.is_over();
        let status = if was_running {
            match self.module.jobs.get_shared(ctx.principal(), handle) {
                Some(job) => {
                    job.kill();
                    shared_job::current(ctx, handle)?
                }
                None => self.kill_elsewhere(handle, ctx)?,
            }
        } else {
            status
        };
        let mut out = shared_job::read(ctx, handle, status, budget, budget)?;
        out.insert("killed".into(), json!(was_running));
        if !was_running {
            out.insert("note".into(), json!("the job had already ended by itself"));
        }
        Ok(Value::Object(out))
    }

    /// Asks for the end and waits for it; returns the status carrying it.
    fn kill_elsewhere(&self, handle: &str, ctx: &Context<'_>) -> Result<JobStatus, ToolError> {
        shared_job::request_kill(ctx, handle)?;
        // Its host sees the request within a spool tick, then ends the tree
        // (SIGTERM, the grace, SIGKILL) and writes the end.
        let wait = Duration::from_millis(self.module.config.kill_grace_ms) + Duration::from_secs(5);
        let until = Instant::now() + wait;
        while Instant::now() < until {
            let status = shared_job::current(ctx, handle)?;
            if status.is_over() {
                return Ok(status);
            }
            if ctx.wait_cancelled(shared_job::SPOOL_EVERY) {
                return Err(ToolError::cancelled());
            }
        }
        Err(ToolError::new(
            "unavailable",
            format!(
                "asked the host running `{handle}` to end it, but it has not confirmed in {} s (it may be down or \
                 busy). The request stays: the job ends when its host next looks; bash_output shows it.",
                wait.as_secs()
            ),
        )
        .retryable(true))
    }
}
