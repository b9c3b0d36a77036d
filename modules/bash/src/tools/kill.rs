//! `bash_kill {id}`: ends a background job and everything it started.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use toolhost_core::{Context, Effect, Tool, ToolError, ToolSpec};

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
