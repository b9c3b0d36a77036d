//! What the three tools share: the config, the policies, the job registry,
//! the concurrency cap.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use toolhost_core::ToolError;

use crate::config::Config;
use crate::env::EnvPolicy;
use crate::jobs::Jobs;
use crate::netproxy::allow::Allowlist;
use crate::netproxy::Proxy;
use crate::output::capture::Capture;
use crate::policy::CommandPolicy;
use crate::process::launch::{Launcher, ReaperMissing};
use crate::process::spawn::{spawn, SpawnSpec, Spawned};
use crate::runner::Limits;
use crate::sandbox::{Request, Sandbox, SandboxError};
use crate::slots::{Slot, Slots};

/// Why a mount's state cannot be set up (the mount fails with it).
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The reaper program is missing.
    #[error("bash: {0}")]
    Reaper(#[from] ReaperMissing),
    /// The system temp folder's path holds a NUL byte.
    #[error("bash: the temp folder's path contains a NUL byte")]
    TempNul,
    /// The private temp root could not be made.
    #[error("bash: cannot create a private temp folder under {}: {source}", dir.display())]
    TempRoot {
        /// The system temp folder.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The sandbox cannot be built as the plan asks.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The network allowlist has an entry the proxy cannot use.
    #[error("bash: {0}")]
    Allowlist(crate::netproxy::allow::ListError),
}

/// The mount's shared state.
#[derive(Debug)]
pub struct Module {
    /// The validated config.
    pub config: Config,
    /// allowed_commands / denied_commands.
    pub policy: CommandPolicy,
    /// The environment every command starts from: the host's variables that
    /// pass the plan's [`EnvPolicy`], read once at mount (the host never
    /// changes its own environment; building it per call took ~15 µs of
    /// `bash true`).
    pub env: Vec<(OsString, OsString)>,
    /// Background jobs.
    pub jobs: Jobs,
    slots: Arc<Slots>,
    rlimits: Vec<(libc::c_int, u64)>,
    /// The OS sandbox and which of its layers hold here.
    pub sandbox: Sandbox,
    /// The mount's zygote, which forks every command's reaper.
    pub launcher: Launcher,
    /// The network allowlist's proxy, when `network` is a list.
    pub netproxy: Option<Proxy>,
}

impl Module {
    /// State for a mount; `state_dir` is the host's scratch folder,
    /// `working_dir` the plan's. Probes the sandbox's layers (see
    /// [`Sandbox::new`]); the error is a configuration error.
    pub fn new(
        config: Config,
        state_dir: Option<&Path>,
        working_dir: &Path,
        plan_file: Option<&Path>,
        protected: &toolhost_core::protected::Protected,
    ) -> Result<Module, SetupError> {
        // Every command starts under the reaper program: without it no call
        // could run, so the mount says so now.
        crate::process::launch::reaper_path()?;
        // The module's state folder is `<host state>/modules/bash`; the
        // host's is hidden from commands (HTTP token, other modules' state),
        // so the private temp folders cannot live under it.
        let host_state_dir = state_dir
            .and_then(|d| d.parent())
            .and_then(|d| d.parent())
            .map(|d| std::path::absolute(d).unwrap_or_else(|_| d.to_path_buf()));
        if let (Some(d), true) = (state_dir, config.sandbox != crate::sandbox::Mode::Off) {
            // Made now, so that it is hidden even when the host writes its
            // state (the HTTP token) only after the mount.
            let _ = std::fs::create_dir_all(d);
        }
        let tmp_root = if config.sandbox == crate::sandbox::Mode::Off {
            // Unused: only the sandbox makes private temp folders.
            state_dir.map(|d| d.join("tmp")).unwrap_or_else(|| {
                std::env::temp_dir().join(format!("toolhost-bash-{}-tmp", std::process::id()))
            })
        } else {
            private_temp_root()?
        };
        let tmp_root = std::path::absolute(&tmp_root).unwrap_or(tmp_root);
        let launcher = Launcher::new();
        let netproxy = match config.network.allowlist() {
            Some(names) => Some(Proxy::new(
                Allowlist::parse(names, &config.network_resolve).map_err(SetupError::Allowlist)?,
                Duration::from_secs(config.network_idle_timeout_secs),
            )),
            None => None,
        };
        let described = netproxy.as_ref().map(|p| p.list().describe());
        let sandbox = Sandbox::new(
            &launcher,
            &Request {
                mode: config.sandbox,
                network: config.network.is_open(),
                allowlist: described.as_deref(),
                writable_paths: &config.writable_paths,
                hidden_paths: &config.hidden_paths,
                processes: config.rlimits.processes,
                working_dir,
                tmp_root: tmp_root.clone(),
                shell: &config.shell,
                host_state_dir: host_state_dir.as_deref(),
                plan_file,
                protected,
                // With sandbox_required the mount itself must fail when a
                // layer is missing, so it always probes.
                probe_stamp: state_dir.filter(|_| !config.sandbox_required).map(|d| {
                    let file = d.join(crate::sandbox::stamp::FILE);
                    std::path::absolute(&file).unwrap_or(file)
                }),
            },
        )
        .inspect_err(|_| {
            // Made for this mount (or empty): nothing else is in it yet.
            let _ = std::fs::remove_dir(&tmp_root);
        })?;
        Ok(Module {
            sandbox,
            launcher,
            netproxy,
            policy: CommandPolicy::new(
                &config.allowed_commands,
                &config.denied_commands,
                config.allow_builtins,
            ),
            env: EnvPolicy::new(&config.env_allow, &config.env_set).build(std::env::vars_os()),
            jobs: Jobs::default(),
            slots: Slots::new(config.max_concurrent),
            rlimits: config.rlimits.pairs(),
            config,
        })
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
        let mut call = self.sandbox.prepare(cwd).map_err(|e| {
            ToolError::new("sandbox_failed", format!("could not prepare the sandbox: {e}")).retryable(true)
        })?;
        let proxied = self.netproxy.is_some() && self.sandbox.layers().net_proxy;
        let with_tmp;
        let env = match (call.tmp(), proxied) {
            (None, false) => &self.env,
            (tmp, _) => {
                let mut env = self.env.clone();
                if let Some(tmp) = tmp {
                    env.retain(|(k, _)| k != "TMPDIR");
                    env.push(("TMPDIR".into(), tmp.as_os_str().to_owned()));
                }
                if proxied {
                    // The proxy is the only way out: nothing may bypass it
                    // (there is nothing to reach directly anyway).
                    env.retain(|(k, _)| !is_proxy_variable(k));
                    env.extend(Proxy::env().into_iter().map(|(k, v)| (k.into(), v.into())));
                }
                with_tmp = env;
                &with_tmp
            }
        };
        let spec = SpawnSpec {
            shell: &self.config.shell,
            command,
            cwd,
            env,
            rlimits: &self.rlimits,
            confine: self.sandbox.confine(&call),
        };
        let mut spawned = spawn(&self.launcher, &spec)
            .inspect_err(|_| self.sandbox.distrust_probe())
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::InvalidInput => ToolError::invalid_input(e.to_string()),
                _ => ToolError::new("spawn_failed", format!("could not start the command: {e}"))
                    .retryable(true),
            })?;
        if let Some(reaper) = spawned.tree.pidfd() {
            call.watch_reaper(reaper);
        }
        // Serves until the call's cleanup is dropped, after its tree.
        let proxy = match (&self.netproxy, spawned.proxy_listener.take()) {
            (Some(p), Some(listener)) => Some(p.serve(listener).map_err(|e| {
                ToolError::new("spawn_failed", format!("could not start the network proxy: {e}"))
                    .retryable(true)
            })?),
            _ => None,
        };
        spawned.cleanup = Some(Box::new((call, proxy)));
        Ok(spawned)
    }

    /// Fresh captures for a call.
    pub fn captures(&self) -> (Capture, Capture) {
        let cap = self.config.max_output_bytes;
        (Capture::new(cap), Capture::new(cap))
    }
}

