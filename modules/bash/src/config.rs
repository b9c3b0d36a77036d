//! The module's configuration (`[tools.config]` in the mount plan).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;
use toolhost_core::MountError;

/// Every key, with its default. Unknown keys are an error.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// The shell run as `SHELL -c COMMAND`.
    pub shell: PathBuf,
    /// Timeout when the call gives none, in seconds.
    pub timeout_secs: u64,
    /// Cap on the call's `timeout`, in seconds.
    pub max_timeout_secs: u64,
    /// Grace between SIGTERM and SIGKILL, in milliseconds.
    pub kill_grace_ms: u64,
    /// How long to keep reading output after the processes are gone, in ms.
    pub drain_ms: u64,
    /// Output kept per result (stdout and stderr together): head and tail.
    pub max_output_bytes: usize,
    /// Extra environment variables to pass (names or `*` patterns). A secret
    /// name (*KEY*, *TOKEN*, …) passes only when listed exactly.
    pub env_allow: Vec<String>,
    /// Variables set for every command.
    pub env_set: BTreeMap<String, String>,
    /// Commands running at once, background jobs included.
    pub max_concurrent: usize,
    /// Optional resource limits per command.
    pub rlimits: Rlimits,
    /// If set, only these commands may run (`ls`, `git status`, …).
    pub allowed_commands: Vec<String>,
    /// These commands may never run.
    pub denied_commands: Vec<String>,
    /// With `allowed_commands`, also allow builtins that run nothing else
    /// (`cd`, `echo`, `test`, `export`, …).
    pub allow_builtins: bool,
    /// Whether `bash` calls run alone in a batch.
    pub serial: bool,
    /// The OS sandbox around every command: `workspace-write` (default),
    /// `read-only` or `off`.
    pub sandbox: crate::sandbox::Mode,
    /// The network commands reach: `false` (default: none), `true` (the
    /// host's), or a list of host names (`"pkg.example.org"`,
    /// `"*.example.com"`, `"api.example.net:443"`) reached only through a
    /// proxy the module runs (see [`crate::netproxy`]).
    pub network: Network,
    /// Names the network proxy resolves to a fixed address instead of
    /// asking DNS, like curl's `--resolve` (`{ "allowed.test" =
    /// "127.0.0.1" }`). The name must also be on `network`. Such a name may
    /// point at a loopback or private address (which DNS answers may not):
    /// for local services and tests.
    pub network_resolve: BTreeMap<String, std::net::IpAddr>,
    /// With a network allowlist: a proxied connection with no byte either
    /// way for this many seconds is closed.
    pub network_idle_timeout_secs: u64,
    /// Folders writable besides the working folder and the private temp
    /// folder (`~/` and relative paths allowed; they must exist).
    pub writable_paths: Vec<PathBuf>,
    /// Paths commands see empty (default `~/.ssh`, `~/.aws`, `~/.gnupg`).
    pub hidden_paths: Vec<String>,
    /// Fail the mount when a sandbox layer is unavailable on this kernel
    /// (otherwise: a warning).
    pub sandbox_required: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            shell: PathBuf::from("/bin/bash"),
            timeout_secs: 30,
            max_timeout_secs: 600,
            kill_grace_ms: 1000,
            drain_ms: 500,
            max_output_bytes: 30_000,
            env_allow: Vec::new(),
            env_set: BTreeMap::new(),
            max_concurrent: 8,
            rlimits: Rlimits::default(),
            allowed_commands: Vec::new(),
            denied_commands: Vec::new(),
            allow_builtins: true,
            serial: true,
            sandbox: crate::sandbox::Mode::WorkspaceWrite,
            network: Network::Flag(false),
            network_resolve: BTreeMap::new(),
            network_idle_timeout_secs: crate::netproxy::DEFAULT_IDLE_TIMEOUT.as_secs(),
            writable_paths: Vec::new(),
            hidden_paths: crate::sandbox::config::default_hidden_paths(),
            sandbox_required: false,
        }
    }
}

