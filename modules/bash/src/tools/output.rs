//! `bash_output {id}`: what a background job printed since the last read.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use toolhost_core::{Context, Effect, Tool, ToolError, ToolSpec};

use crate::jobs::Job;
use crate::output::report;
use crate::shared_job::{self, Lookup};
use crate::state::Module;

/// Input of `bash_output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputInput {
    /// The job id `bash` returned (`job-1`).
    pub id: String,
    /// A regular expression: only output lines matching it are returned.
    /// Lines that do not match are consumed all the same (not returned by a
    /// later read).
    #[serde(default)]
    pub filter: Option<String>,
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
            shared_job::end_fields(&mut out, outcome);
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
             whether it is still running; once it has ended, its exit code too (and the job is forgotten). \
             With `filter` (a regular expression) only matching lines are returned; the others are consumed.",
        )
        .effect(Effect::ReadOnly)
        .annotations(not_idempotent())
        .alias("BashOutput")
        .structured_output::<super::schema::RunOutput>()
    }

    fn execute(&self, input: OutputInput, ctx: &Context<'_>) -> Result<Value, ToolError> {
        // Checked before anything is read, so a bad pattern loses nothing.
        let filter = input
            .filter
            .as_deref()
            .map(|p| {
                regex::RegexBuilder::new(p)
                    .size_limit(1 << 20)
                    .build()
                    .map_err(|e| {
                        ToolError::invalid_input(format!(
                        "`filter` is not a valid regular expression (Rust regex syntax; no look-around or \
                         back-references): {e}"
                    ))
                    })
            })
            .transpose()?;
        let budget = self.module.config.max_output_bytes;
        let mut out = match shared_job::lookup(ctx, &input.id)? {
            // A job the fleet shares: read through the store, whichever
            // host runs it (this one first writes what it holds).
            Lookup::Found(status) => {
                let status = match self.module.jobs.get_shared(ctx.principal(), &input.id) {
                    Some(job) => {
                        job.flush();
                        shared_job::current(ctx, &input.id)?
                    }
                    None => status,
                };
                shared_job::read(ctx, &input.id, status, budget, budget)?
            }
            Lookup::Gone => return Err(shared_job::expired(&input.id)),
            Lookup::InMemory => {
                let job = self
                    .module
                    .jobs
                    .get(ctx.session_id(), &input.id)
                    .ok_or_else(|| unknown_job(&self.module, ctx.session_id(), &input.id))?;
                let (out, finished) = drain(&job, budget);
                if finished {
                    self.module.jobs.remove(&job.id);
                }
                out
            }
        };
        if let Some(filter) = &filter {
            apply_filter(&mut out, filter);
        }
        Ok(Value::Object(out))
    }
}

/// Keeps only the lines of `stdout` and `stderr` that match `filter`, and
/// says how many were dropped.
fn apply_filter(out: &mut Map<String, Value>, filter: &regex::Regex) {
    let mut dropped = 0usize;
    for key in ["stdout", "stderr"] {
        if let Some(Value::String(text)) = out.get_mut(key) {
            let mut kept = String::with_capacity(text.len());
            for line in text.split_inclusive('\n') {
                if filter.is_match(line.trim_end_matches('\n')) {
                    kept.push_str(line);
                } else {
                    dropped += 1;
                }
            }
            *text = kept;
        }
    }
    out.insert("filter".into(), json!(filter.as_str()));
    out.insert("filtered_out_lines".into(), json!(dropped));
}

/// Read-only, but not idempotent: each call consumes the output it returns,
/// and the call after a job's end finds it forgotten.
fn not_idempotent() -> toolhost_core::Annotations {
    let mut annotations = Effect::ReadOnly.default_annotations();
    annotations.idempotent = false;
    annotations
}