/// `HTTP_PROXY`, `no_proxy`, … in any case: replaced under the allowlist.
fn is_proxy_variable(name: &std::ffi::OsStr) -> bool {
    let upper = name.to_string_lossy().to_ascii_uppercase();
    ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "FTP_PROXY"].contains(&upper.as_str())
}

/// A fresh folder of this user's only (mode 0700, unguessable name) under
/// the system temp folder, for the calls' private temp folders: `mkdtemp`,
/// so that no other user can plant it or a symlink in its place.
fn private_temp_root() -> Result<PathBuf, SetupError> {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let template = std::env::temp_dir().join("toolhost-bash-XXXXXX");
    let mut bytes = std::ffi::CString::new(template.as_os_str().as_bytes())
        .map_err(|_| SetupError::TempNul)?
        .into_bytes_with_nul();
    // SAFETY: `bytes` is a writable NUL-terminated template ending in
    // XXXXXX, which mkdtemp rewrites in place.
    let made = unsafe { libc::mkdtemp(bytes.as_mut_ptr().cast()) };
    if made.is_null() {
        let source = std::io::Error::last_os_error();
        return Err(SetupError::TempRoot {
            dir: std::env::temp_dir(),
            source,
        });
    }
    bytes.pop();
    Ok(PathBuf::from(std::ffi::OsString::from_vec(bytes)))
}
