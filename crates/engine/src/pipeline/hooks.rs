//! Stage 4, hooks: plan-configured commands on `tool:pre` and `tool:post`.
//!
//! A hook gets the event as JSON on stdin and answers on stdout with
//! `{"decision": "allow" | "deny" | "modify", "reason"?, "input"?, "output"?}`
//! (empty output means allow). A pre-hook may deny the call or rewrite its
//! input (which is validated again); a post-hook may withhold or rewrite the
//! output. A hook that fails, hangs past its timeout or answers garbage is
//! killed, with everything it started, and its `on_failure` policy applies.
//!
//! Each hook runs under the subreaper of [`toolhost_supervise::reaper`], so
//! "everything it started" includes processes that left its process group
//! or session (`setsid`, a daemonising double fork). Stdout and stderr are
//! read while the hook runs (stderr's tail goes into the error message),
//! and the hook is finished when its process exits: anything it left
//! running is killed then, so a background job holding stdout neither
//! stalls the call nor survives it.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use globset::{Glob, GlobMatcher};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use toolhost_core::wire::codes;
use toolhost_core::{Status, ToolResult};
use toolhost_supervise::{reaper, Process};

use crate::plan::{HookEntry, HookEvent, HookFailure, Plan};
use crate::tool::MountedTool;

/// A hook's stdout is read up to this size (the rest is drained and the
/// answer refused).
const MAX_ANSWER_BYTES: u64 = 1024 * 1024;

/// How much of the end of a hook's stderr is kept for the error message.
/// All of it is read, so a chatty hook never blocks on a full pipe.
const STDERR_TAIL_BYTES: usize = 2048;

/// The plan's hooks, compiled.
pub struct Hooks {
    hooks: Vec<(HookEntry, GlobMatcher)>,
    plan_dir: PathBuf,
    /// SHA-256 of each hook file as loaded (and trusted): see [`Plan::pins`].
    pins: std::collections::BTreeMap<PathBuf, String>,
}

/// Why a hook failed (its `on_failure` policy then allows or denies the
/// call); the message goes into the refusal and its `details.failure`.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// The program (or the reaper it runs under) could not be started.
    #[error("cannot start {program}: {error}")]
    Start {
        /// The program, as resolved.
        program: String,
        /// What the spawn said.
        error: std::io::Error,
    },
    /// Waiting for the process failed.
    #[error("cannot wait for it: {0}")]
    Wait(std::io::Error),
    /// Its pipes could not be handed to the runtime.
    #[error("cannot read or write its pipes: {0}")]
    Pipe(std::io::Error),
    /// It ran past its `timeout_ms` (it and all it started were killed).
    #[error("timed out after {0} ms")]
    TimedOut(u64),
    /// It exited unsuccessfully.
    #[error("exited with {status}{stderr_note}")]
    Exited {
        /// The exit status.
        status: std::process::ExitStatus,
        /// `; its stderr ended with: …`, or nothing.
        stderr_note: String,
    },
    /// Its answer was longer than the limit.
    #[error("answered more than {MAX_ANSWER_BYTES} bytes on stdout{stderr_note}")]
    TooLong {
        /// `; its stderr ended with: …`, or nothing.
        stderr_note: String,
    },
    /// Its answer is not a hook answer.
    #[error("answered something that is not a hook answer: {0}")]
    BadAnswer(serde_json::Error),
    /// `modify` without the part to modify.
    #[error("answered modify without an `{0}`")]
    ModifyWithout(&'static str),
    /// A file of the hook (its program or a script it names) is not what
    /// was loaded and trusted: it is not run, whatever `on_failure` says.
    #[error(
        "hash mismatch: {} changed since the plan was loaded (sha256 {expected}, now {found}); \
         it was not run. Review the change, then restart toolhost (a discovered plan needs \
         `toolhost trust` again)",
        file.display()
    )]
    Changed {
        /// The file.
        file: PathBuf,
        /// Its hash at load.
        expected: String,
        /// Its hash now.
        found: String,
    },
}

impl HookError {
    /// Whether the call is refused whatever the hook's `on_failure` says.
    fn fails_closed(&self) -> bool {
        matches!(self, HookError::Changed { .. })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    decision: Decision,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    output: Option<Value>,
}

#[derive(Deserialize, PartialEq, Eq, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum Decision {
    Allow,
    Deny,
    Modify,
}

impl Hooks {
    /// Compiles the plan's hooks (their globs were checked at parse time).
    pub fn new(plan: &Plan) -> Hooks {
        let hooks = plan
            .hooks
            .iter()
            .filter_map(|h| Glob::new(&h.tools).ok().map(|g| (h.clone(), g.compile_matcher())))
            .collect();
        Hooks {
            hooks,
            plan_dir: plan.file.parent().map(Path::to_path_buf).unwrap_or_default(),
            pins: plan.pins.clone(),
        }
    }

