//! The output schemas bash and bash_output declare. Their results are
//! built as JSON maps (shared by foreground runs, background reads and
//! kills, see [`super::result`]); these types exist for their JSON Schema
//! only, so MCP clients can read `structuredContent` knowing its shape.
//! Every field is optional because which appear depends on how the run
//! ended; fields added later are allowed (no `additionalProperties: false`).
#![allow(dead_code)]

use schemars::JsonSchema;

/// The streams and exit of a run, foreground or background.
#[derive(JsonSchema)]
pub struct RunOutput {
    /// The background job's id.
    pub id: Option<String>,
    /// What the command printed on stdout (head and tail when cut).
    pub stdout: Option<String>,
    /// What it printed on stderr (head and tail when cut).
    pub stderr: Option<String>,
    /// Bytes printed on stdout in all.
    pub stdout_bytes: Option<u64>,
    /// Bytes printed on stderr in all.
    pub stderr_bytes: Option<u64>,
    /// Whether the streams were cut to the mount's max_output_bytes.
    pub truncated: Option<bool>,
    /// How many bytes were cut.
    pub cut_bytes: Option<u64>,
    /// How to see what was cut.
    pub cut_note: Option<String>,
    /// The exit code (null when killed by a signal or not started).
    pub exit_code: Option<i64>,
    /// The signal that killed it.
    pub signal: Option<String>,
    /// Run time in milliseconds.
    pub duration_ms: Option<u64>,
    /// A background job: time since it started, while it runs.
    pub elapsed_ms: Option<u64>,
    /// A background job: whether it still runs.
    pub running: Option<bool>,
    /// What stopped it (timeout, bash_kill, shutdown, cancelled).
    pub stopped_by: Option<String>,
    /// About processes left running, which were ended.
    pub note: Option<String>,
    /// Problems met on the way (sandbox, limits).
    pub warnings: Option<Vec<String>>,
    /// bash_output's `filter`, when given.
    pub filter: Option<String>,
    /// Lines the filter dropped.
    pub filtered_out_lines: Option<u64>,
    /// A background start: `running`.
    pub status: Option<String>,
    /// A background start: the job's process id.
    pub pid: Option<u64>,
    /// A background start: its timeout.
    pub timeout_secs: Option<f64>,
    /// A background start: how to follow it.
    pub message: Option<String>,
}
