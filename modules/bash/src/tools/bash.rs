//! `bash {command, timeout?, run_in_background?}`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use toolhost_core::{Context, Coordinator, Effect, Level, TaskSupport, Tool, ToolError, ToolSpec};

use crate::process::tree::Exit;
use crate::runner::{self, Stop, Stream};
use crate::shared_job::{self, Spool};
use crate::state::Module;
use crate::tools::result;

/// Below this much time left, a cancellation is the host's deadline.
const DEADLINE_SLACK: Duration = Duration::from_millis(250);

/// Input of `bash`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashInput {
    /// The command, run as `bash -c COMMAND` in the working directory with
    /// stdin from /dev/null and a minimal environment.
    pub command: String,
    /// Seconds before the command and every process it started are killed
    /// (default from the plan, 30; capped by max_timeout_secs, 600); a
    /// fraction such as 2.5 is allowed.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub timeout: Option<f64>,
    /// Start the command in the background and return a job id at once;
    /// read its output with bash_output and end it with bash_kill.
    #[serde(default)]
    pub run_in_background: Option<bool>,
    /// A few words on what the command does (shown in logs only).
    #[serde(default)]
    pub description: Option<String>,
}

/// Runs shell commands.
pub struct Bash {
    /// Shared module state.
    pub module: Arc<Module>,
    /// The mount's coordinator: a job the fleet shares reaches the store
    /// through it after the call returned.
    pub coordinator: Coordinator,
}

impl Tool for Bash {
    type Input = BashInput;
    type Output = Value;

    fn spec(&self) -> ToolSpec {
        let c = &self.module.config;
        ToolSpec::new(
            "bash",
            format!(
                "Runs a shell command with `bash -c` in the working directory and returns stdout, stderr and \
                 the exit code. stdin is /dev/null (nothing can prompt). Every process the command starts is \
                 ended when it finishes or times out (default {} s, at most {} s); use run_in_background for \
                 servers and long jobs, then bash_output / bash_kill. Output keeps the first and last bytes \
                 (about {} in all). A non-zero exit is reported as an error with the output attached.",
                c.timeout_secs, c.max_timeout_secs, c.max_output_bytes
            ),
        )
        .effect(Effect::Irreversible)
        .serial(c.serial)
        // The command's own timeout governs; a plan rule still overrides.
        .timeout_secs(c.max_timeout_secs + c.kill_grace_ms.div_ceil(1000) + 5)
        // A long command may run as an MCP task, polled for its result.
        .task_support(TaskSupport::Allowed)
        .alias("Bash")
        .alias("run_terminal_command")
        .structured_output::<super::schema::RunOutput>()
    }

    fn execute(&self, input: BashInput, ctx: &Context<'_>) -> Result<Value, ToolError> {
        let m = &self.module;
        if input.command.trim().is_empty() {
            return Err(ToolError::invalid_input(
                "`command` is empty; give the shell command to run",
            ));
        }
        m.policy
            .check(&input.command)
            .map_err(|d| ToolError::denied(d.0))?;
        let asked = input.timeout.unwrap_or(m.config.timeout_secs as f64).max(1.0);
        let timeout_secs = asked.min(m.config.max_timeout_secs as f64);
        let timeout = Duration::from_secs_f64(timeout_secs);
        if let Some(description) = &input.description {
            ctx.log(Level::Debug, format!("bash: {description}"));
        }
        let slot = m.slot()?;
        let background = input.run_in_background.unwrap_or(false);
        // A call lent shared state starts a job any host of the fleet can
        // read: its handle and status are in the store before it runs.
        let prepared = if background {
            shared_job::prepare(ctx, &self.coordinator, &input.command)?
        } else {
            None
        };
        let spawned = match m.spawn(&input.command, ctx.working_dir()) {
            Ok(spawned) => spawned,
            Err(e) => {
                if let Some(prepared) = prepared {
                    prepared.abandon();
                }
                return Err(e);
            }
        };

        if background {
            let captures = m.captures();
            let pid = spawned.tree.reaper_pid();
            let job = m
                .jobs
                .start(
                    ctx.session_id(),
                    prepared.map(|prepared| Spool::new(prepared, pid)),
                    &input.command,
                    spawned,
                    captures,
                    input.timeout.map(|_| timeout),
                    m.limits(),
                    slot,
                )
                .map_err(|e| ToolError::new("spawn_failed", format!("could not start a job thread: {e}")))?;
            return Ok(json!({
                "id": job.id,
                "status": "running",
                "pid": pid,
                "timeout_secs": input.timeout.map(|_| result::seconds(timeout_secs)),
                "message": format!(
                    "started in the background as {}; read its output with bash_output {{\"id\": \"{}\"}} and \
                     end it with bash_kill. It is ended when the host shuts down.",
                    job.id, job.id
                ),
            }));
        }

        let (mut stdout, mut stderr) = m.captures();
        let deadline = Instant::now() + timeout;
        let heartbeat = Heartbeat::new();
        let mut sink = |stream: Stream, bytes: &[u8]| {
            heartbeat.output(bytes.len());
            match stream {
                Stream::Stdout => stdout.push(bytes),
                Stream::Stderr => stderr.push(bytes),
            }
        };
        let should_stop = || {
            heartbeat.beat(ctx);
            if ctx.is_cancelled() {
                Some(Stop::Cancelled)
            } else if Instant::now() >= deadline {
                Some(Stop::Timeout)
            } else {
                None
            }
        };
        let outcome = runner::drive(spawned, &mut sink, &should_stop, m.limits());
        drop(slot);
        if matches!(outcome.exit, Some(Exit::SandboxFailed(_))) {
            m.sandbox.distrust_probe();
        }
        let host_deadline = ctx.remaining().is_some_and(|left| left <= DEADLINE_SLACK);
        let mut out = result::finished(&stdout, &stderr, &outcome, m.config.max_output_bytes);
        if asked > timeout_secs {
            out.insert(
                "timeout_note".into(),
                json!(format!(
                    "timeout {asked} s was capped to max_timeout_secs = {timeout_secs} s"
                )),
            );
        }
        ctx.set_metadata("exit_code", out.get("exit_code").cloned().unwrap_or(Value::Null));
        result::conclude(out, &outcome, timeout_secs, m.config.kill_grace_ms, host_deadline)
    }
}

/// How often a running command reports progress: well inside the 60 s
/// request timeout MCP clients (the TypeScript SDK among them) reset on
/// each progress notification.
const HEARTBEAT: Duration = Duration::from_secs(2);

/// Progress while a foreground command runs: elapsed seconds (always
/// increasing) and the output so far, every [`HEARTBEAT`]. The host sends
/// it on only when the caller asked for progress.
struct Heartbeat {
    started: Instant,
    next: std::cell::Cell<Instant>,
    bytes: std::cell::Cell<u64>,
}

impl Heartbeat {
    fn new() -> Self {
        let started = Instant::now();
        Heartbeat {
            started,
            next: std::cell::Cell::new(started + HEARTBEAT),
            bytes: std::cell::Cell::new(0),
        }
    }

    fn output(&self, n: usize) {
        self.bytes.set(self.bytes.get().saturating_add(n as u64));
    }

    fn beat(&self, ctx: &Context<'_>) {
        let now = Instant::now();
        if now < self.next.get() {
            return;
        }
        self.next.set(now + HEARTBEAT);
        let elapsed = now.duration_since(self.started).as_secs();
        let message = format!(
            "running for {elapsed} s; {} bytes of output so far",
            self.bytes.get()
        );
        ctx.progress(elapsed as f64, None, Some(&message));
    }
}