    /// Whether any hook listens for `event` (so callers can skip copies).
    pub fn any(&self, event: HookEvent) -> bool {
        self.hooks.iter().any(|(h, _)| h.event == event)
    }

    fn matching(&self, event: HookEvent, tool: &str) -> Vec<&HookEntry> {
        self.hooks
            .iter()
            .filter(|(h, m)| h.event == event && m.is_match(tool))
            .map(|(h, _)| h)
            .collect()
    }

    /// Runs the pre-hooks in plan order; returns the (possibly rewritten)
    /// input and whether any hook rewrote it.
    pub async fn pre(
        &self,
        tool: &MountedTool,
        id: &str,
        mut input: Value,
    ) -> Result<(Value, bool), ToolResult> {
        let mut modified = false;
        for hook in self.matching(HookEvent::Pre, tool.name()) {
            let event = json!({
                "event": "tool:pre", "tool": tool.name(), "module": tool.module.name,
                "tool_call_id": id, "input": input,
            });
            match self.run(hook, &event).await {
                Ok(answer) => match answer.decision {
                    Decision::Allow => {}
                    Decision::Deny => return Err(denied(tool, id, hook, answer.reason)),
                    Decision::Modify => match answer.input {
                        Some(new_input) => {
                            input = new_input;
                            modified = true;
                        }
                        None => {
                            return Err(hook_failed(tool, id, hook, &HookError::ModifyWithout("input")));
                        }
                    },
                },
                Err(why) if hook.on_failure == HookFailure::Allow && !why.fails_closed() => {
                    tracing::warn!(hook = ?hook.command, tool = tool.name(), "hook failed, allowed by on_failure: {why}");
                }
                Err(why) => return Err(hook_failed(tool, id, hook, &why)),
            }
        }
        Ok((input, modified))
    }

    /// Runs the post-hooks; they may withhold or rewrite the output.
    pub async fn post(&self, tool: &MountedTool, input: &Value, mut result: ToolResult) -> ToolResult {
        let id = result.tool_call_id.clone();
        for hook in self.matching(HookEvent::Post, tool.name()) {
            let event = json!({
                "event": "tool:post", "tool": tool.name(), "module": tool.module.name,
                "tool_call_id": id, "input": input, "result": result,
            });
            match self.run(hook, &event).await {
                Ok(answer) => match answer.decision {
                    Decision::Allow => {}
                    Decision::Deny => return denied(tool, &id, hook, answer.reason),
                    Decision::Modify => match answer.output {
                        Some(output) => result.output = output,
                        None => return hook_failed(tool, &id, hook, &HookError::ModifyWithout("output")),
                    },
                },
                Err(why) if hook.on_failure == HookFailure::Allow && !why.fails_closed() => {
                    tracing::warn!(hook = ?hook.command, tool = tool.name(), "post hook failed, allowed by on_failure: {why}");
                }
                Err(why) => return hook_failed(tool, &id, hook, &why),
            }
        }
        result
    }

    /// Checks the hook's pinned files (program, scripts it names) against
    /// their hashes at load: a script rewritten since (by a tool the agent
    /// ran) is never executed.
    fn verify_pins(&self, hook: &HookEntry) -> Result<(), HookError> {
        let dir = crate::plan::normalize(&std::path::absolute(&self.plan_dir).unwrap_or_default());
        for word in hook.command.iter().filter(|w| w.contains('/')) {
            let file = crate::plan::normalize(&dir.join(word));
            let Some(expected) = self.pins.get(&file) else {
                continue;
            };
            let found = crate::plan::trust::file_sha256(&file)
                .unwrap_or_else(|_| crate::plan::trust::MISSING.to_string());
            if &found != expected {
                return Err(HookError::Changed {
                    file,
                    expected: expected.clone(),
                    found,
                });
            }
        }
        Ok(())
    }

