//! Mount plans: the TOML file that says which modules to load, with what
//! config, under which policy.
//!
//! Every key the host does not know is an error with file, line and column;
//! relative paths resolve against the plan file's folder.

pub mod control_plane;
mod discover;
mod entry_error;
mod env_expand;
pub mod limits;
mod mcp_error;
mod module_path;
pub mod oauth;
#[cfg(test)]
mod props;
mod ready;
pub mod schema;
pub mod state_config;
pub mod state_dir;
pub mod tasks;
pub mod telemetry;
pub mod trust;
pub mod ui;
pub mod version_pin;

use std::path::{Path, PathBuf};

use serde_json::Value;

pub use discover::{
    discover, user_config_dir, user_plan_file, Discovered, Origin, BUILT_IN_NAME, PROJECT_FILE,
};
pub use entry_error::{HookEntryProblem, ToolEntryProblem};
pub use env_expand::ExpandError;
pub use mcp_error::McpTableError;
pub use ready::{ready_plan, READY_PLANS};
pub use schema::{
    Decision, HookEntry, HookEvent, HookFailure, HostSection, IdempotencyTtl, Isolation, McpSource,
    PolicySection, ToolDiscovery, ToolRule, ToolsEntry,
};
pub use trust::TrustState;

/// A plan ready to load: parsed, checked, with paths made absolute.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The plan file.
    pub file: PathBuf,
    /// Host settings, paths absolute.
    pub host: HostSection,
    /// The `working_dir` tools resolve relative paths against (absolute).
    pub working_dir: PathBuf,
    /// Folders searched for modules, TOOLHOST_MODULE_PATH entries first;
    /// with no `host.module_path`, the binary's folder and
    /// `<exe dir>/../lib/toolhost` last.
    pub module_path: Vec<PathBuf>,
    /// Modules to mount, in order, with configs expanded to JSON.
    pub tools: Vec<ModuleEntry>,
    /// Policy rules.
    pub policy: PolicySection,
    /// Hooks, in plan order.
    pub hooks: Vec<HookEntry>,
    /// `[[alias_profiles]]`: the plan's own profiles (a built-in one of
    /// the same name is replaced).
    pub alias_profiles: Vec<crate::alias::ProfileDef>,
    /// Principals, grants and the host principal (issue #16).
    pub governance: crate::governance::Governance,
    /// `[[toolsets]]`, parsed.
    pub toolsets: Vec<crate::toolsets::Toolset>,
    /// `[[limits]]`, parsed (the engine's pipeline counts calls against them).
    pub limits: Vec<crate::governance::limits::Limit>,
    /// Secret files outside the state folder (a `serve --token-file`),
    /// protected like the state folder; see [`control_plane`].
    pub secret_files: Vec<PathBuf>,
    /// SHA-256 of each [pinned file](control_plane::pinned_files) as it
    /// was when the plan was loaded (and trusted): a hook whose program
    /// changed since is refused at run time.
    pub pins: std::collections::BTreeMap<PathBuf, String>,
}

/// One `[[tools]]` entry, ready to load.
#[derive(Debug, Clone)]
pub struct ModuleEntry {
    /// Position in the plan (for messages).
    pub index: usize,
    /// How to find the library.
    pub source: ModuleSource,
    /// Semver requirement on the module's version.
    pub version: Option<semver::VersionReq>,
    /// Namespace for the module's tool names.
    pub prefix: String,
    /// `[tools.config]` as JSON, `${ENV}` expanded.
    pub config: Value,
    /// At most this many of the module's calls run at once.
    pub max_concurrent: Option<usize>,
    /// Where the module's code runs (resolved: entry, else
    /// `host.default_isolation`, else by source; see [`default_isolation`]).
    pub isolation: Isolation,
    /// Address-space cap of an isolated worker, in MiB.
    pub memory_limit_mb: Option<u64>,
}

/// Where a module's library comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum ModuleSource {
    /// Found by name on the module path.
    Name(String),
    /// An explicit file.
    Path(PathBuf),
    /// An MCP server, `${ENV}` expanded.
    Mcp(McpSource),
}

