//! What the three tools share: the config, the policies, the job registry,
//! the concurrency cap and the spill folder.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use toolhost_core::ToolError;

use crate::config::Config;
use crate::env::EnvPolicy;
use crate::jobs::Jobs;
use crate::output::capture::{Capture, SpillTo};
use crate::policy::CommandPolicy;
use crate::process::spawn::{spawn, SpawnSpec, Spawned};
use crate::runner::Limits;
use crate::slots::{Slot, Slots};

/// The mount's shared state.
#[derive(Debug)]
pub struct Module {
    /// The validated config.
    pub config: Config,
    /// allowed_commands / denied_commands.
    pub policy: CommandPolicy,
    /// Which variables commands see.
    pub env: EnvPolicy,
    /// Background jobs.
    pub jobs: Jobs,
    slots: Arc<Slots>,
    spill_dir: PathBuf,
    spills: AtomicU64,
    rlimits: Vec<(libc::c_int, u64)>,
}

impl Module {
    /// State for a mount; `state_dir` is the host's scratch folder.
    pub fn new(config: Config, state_dir: Option<&Path>) -> Module {
        let spill_dir = state_dir
            .map(|d| d.join("spill"))
            .unwrap_or_else(|| std::env::temp_dir().join(format!("toolhost-bash-{}", std::process::id())));
        // Results name the file; make the name usable from anywhere.
        let spill_dir = std::path::absolute(&spill_dir).unwrap_or(spill_dir);
        Module {
            policy: CommandPolicy::new(
                &config.allowed_commands,
                &config.denied_commands,
                config.allow_builtins,
            ),
            env: EnvPolicy::new(&config.env_allow, &config.env_set),
            jobs: Jobs::default(),
            slots: Slots::new(config.max_concurrent),
            rlimits: config.rlimits.pairs(),
            spill_dir,
            spills: AtomicU64::new(0),
            config,
        }
    }

    /// SIGTERM→SIGKILL grace and the drain bound.
    pub fn limits(&self) -> Limits {
        Limits {
            kill_grace: Duration::from_millis(self.config.kill_grace_ms),
            drain: Duration::from_millis(self.config.drain_ms),
        }
    }

    /// A slot under `max_concurrent`, or an error listing what runs.
    pub fn slot(&self) -> Result<Slot, ToolError> {
        self.slots.try_acquire().ok_or_else(|| {
            let jobs = self.jobs.describe();
            let listing = if jobs.is_empty() {
                String::new()
            } else {
                format!(" Background jobs: {}.", jobs.join("; "))
            };
            ToolError::new(
                "busy",
                format!(
                    "{} commands are already running (max_concurrent = {}); wait for one to finish or end a \
                     background job with bash_kill.{listing}",
                    self.slots.used(),
                    self.slots.max()
                ),
            )
            .retryable(true)
        })
    }

    /// Starts `command` in `cwd`.
    pub fn spawn(&self, command: &str, cwd: &Path) -> Result<Spawned, ToolError> {
        if !cwd.is_dir() {
            return Err(ToolError::new(
                "bad_working_dir",
                format!(
                    "the working directory {} does not exist or is not a folder",
                    cwd.display()
                ),
            ));
        }
        let env = self.env.build(std::env::vars_os());
        let spec = SpawnSpec {
            shell: &self.config.shell,
            command,
            cwd,
            env: &env,
            rlimits: &self.rlimits,
        };
        spawn(&spec).map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidInput => ToolError::invalid_input(e.to_string()),
            _ => ToolError::new("spawn_failed", format!("could not start the command: {e}")).retryable(true),
        })
    }

    /// Fresh captures for a call; foreground ones may spill to a file.
    pub fn captures(&self, call_id: &str, spill: bool) -> (Capture, Capture) {
        let cap = self.config.max_output_bytes;
        if !(spill && self.config.spill_output) {
            return (Capture::new(cap, None), Capture::new(cap, None));
        }
        let n = self.spills.fetch_add(1, Ordering::Relaxed);
        let stem: String = call_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        let file = |stream: &str| SpillTo {
            path: self
                .spill_dir
                .join(format!("{stem}-{}-{n}.{stream}", std::process::id())),
            max_bytes: self.config.spill_max_bytes,
        };
        (
            Capture::new(cap, Some(file("stdout"))),
            Capture::new(cap, Some(file("stderr"))),
        )
    }
}