    /// Runs one hook process with the event on stdin, under its timeout.
    async fn run(&self, hook: &HookEntry, event: &Value) -> Result<Answer, HookError> {
        let program = {
            let p = Path::new(&hook.command[0]);
            if p.is_relative() && hook.command[0].contains('/') {
                self.plan_dir.join(p)
            } else {
                p.to_path_buf()
            }
        };
        self.verify_pins(hook)?;
        let start_error = |error| HookError::Start {
            program: program.display().to_string(),
            error,
        };
        let reaper_program = toolhost_supervise::program::get().map_err(start_error)?;
        let mut command = reaper::command(&reaper_program, "hook", &program, &hook.command[1..]);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = toolhost_supervise::spawn(command).map_err(start_error)?;
        let pipes = (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let process = Arc::new(Process::new(child));
        // However this call ends (an answer, a timeout, the caller dropping
        // it), the reaper is told to end the hook and all it started.
        let _stop = Stop(process.clone());
        let (Some(stdin), Some(stdout), Some(stderr)) = pipes else {
            return Err(HookError::Pipe(std::io::Error::other("the hook has no pipes")));
        };
        let stdin = tokio::process::ChildStdin::from_std(stdin).map_err(HookError::Pipe)?;
        let stdout = tokio::process::ChildStdout::from_std(stdout).map_err(HookError::Pipe)?;
        let stderr = tokio::process::ChildStderr::from_std(stderr).map_err(HookError::Pipe)?;
        let payload = event.to_string();
        let feed = async move {
            let mut stdin = stdin;
            // A hook that ignores stdin may close it early; that is fine.
            let _ = stdin.write_all(payload.as_bytes()).await;
            let _ = stdin.shutdown().await;
        };
        // The hook is done when it exits: its reaper then kills whatever it
        // left behind (a background job still holding stdout), which also
        // ends the reads below, and exits as the hook did.
        let work = async {
            let ((), status, out, err) = tokio::join!(
                feed,
                wait(&process),
                read_capped(Some(stdout), MAX_ANSWER_BYTES),
                read_tail(Some(stderr), STDERR_TAIL_BYTES)
            );
            Ok::<_, HookError>((status?, out, err))
        };
        let outcome = tokio::time::timeout(Duration::from_millis(hook.timeout_ms), work).await;
        let (status, (out, too_long), err) = match outcome {
            Ok(result) => result?,
            Err(_) => {
                // Nothing of the hook is left when the call goes on.
                process.terminate();
                let _ = tokio::time::timeout(REAP_LIMIT, wait(&process)).await;
                return Err(HookError::TimedOut(hook.timeout_ms));
            }
        };
        let err = String::from_utf8_lossy(&err);
        let err = err.trim();
        let stderr_note = if err.is_empty() {
            String::new()
        } else {
            format!("; its stderr ended with: {err}")
        };
        if !status.success() {
            return Err(HookError::Exited { status, stderr_note });
        }
        if too_long {
            return Err(HookError::TooLong { stderr_note });
        }
        let text = String::from_utf8_lossy(&out);
        if text.trim().is_empty() {
            return Ok(Answer {
                decision: Decision::Allow,
                reason: None,
                input: None,
                output: None,
            });
        }
        serde_json::from_str(text.trim()).map_err(HookError::BadAnswer)
    }
}

/// How long a timed-out hook's reaper may take to kill what the hook
/// started and exit.
const REAP_LIMIT: Duration = Duration::from_secs(2);

/// Waits (on a blocking thread) for the hook's reaper to exit, which it
/// does as the hook did, once nothing the hook started is left.
async fn wait(process: &Arc<Process>) -> Result<ExitStatus, HookError> {
    let process = process.clone();
    tokio::task::spawn_blocking(move || process.wait())
        .await
        .map_err(|e| HookError::Wait(std::io::Error::other(e)))?
        .ok_or_else(|| HookError::Wait(std::io::Error::other("its exit status could not be read")))
}

/// Stops a hook's reaper when dropped (a no-op once it has been reaped).
struct Stop(Arc<Process>);

impl Drop for Stop {
    fn drop(&mut self) {
        self.0.terminate();
    }
}

/// Reads `pipe` to its end, keeping the first `cap` bytes; returns them and
/// whether more came (drained, so the writer never blocks on a full pipe).
async fn read_capped<R: AsyncRead + Unpin>(pipe: Option<R>, cap: u64) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut over = false;
    let Some(mut pipe) = pipe else {
        return (kept, over);
    };
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return (kept, over),
            Ok(n) => {
                let room = usize::try_from(cap)
                    .unwrap_or(usize::MAX)
                    .saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
                over |= n > room;
            }
        }
    }
}

/// Reads `pipe` to its end, keeping only its last `tail` bytes.
async fn read_tail<R: AsyncRead + Unpin>(pipe: Option<R>, tail: usize) -> Vec<u8> {
    let mut kept = Vec::new();
    let Some(mut pipe) = pipe else {
        return kept;
    };
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return kept,
            Ok(n) => {
                kept.extend_from_slice(&buf[..n]);
                if kept.len() > tail {
                    kept.drain(..kept.len() - tail);
                }
            }
        }
    }
}

fn denied(tool: &MountedTool, id: &str, hook: &HookEntry, reason: Option<String>) -> ToolResult {
    let reason = reason.unwrap_or_else(|| "no reason given".into());
    ToolResult::failure(
        id,
        Status::PolicyDenied,
        codes::DENIED,
        format!("a hook denied '{}': {reason}", tool.name()),
    )
    .with_details(json!({ "hook": hook.command, "reason": reason }))
}

fn hook_failed(tool: &MountedTool, id: &str, hook: &HookEntry, why: &HookError) -> ToolResult {
    ToolResult::failure(
        id,
        Status::PolicyDenied,
        codes::DENIED,
        format!(
            "the hook {:?} for '{}' failed ({why}) and its on_failure policy is deny",
            hook.command,
            tool.name()
        ),
    )
    .with_details(json!({ "hook": hook.command, "failure": why.to_string() }))
}