/// `network = false | true | ["name", …]`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(
    untagged,
    expecting = "network must be true, false or a list of host names such as [\"pkg.example.org\", \"*.example.com\", \"api.example.net:443\"]"
)]
pub enum Network {
    /// `false`: no network; `true`: the host's network.
    Flag(bool),
    /// Only these names, through the module's proxy.
    Allow(Vec<String>),
}

impl Network {
    /// `network = true`: the host's network, unfiltered.
    pub fn is_open(&self) -> bool {
        matches!(self, Network::Flag(true))
    }

    /// The allowlist, when one is given.
    pub fn allowlist(&self) -> Option<&[String]> {
        match self {
            Network::Allow(names) => Some(names),
            Network::Flag(_) => None,
        }
    }
}

/// Resource limits applied to the shell (and inherited by its children).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rlimits {
    /// RLIMIT_CPU: CPU seconds per process.
    pub cpu_secs: Option<u64>,
    /// RLIMIT_FSIZE: largest file a process may write, in bytes.
    pub file_size_bytes: Option<u64>,
    /// RLIMIT_NOFILE: open files per process.
    pub open_files: Option<u64>,
    /// RLIMIT_NPROC: processes of the user (counted system-wide per user).
    pub processes: Option<u64>,
    /// RLIMIT_AS: address space per process, in bytes.
    pub memory_bytes: Option<u64>,
}

impl Rlimits {
    /// `(RLIMIT_*, value)` pairs for the ones that are set.
    pub fn pairs(&self) -> Vec<(libc::c_int, u64)> {
        [
            (libc::RLIMIT_CPU as libc::c_int, self.cpu_secs),
            (libc::RLIMIT_FSIZE as libc::c_int, self.file_size_bytes),
            (libc::RLIMIT_NOFILE as libc::c_int, self.open_files),
            (libc::RLIMIT_NPROC as libc::c_int, self.processes),
            (libc::RLIMIT_AS as libc::c_int, self.memory_bytes),
        ]
        .into_iter()
        .filter_map(|(r, v)| v.map(|v| (r, v)))
        .collect()
    }
}

impl Config {
    /// Checks the values, with messages that say which key to fix.
    pub fn validate(&self) -> Result<(), MountError> {
        if self.timeout_secs == 0 || self.max_timeout_secs == 0 {
            return Err(MountError::new(
                "bash: timeout_secs and max_timeout_secs must be at least 1",
            ));
        }
        if self.timeout_secs > self.max_timeout_secs {
            return Err(MountError::new(format!(
                "bash: timeout_secs ({}) is above max_timeout_secs ({}); lower it or raise the cap",
                self.timeout_secs, self.max_timeout_secs
            )));
        }
        if self.max_output_bytes < 256 {
            return Err(MountError::new("bash: max_output_bytes must be at least 256"));
        }
        if self.max_concurrent == 0 {
            return Err(MountError::new("bash: max_concurrent must be at least 1"));
        }
        if !self.shell.is_absolute() || !self.shell.is_file() {
            return Err(MountError::new(format!(
                "bash: shell `{}` is not an absolute path to a file",
                self.shell.display()
            )));
        }
        for name in self.env_set.keys() {
            if name.is_empty() || name.contains('=') || name.contains('\0') {
                return Err(MountError::new(format!(
                    "bash: env_set has an invalid variable name `{name}`"
                )));
            }
        }
        if self.network_idle_timeout_secs == 0 {
            return Err(MountError::new(
                "bash: network_idle_timeout_secs must be at least 1",
            ));
        }
        if let Some(names) = self.network.allowlist() {
            crate::netproxy::allow::Allowlist::parse(names, &self.network_resolve)
                .map_err(|e| MountError::new(format!("bash: {e}")))?;
            if self.sandbox == crate::sandbox::Mode::Off {
                return Err(MountError::new(
                    "bash: a network allowlist needs the sandbox's network namespace, and sandbox = \"off\"; set \
                     sandbox = \"workspace-write\" or \"read-only\", or network = true",
                ));
            }
        } else if !self.network_resolve.is_empty() {
            return Err(MountError::new(
                "bash: network_resolve applies only with a network allowlist (network = [\"name\", …])",
            ));
        }
        Ok(())
    }
}
