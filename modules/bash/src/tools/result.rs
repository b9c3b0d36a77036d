//! The JSON shapes the tools return, shared by foreground runs, background
//! reads and kills.

use serde_json::{json, Map, Value};
use toolhost_core::wire::codes;
use toolhost_core::{Status, ToolError};

use crate::output::capture::Capture;
use crate::output::report;
use crate::process::signals;
use crate::process::tree::Exit;
use crate::runner::{Outcome, Stop};

/// Adds `exit_code` / `signal` for an exit.
pub fn exit_fields(out: &mut Map<String, Value>, exit: Option<Exit>) {
    match exit {
        Some(Exit::Code(c)) => {
            out.insert("exit_code".into(), json!(c));
        }
        Some(Exit::Signal(s)) => {
            out.insert("exit_code".into(), Value::Null);
            out.insert("signal".into(), json!(signals::name(s)));
        }
        Some(Exit::NotStarted) | Some(Exit::SandboxFailed(_)) | None => {
            out.insert("exit_code".into(), Value::Null);
        }
    }
}

/// The output object of a finished run: streams, exit, duration, notes.
pub fn finished(stdout: &Capture, stderr: &Capture, outcome: &Outcome, budget: usize) -> Map<String, Value> {
    let mut out = Map::new();
    report::streams(&mut out, stdout.buffer(), stderr.buffer(), budget);
    exit_fields(&mut out, outcome.exit);
    out.insert("duration_ms".into(), json!(outcome.duration.as_millis() as u64));
    if outcome.ended_leftovers {
        out.insert(
            "note".into(),
            json!("the command left processes running after it exited; they were ended (use run_in_background for long-running processes)"),
        );
    }
    if !outcome.notes.is_empty() {
        out.insert("warnings".into(), json!(outcome.notes));
    }
    out
}

/// The call's result for a run that ended: success, or the right failure
/// with the output attached.
pub fn conclude(
    out: Map<String, Value>,
    outcome: &Outcome,
    timeout_secs: f64,
    grace_ms: u64,
    host_deadline: bool,
) -> Result<Value, ToolError> {
    let output = Value::Object(out);
    let stopped = "the command and every process it started were stopped (SIGTERM, then SIGKILL)";
    match outcome.stopped {
        Some(Stop::Timeout) => {
            return Err(ToolError::timeout(format!(
                "the command timed out after {timeout_secs} s; {stopped} after a {grace_ms} ms grace. The partial \
                 output is attached. Pass a larger `timeout`, or start long-running commands with \
                 run_in_background and poll them with bash_output."
            ))
            .with_output(output))
        }
        Some(Stop::Cancelled) if host_deadline => {
            return Err(ToolError::timeout(format!(
                "the host's deadline for this call passed; {stopped}. The partial output is attached. Start \
                 long-running commands with run_in_background."
            ))
            .with_output(output))
        }
        Some(Stop::Cancelled) => {
            return Err(ToolError::with_status(
                Status::Cancelled,
                codes::CANCELLED,
                format!("the call was cancelled; {stopped}. The partial output is attached."),
            )
            .with_output(output))
        }
        Some(Stop::Killed) | Some(Stop::Shutdown) | None => {}
    }
    match outcome.exit {
        Some(Exit::Code(0)) => Ok(output),
        Some(Exit::Code(c)) => Err(ToolError::new(
            "exit_status",
            format!("the command exited with code {c}"),
        )
        .with_details(json!({ "exit_code": c }))
        .with_output(output)),
        Some(Exit::Signal(s)) => Err(ToolError::new(
            "killed_by_signal",
            format!("the command was killed by {} (signal {s})", signals::name(s)),
        )
        .with_details(json!({ "signal": signals::name(s) }))
        .with_output(output)),
        Some(Exit::SandboxFailed(step)) => Err(ToolError::new(
            "sandbox_failed",
            format!(
                "the command was not run: the sandbox step {step:?} failed although the mount's probe passed \
                 (did the kernel or the cgroup setup change?); try again, or set sandbox = \"off\" in the plan"
            ),
        )
        .with_details(json!({ "step": format!("{step:?}") }))
        .retryable(true)
        .with_output(output)),
        Some(Exit::NotStarted) | None => Err(ToolError::new(
            "spawn_failed",
            "the command could not be started (the system refused a new process); try again",
        )
        .retryable(true)
        .with_output(output)),
    }
}

/// Seconds as JSON: a whole number stays an integer (`30`, as before
/// fractions were accepted), a fraction stays one (`2.5`).
pub fn seconds(secs: f64) -> Value {
    if secs.fract() == 0.0 && secs >= 0.0 && secs <= u64::MAX as f64 {
        json!(secs as u64)
    } else {
        json!(secs)
    }
}