/// The isolation of an entry that names none, when `host.default_isolation`
/// is unset: a module found by name on the module path is first-party (built
/// with the host, reviewed with it) and runs in-process, where calls are
/// cheapest; a library named by `path` is someone else's file and runs in a
/// worker process, so its crashes cost one call, not the host.
pub fn default_isolation(source: &ModuleSource) -> Isolation {
    match source {
        ModuleSource::Name(_) => Isolation::InProcess,
        ModuleSource::Path(_) | ModuleSource::Mcp(_) => Isolation::Process,
    }
}

impl ModuleEntry {
    /// A short label for messages: the name, or the file.
    pub fn label(&self) -> String {
        match &self.source {
            ModuleSource::Name(name) => name.clone(),
            ModuleSource::Path(path) => path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| path.display().to_string()),
            ModuleSource::Mcp(mcp) => match (&mcp.url, mcp.command.first()) {
                (Some(url), _) => format!("mcp:{url}"),
                (None, Some(program)) => format!(
                    "mcp:{}",
                    Path::new(program)
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_else(|| program.clone())
                ),
                (None, None) => "mcp".into(),
            },
        }
    }
}

/// A plan that cannot be used, with where and why.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The file could not be read.
    #[error("cannot read plan {file}: {source}")]
    Read {
        /// The plan file.
        file: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Syntax, unknown key or wrong type, located.
    #[error("{file}:{line}:{column}: {message}")]
    Syntax {
        /// The plan file.
        file: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// A value that parses but makes no sense.
    #[error("{file}: {message}")]
    Invalid {
        /// The plan file.
        file: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A `${VAR}` in a path or `[host]` value that cannot be expanded.
    #[error("{file}: {error}")]
    Env {
        /// The plan file.
        file: PathBuf,
        /// Which variable, and why.
        error: ExpandError,
    },
    /// A `[[tools]]` entry that cannot be used.
    #[error("{file}: [[tools]] #{entry}: {problem}")]
    Tool {
        /// The plan file.
        file: PathBuf,
        /// The entry's number, from 1.
        entry: usize,
        /// What is wrong.
        problem: ToolEntryProblem,
    },
    /// A `[[hooks]]` entry that cannot be used.
    #[error("{file}: [[hooks]] #{entry}: {problem}")]
    Hook {
        /// The plan file.
        file: PathBuf,
        /// The entry's number, from 1.
        entry: usize,
        /// What is wrong.
        problem: HookEntryProblem,
    },
    /// A `[tools.mcp]` table that cannot be used.
    #[error("{file}: {error}")]
    McpTable {
        /// The plan file.
        file: PathBuf,
        /// What is wrong, and in which entry.
        error: McpTableError,
    },
    /// A shared-state key of `[host]` that cannot be used.
    #[error("{file}: {error}")]
    State {
        /// The plan file.
        file: PathBuf,
        /// Which key, and why.
        error: crate::plan::state_config::ConfigError,
    },
    /// `[host.oauth]` cannot be used.
    #[error("{file}: {error}")]
    OAuth {
        /// The plan file.
        file: PathBuf,
        /// Which key, and why.
        error: crate::plan::oauth::OAuthConfigError,
    },
    /// A principal, grant, redaction pattern or version pin that cannot be
    /// used.
    #[error("{file}: {error}")]
    Governance {
        /// The plan file.
        file: PathBuf,
        /// Which entry, and why.
        error: crate::governance::GovernanceError,
    },
    /// `[[toolsets]]` (or a grant's `toolset`) cannot be used.
    #[error("{file}: {error}")]
    Toolsets {
        /// The plan file.
        file: PathBuf,
        /// Which entry, and why.
        error: crate::toolsets::ToolsetError,
    },
    /// A `[[limits]]` entry cannot be used.
    #[error("{file}: {error}")]
    Limits {
        /// The plan file.
        file: PathBuf,
        /// Which entry, and why.
        error: crate::governance::limits::LimitError,
    },
}

impl Plan {
    /// Reads and checks a plan file.
    pub fn load(file: &Path) -> Result<Plan, PlanError> {
        let text = std::fs::read_to_string(file).map_err(|source| PlanError::Read {
            file: file.to_path_buf(),
            source,
        })?;
        Plan::parse(&text, file)
    }

    /// Parses plan text as if read from `file` (for messages and relative paths).
    pub fn parse(text: &str, file: &Path) -> Result<Plan, PlanError> {
        let raw: schema::PlanFile = toml::from_str(text).map_err(|e| {
            let (line, column) = e
                .span()
                .map(|span| line_column(text, span.start))
                .unwrap_or((1, 1));
            PlanError::Syntax {
                file: file.to_path_buf(),
                line,
                column,
                message: e.message().trim().to_string(),
            }
        })?;
        let invalid = |message: String| PlanError::Invalid {
            file: file.to_path_buf(),
            message,
        };
        let env = |error| PlanError::Env {
            file: file.to_path_buf(),
            error,
        };
        let base = file
            .parent()
            .map(|p| {
                if p.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    p
                }
            })
            .unwrap_or(Path::new("."));
        let base = std::path::absolute(base)
            .map_err(|e| invalid(format!("cannot resolve the plan's folder: {e}")))?;
        let resolve = |p: &str| -> Result<PathBuf, PlanError> {
            let expanded = env_expand::expand_str(p).map_err(env)?;
            let expanded = expand_home(&expanded);
            Ok(normalize(&base.join(expanded)))
        };

        let working_dir = match &raw.host.working_dir {
            Some(dir) => resolve(dir)?,
            None => std::env::current_dir()
                .map_err(|e| invalid(format!("cannot read the current folder: {e}")))?,
        };
        let mut module_path: Vec<PathBuf> = std::env::var_os("TOOLHOST_MODULE_PATH")
            .map(|v| {
                std::env::split_paths(&v)
                    .filter(|p| !p.as_os_str().is_empty())
                    .collect()
            })
            .unwrap_or_default();
        for dir in &raw.host.module_path {
            module_path.push(resolve(dir)?);
        }
        if raw.host.module_path.is_empty() {
            module_path.extend(module_path::beside_exe());
        }

        let mut tools = Vec::with_capacity(raw.tools.len());
        for (index, entry) in raw.tools.iter().enumerate() {
            let which = format!("[[tools]] #{}", index + 1);
            let problem = |problem| PlanError::Tool {
                file: file.to_path_buf(),
                entry: index + 1,
                problem,
            };
            let source = match (&entry.module, &entry.path, &entry.mcp) {
                (None, None, Some(mcp)) => {
                    ModuleSource::Mcp(mcp_source(mcp, &which).map_err(|error| PlanError::McpTable {
                        file: file.to_path_buf(),
                        error,
                    })?)
                }
                (Some(name), None, None) => {
                    if name.is_empty()
                        || !name
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                    {
                        return Err(problem(ToolEntryProblem::ModuleName(name.clone())));
                    }
                    ModuleSource::Name(name.clone())
                }
                (None, Some(path), None) => ModuleSource::Path(resolve(path)?),
                (None, None, None) => return Err(problem(ToolEntryProblem::NoSource)),
                _ => return Err(problem(ToolEntryProblem::SeveralSources)),
            };
            let isolation = entry
                .isolation
                .or(raw.host.default_isolation)
                .unwrap_or_else(|| default_isolation(&source));
            if let ModuleSource::Mcp(_) = source {
                if entry.isolation == Some(Isolation::InProcess) || entry.memory_limit_mb.is_some() {
                    return Err(problem(ToolEntryProblem::McpIsolation));
                }
                if !entry.config.is_empty() || entry.version.is_some() {
                    return Err(problem(ToolEntryProblem::McpModuleKeys));
                }
            } else if entry.memory_limit_mb.is_some() && isolation == Isolation::InProcess {
                return Err(problem(ToolEntryProblem::MemoryInProcess));
            }
            if entry.memory_limit_mb == Some(0) {
                return Err(problem(ToolEntryProblem::MemoryZero));
            }
            let version = entry
                .version
                .as_deref()
                .map(|req| {
                    semver::VersionReq::parse(req).map_err(|error| {
                        problem(ToolEntryProblem::Version {
                            requirement: req.to_string(),
                            error,
                        })
                    })
                })
                .transpose()?;
            let config =
                serde_json::to_value(&entry.config).map_err(|e| problem(ToolEntryProblem::ConfigJson(e)))?;
            let config =
                env_expand::expand_value(config).map_err(|e| problem(ToolEntryProblem::ConfigEnv(e)))?;
            if entry.max_concurrent == Some(0) {
                return Err(problem(ToolEntryProblem::ConcurrencyZero));
            }
            tools.push(ModuleEntry {
                index,
                source,
                version,
                prefix: entry.prefix.clone().unwrap_or_default(),
                config,
                max_concurrent: entry.max_concurrent,
                isolation,
                memory_limit_mb: entry.memory_limit_mb,
            });
        }

        let mut host = raw.host;
        if let Some(log) = &host.audit_log {
            host.audit_log = Some(resolve(log)?.to_string_lossy().into_owned());
        }
        if let Some(dir) = &host.state_dir {
            host.state_dir = Some(resolve(dir)?.to_string_lossy().into_owned());
        }
        for value in [&mut host.state_url, &mut host.host_id].into_iter().flatten() {
            *value = env_expand::expand_str(value).map_err(env)?;
        }
        if let Some(oauth) = &host.oauth {
            oauth.check().map_err(|error| PlanError::OAuth {
                file: file.to_path_buf(),
                error,
            })?;
        }
        crate::plan::state_config::check(&host).map_err(|error| PlanError::State {
            file: file.to_path_buf(),
            error,
        })?;
        for (i, hook) in raw.hooks.iter().enumerate() {
            let problem = |problem| PlanError::Hook {
                file: file.to_path_buf(),
                entry: i + 1,
                problem,
            };
            if hook.command.is_empty() || hook.command[0].is_empty() {
                return Err(problem(HookEntryProblem::NoProgram));
            }
            if let Err(e) = globset::Glob::new(&hook.tools) {
                return Err(problem(HookEntryProblem::Glob(e)));
            }
        }
        if host.batch_concurrency == 0 {
            return Err(invalid("host.batch_concurrency must be at least 1".into()));
        }
        if host.max_output_bytes < 1024 {
            return Err(invalid("host.max_output_bytes must be at least 1024".into()));
        }
        if host.ui.max_sessions == 0 || host.ui.session_secs < 60 {
            return Err(invalid(
                "host.ui: max_sessions must be at least 1 and session_secs at least 60".into(),
            ));
        }

        for pattern in &host.always_on {
            if let Err(e) = globset::Glob::new(pattern) {
                return Err(invalid(format!("host.always_on: {e}")));
            }
        }
        let toolsets = crate::toolsets::parse(&raw.toolsets)
            .and_then(|t| crate::toolsets::expand_grants(&t, raw.grants).map(|g| (t, g)));
        let (toolsets, grants) = toolsets.map_err(|error| PlanError::Toolsets {
            file: file.to_path_buf(),
            error,
        })?;
        let governance = crate::governance::Governance::from_plan(
            raw.principals,
            &grants,
            host.principal.as_deref(),
            &host.redact,
        )
        .and_then(|governance| version_pin::check(&raw.policy).map(|()| governance))
        .map_err(|error| PlanError::Governance {
            file: file.to_path_buf(),
            error,
        })?;
        if let Some(unknown) = host.metrics.principals.iter().find(|p| !governance.knows(p)) {
            return Err(invalid(format!(
                "host.metrics.principals: '{unknown}' is neither a [[principals]] entry nor [host] principal ('{}')",
                governance.host_principal
            )));
        }
        // A misspelt operator would lock everyone out of the page unseen.
        if let Some(unknown) = host.ui.operators.iter().find(|o| !governance.knows(o)) {
            return Err(invalid(format!(
                "host.ui.operators names '{unknown}', which is neither a [[principals]] name nor \
                 [host] principal ('{}')",
                governance.host_principal
            )));
        }
        let limits = crate::governance::limits::parse(&raw.limits).map_err(|error| PlanError::Limits {
            file: file.to_path_buf(),
            error,
        })?;
        let mut plan = Plan {
            file: file.to_path_buf(),
            host,
            working_dir,
            module_path,
            tools,
            policy: raw.policy,
            hooks: raw.hooks,
            alias_profiles: raw.alias_profiles,
            governance,
            toolsets,
            limits,
            secret_files: Vec::new(),
            pins: Default::default(),
        };
        plan.pin_files();
        Ok(plan)
    }

    /// The folder for state (idempotency store, tokens, module scratch):
    /// `host.state_dir`, else the user's state folder for this plan
    /// (see [`state_dir::default_for`]), outside the workspace.
    pub fn state_dir(&self) -> PathBuf {
        match &self.host.state_dir {
            Some(dir) => PathBuf::from(dir),
            None => state_dir::default_for(&self.file),
        }
    }

    /// The plan's folder (absolute).
    pub fn dir(&self) -> PathBuf {
        let dir = self.file.parent().unwrap_or(Path::new("."));
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        normalize(&std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()))
    }

    /// Hashes the [pinned files](control_plane::pinned_files) into
    /// [`Plan::pins`]; a file that cannot be read is pinned as missing.
    pub fn pin_files(&mut self) {
        self.pins = control_plane::pinned_files(self)
            .into_iter()
            .map(|file| {
                let hash = trust::file_sha256(&file).unwrap_or_else(|_| trust::MISSING.to_string());
                (file, hash)
            })
            .collect();
    }
}

