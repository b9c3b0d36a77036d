//! `bash_output {id}`: what a background job printed since the last read.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use toolhost_core::{Context, Effect, Tool, ToolError, ToolSpec};

use crate::jobs::Job;
use crate::output::report;
use crate::runner::Stop;
use crate::state::Module;
use crate::tools::result;

/// Input of `bash_output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputInput {
    /// The job id `bash` returned (`job-1`).
    pub id: String,
}

/// Reads a background job's new output.
pub struct BashOutput {
    /// Shared module state.
    pub module: Arc<Module>,
}

/// The "no such job" error, listing the jobs there are.
pub fn unknown_job(module: &Module, session: Option<&str>, id: &str) -> ToolError {
    let jobs = module.jobs.describe_for(session);
    let listing = if jobs.is_empty() {
        "there are no background jobs".to_string()
    } else {
        format!("jobs: {}", jobs.join("; "))
    };
    ToolError::not_found(format!(
        "no background job `{id}` ({listing}). A job is forgotten once its end has been reported."
    ))
}

/// New output of `job`, and its end if it is over (then the job is
/// forgotten by the caller).
pub fn drain(job: &Job, budget: usize) -> (Map<String, Value>, bool) {
    let mut state = job.state();
    let stdout = state.stdout.take_buffer();
    let stderr = state.stderr.take_buffer();
    let mut out = Map::new();
    out.insert("id".into(), json!(job.id));
    report::streams(&mut out, &stdout, &stderr, budget);
    let finished = match &state.outcome {
        Some(outcome) => {
            out.insert("running".into(), json!(false));
            result::exit_fields(&mut out, outcome.exit);
            out.insert("duration_ms".into(), json!(outcome.duration.as_millis() as u64));
            let how = match outcome.stopped {
                Some(Stop::Timeout) => Some("timeout"),
                Some(Stop::Killed) => Some("bash_kill"),
                Some(Stop::Shutdown) => Some("shutdown"),
                Some(Stop::Cancelled) => Some("cancelled"),
                None => None,
            };
            if let Some(how) = how {
                out.insert("stopped_by".into(), json!(how));
            }
            if !outcome.notes.is_empty() {
                out.insert("warnings".into(), json!(outcome.notes));
            }
            true
        }
        None => {
            out.insert("running".into(), json!(true));
            out.insert(
                "elapsed_ms".into(),
                json!(job.started.elapsed().as_millis() as u64),
            );
            false
        }
    };
    (out, finished)
}

impl Tool for BashOutput {
    type Input = OutputInput;
    type Output = Value;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "bash_output",
            "Returns what a background job (bash with run_in_background) printed since the last read, and \
             whether it is still running; once it has ended, its exit code too (and the job is forgotten).",
        )
        .effect(Effect::ReadOnly)
        .annotations(not_idempotent())
        .alias("BashOutput")
    }

    fn execute(&self, input: OutputInput, ctx: &Context<'_>) -> Result<Value, ToolError> {
        let job = self
            .module
            .jobs
            .get(ctx.session_id(), &input.id)
            .ok_or_else(|| unknown_job(&self.module, ctx.session_id(), &input.id))?;
        let (out, finished) = drain(&job, self.module.config.max_output_bytes);
        if finished {
            self.module.jobs.remove(&job.id);
        }
        Ok(Value::Object(out))
    }
}

/// Read-only, but not idempotent: each call consumes the output it returns,
/// and the call after a job's end finds it forgotten.
fn not_idempotent() -> toolhost_core::Annotations {
    let mut annotations = Effect::ReadOnly.default_annotations();
    annotations.idempotent = false;
    annotations
}