/// `[tools.mcp]` checked (a command or a URL, not both) with `${ENV}`
/// expanded in its command, env and headers.
fn mcp_source(mcp: &McpSource, which: &str) -> Result<McpSource, McpTableError> {
    let which_ = || which.to_string();
    let expand = |s: &str| {
        env_expand::expand_str(s).map_err(|error| McpTableError::Expand {
            which: which_(),
            error,
        })
    };
    match (mcp.command.is_empty(), &mcp.url) {
        (false, Some(_)) => return Err(McpTableError::Both { which: which_() }),
        (true, None) => return Err(McpTableError::Neither { which: which_() }),
        _ => {}
    }
    if mcp.command.first().is_some_and(|p| p.is_empty()) {
        return Err(McpTableError::NoProgram { which: which_() });
    }
    if let Some(url) = &mcp.url {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(McpTableError::Scheme {
                which: which_(),
                url: url.clone(),
            });
        }
    }
    if mcp.url.is_none() && !mcp.headers.is_empty() {
        return Err(McpTableError::HeadersWithoutUrl { which: which_() });
    }
    if mcp.url.is_some() && !mcp.env.is_empty() {
        return Err(McpTableError::EnvWithoutCommand { which: which_() });
    }
    let expand_map = |map: &std::collections::BTreeMap<String, String>| {
        map.iter()
            .map(|(k, v)| Ok((k.clone(), expand(v)?)))
            .collect::<Result<_, McpTableError>>()
    };
    Ok(McpSource {
        command: mcp.command.iter().map(|s| expand(s)).collect::<Result<_, _>>()?,
        env: expand_map(&mcp.env)?,
        url: mcp.url.as_deref().map(expand).transpose()?,
        headers: expand_map(&mcp.headers)?,
        elicitation: mcp.elicitation,
    })
}

/// 1-based line and column of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1;
    (line, column)
}

/// `~` and `~/x` to the home folder.
fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix('~'), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
            PathBuf::from(home).join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(path),
    }
}

/// Removes `.` and resolves `..` lexically. Plans name folders that may not
/// exist yet and batch keys name files that may not exist yet, so
/// `canonicalize` is not an option for either. One engine with the SDK's
/// protected-path check, so both read a path the same way.
pub use toolhost_core::protected::normalize;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_key_is_located() {
        let err = Plan::parse("[host]\nbogus = 1\n", Path::new("/tmp/p.toml")).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("/tmp/p.toml:2:1: "), "{text}");
        assert!(text.contains("bogus"), "{text}");
    }

    #[test]
    fn wrong_type_is_located() {
        let err = Plan::parse("[host]\ndefault_timeout_secs = \"soon\"\n", Path::new("p.toml")).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("p.toml:2:24: "), "{text}");
    }

    #[test]
    fn relative_paths_resolve_against_the_plan() {
        let plan = Plan::parse(
            "[host]\nworking_dir = \"..\"\nmodule_path = [\"lib\"]\n[[tools]]\npath = \"x/liba.so\"\n",
            Path::new("/srv/plans/p.toml"),
        )
        .unwrap();
        assert_eq!(plan.working_dir, PathBuf::from("/srv"));
        assert!(plan.module_path.ends_with(&[PathBuf::from("/srv/plans/lib")]));
        assert_eq!(
            plan.tools[0].source,
            ModuleSource::Path("/srv/plans/x/liba.so".into())
        );
    }

    #[test]
    fn isolation_defaults_by_source_and_the_plan_overrides() {
        let plan = Plan::parse(
            "[[tools]]\nmodule = \"a\"\n[[tools]]\npath = \"b.so\"\n\
             [[tools]]\npath = \"c.so\"\nisolation = \"in-process\"\n",
            Path::new("/p/p.toml"),
        )
        .unwrap();
        let got: Vec<_> = plan.tools.iter().map(|t| t.isolation).collect();
        assert_eq!(
            got,
            [Isolation::InProcess, Isolation::Process, Isolation::InProcess]
        );
        let plan = Plan::parse(
            "[host]\ndefault_isolation = \"process\"\n[[tools]]\nmodule = \"a\"\n",
            Path::new("/p/p.toml"),
        )
        .unwrap();
        assert_eq!(plan.tools[0].isolation, Isolation::Process);
    }

    #[test]
    fn mcp_sources_are_checked_and_expanded() {
        std::env::set_var("TOOLHOST_TEST_MCP_TOKEN", "s3cret");
        let plan = Plan::parse(
            "[[tools]]\n[tools.mcp]\nurl = \"http://127.0.0.1:9/mcp\"\n\
             headers = { Authorization = \"Bearer ${TOOLHOST_TEST_MCP_TOKEN}\" }\n",
            Path::new("p.toml"),
        )
        .unwrap();
        match &plan.tools[0].source {
            ModuleSource::Mcp(mcp) => {
                assert_eq!(mcp.headers["Authorization"], "Bearer s3cret")
            }
            other => panic!("{other:?}"),
        }
        for (bad, says) in [
            ("[tools.mcp]\n", "needs `command"),
            ("[tools.mcp]\nurl = \"ftp://x\"\n", "must start with http"),
            ("[tools.mcp]\ncommand = [\"\"]\n", "needs a program"),
            (
                "memory_limit_mb = 5\n[tools.mcp]\ncommand = [\"x\"]\n",
                "its own process",
            ),
        ] {
            let err = Plan::parse(&format!("[[tools]]\n{bad}"), Path::new("p.toml")).unwrap_err();
            assert!(err.to_string().contains(says), "{bad}: {err}");
        }
        let err =
            Plan::parse("[[tools]]\n[tools.mcp]\nurl = \"ftp://x\"\n", Path::new("p.toml")).unwrap_err();
        assert!(
            matches!(&err, PlanError::McpTable { error: McpTableError::Scheme { url, .. }, .. } if url == "ftp://x"),
            "{err}"
        );
    }

    #[test]
    fn module_and_path_are_exclusive() {
        let err = Plan::parse("[[tools]]\nmodule = \"a\"\npath = \"b\"\n", Path::new("p.toml")).unwrap_err();
        assert!(err.to_string().contains("exactly one of"));
        assert!(
            matches!(
                err,
                PlanError::Tool {
                    entry: 1,
                    problem: ToolEntryProblem::SeveralSources,
                    ..
                }
            ),
            "{err}"
        );
    }
}
