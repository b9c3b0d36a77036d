//! The host: a plan's modules, mounted in order, their tools in a registry,
//! and cleanup in reverse order on exit.

pub mod session;

use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use crate::events::EventBus;
use crate::loader::MountedModule;
use crate::plan::Plan;
use crate::registry::{Registry, RegistryError};
use crate::tool::MountedTool;

/// What happened to one `[[tools]]` entry, for `check` and errors.
#[derive(Debug, Clone)]
pub struct ModuleReport {
    /// The entry's label (module name or file).
    pub label: String,
    /// The module's name and version, when it loaded.
    pub loaded: Option<(String, String)>,
    /// Its library file, when found.
    pub path: Option<std::path::PathBuf>,
    /// Names of the tools it mounted.
    pub tools: Vec<String>,
    /// Time to load and to mount.
    pub timings: (Duration, Duration),
    /// Why it failed, if it did.
    pub error: Option<String>,
    /// Where its tools run, when it loaded.
    pub source: Option<crate::tool::SourceKind>,
}

impl ModuleReport {
    /// A report for `label` with nothing known yet.
    fn new(label: String) -> Self {
        ModuleReport {
            label,
            loaded: None,
            path: None,
            tools: Vec::new(),
            timings: (Duration::ZERO, Duration::ZERO),
            error: None,
            source: None,
        }
    }
}

/// Why the plan's aliases or alias profiles could not be added.
#[derive(Debug, thiserror::Error)]
pub enum AliasError {
    /// A thread panicked while it held the registry.
    #[error("registry lock poisoned")]
    Poisoned,
    /// A plan alias names a tool that is not mounted, or a taken name.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// An alias profile definition is malformed.
    #[error(transparent)]
    Profile(#[from] crate::alias::ProfileError),
    /// A policy rule names a profile-only name, which would match nothing.
    #[error(
        "[policy.tools.{name}] names the alias profile '{name}'; rules apply to the tool it runs: \
         write it as [policy.tools.{tool}]"
    )]
    RuleOnProfile {
        /// The name the rule uses.
        name: String,
        /// The tool the profile runs.
        tool: String,
    },
}

/// A plan that could not be loaded.
#[derive(Debug, thiserror::Error)]
#[error("{}", .0.join("\n"))]
pub struct LoadError(pub Vec<String>);

/// A loaded plan.
pub struct Host {
    /// The plan it was loaded from.
    pub plan: Plan,
    /// Events from the pipeline and the modules.
    pub events: Arc<EventBus>,
    registry: Arc<RwLock<Registry>>,
    modules: Mutex<Vec<MountedModule>>,
    /// Told when a source's tool list changed (after the registry was updated).
    tools_changed: Arc<Mutex<Vec<ToolsObserver>>>,
    /// The audit log (issue #16: opened at load, so a log that cannot be
    /// written fails `check` and the mount).
    pub audit: Option<Arc<crate::audit::AuditLog>>,
}

/// Called after the registry took a source's new tool list.
pub type ToolsObserver = Arc<dyn Fn() + Send + Sync>;

impl Host {
    /// Loads every module of the plan; the first failure unloads what was
    /// mounted (in reverse order) and returns the error.
    pub fn open(plan: Plan) -> Result<Host, LoadError> {
        let (host, reports) = Host::load(plan, false);
        let errors: Vec<String> = reports.into_iter().filter_map(|r| r.error).collect();
        if errors.is_empty() {
            Ok(host)
        } else {
            host.shutdown();
            Err(LoadError(errors))
        }
    }

    /// Loads the plan's modules in order. With `keep_going`, a failed module
    /// is reported and the rest still load (for `check`).
    pub fn load(plan: Plan, keep_going: bool) -> (Host, Vec<ModuleReport>) {
        crate::governance::redact::guard_logs(&plan.host.redact);
        let host = Host {
            events: EventBus::new(),
            registry: Arc::new(RwLock::new(Registry::default())),
            modules: Mutex::new(Vec::new()),
            tools_changed: Arc::default(),
            audit: None,
            plan,
        };
        let mut reports = Vec::new();
        let mut host = host;
        // Made before anything writes there, private to this user.
        let state_dir = host.plan.state_dir();
        if let Err(e) = crate::plan::state_dir::create(&state_dir) {
            let mut report = ModuleReport::new("[host] state_dir".into());
            report.error = Some(format!(
                "cannot create the state folder {}: {e}",
                state_dir.display()
            ));
            reports.push(report);
            if !keep_going {
                return (host, reports);
            }
        }
        match crate::audit::sink_for(&host.plan.host).and_then(|sink| {
            let id = crate::state::config::host_id(&host.plan.host);
            sink.map(|s| crate::audit::AuditLog::open(s, host.plan.host.audit_inputs, &id))
                .transpose()
        }) {
            Ok(log) => host.audit = log.map(Arc::new),
            Err(e) => {
                let mut report = ModuleReport::new("[host] audit_log".into());
                report.error = Some(e.to_string());
                reports.push(report);
                if !keep_going {
                    return (host, reports);
                }
            }
        }
        for entry in &host.plan.tools {
            let mut report = ModuleReport::new(entry.label());
            match crate::source::mount(entry, &host.plan, &host.events) {
                Ok(module) => {
                    report.loaded = Some((module.info.name.clone(), module.info.version.clone()));
                    report.path = Some(module.info.path.clone());
                    report.source = Some(module.info.source);
                    report.timings = (module.load_time, module.mount_time);
                    report.tools = module.tools.iter().map(|t| t.spec.name.clone()).collect();
                    let added = host
                        .registry
                        .write()
                        .map_err(|_| AliasError::Poisoned)
                        .and_then(|mut r| r.add_all(&module.tools).map_err(AliasError::from));
                    match added {
                        Ok(()) => {
                            host.watch(&module);
                            host.push_module(module)
                        }
                        // `module` drops here: its cleanup runs
                        Err(e) => report.error = Some(e.to_string()),
                    }
                }
                Err(e) => report.error = Some(e.to_string()),
            }
            let failed = report.error.is_some();
            reports.push(report);
            if failed && !keep_going {
                return (host, reports);
            }
        }
        if let Err(e) = host.add_plan_aliases() {
            let mut report = ModuleReport::new("[policy]".into());
            report.error = Some(e.to_string());
            reports.push(report);
        }
        if let Err(e) = host.add_alias_profiles() {
            let mut report = ModuleReport::new("[[alias_profiles]]".into());
            report.error = Some(e.to_string());
            reports.push(report);
        }
        for tool in host.tools() {
            if let Some(problem) = crate::plan::version_pin::pin_problem(&host.plan, &tool) {
                let mut report = ModuleReport::new("[policy]".into());
                report.error = Some(problem);
                reports.push(report);
            }
        }
        (host, reports)
    }

    /// Keeps the registry in step with a source whose tool list changes
    /// (an MCP server's `tools/list_changed`): its old tools are replaced
    /// by the new list, all or none.
    fn watch(&self, module: &MountedModule) {
        let Some(watch) = &module.info.watch else { return };
        let registry = Arc::downgrade(&self.registry);
        let info = Arc::downgrade(&module.info);
        let policy = self.plan.policy.tools.clone();
        let observers = Arc::downgrade(&self.tools_changed);
        watch.0.on_change(Arc::new(move |tools: Vec<Arc<MountedTool>>| {
            let (Some(registry), Some(info)) = (registry.upgrade(), info.upgrade()) else {
                return;
            };
            let Ok(mut registry) = registry.write() else {
                return;
            };
            let old = registry.tools_of(&info);
            registry.remove_module(&info);
            let tools = match registry.add_all(&tools) {
                Ok(()) => tools,
                Err(e) => {
                    tracing::error!(module = %info.name, "kept the old tool list: {e}");
                    let _ = registry.add_all(&old);
                    old
                }
            };
            // Removing the old tools dropped the plan's aliases for them:
            // give the new list's tools theirs again.
            for tool in &tools {
                let Some(rule) = policy.get(&tool.spec.name) else {
                    continue;
                };
                for alias in &rule.aliases {
                    if let Err(e) = registry.add_alias(alias, &tool.spec.name) {
                        tracing::error!(module = %info.name, "after the tool list changed: {e}");
                    }
                }
            }
            drop(registry);
            let observers = observers
                .upgrade()
                .and_then(|o| o.lock().ok().map(|o| o.clone()))
                .unwrap_or_default();
            for observer in observers {
                observer();
            }
        }));
    }

    /// Calls `observer` whenever a source's tool list changed and the
    /// registry holds the new one (so `toolhost serve` can tell its
    /// clients `notifications/tools/list_changed`).
    pub fn on_tools_changed(&self, observer: ToolsObserver) {
        if let Ok(mut observers) = self.tools_changed.lock() {
            observers.push(observer);
        }
    }

    fn push_module(&self, module: MountedModule) {
        if let Ok(mut modules) = self.modules.lock() {
            modules.push(module);
        }
    }

    fn add_plan_aliases(&self) -> Result<(), AliasError> {
        let mut registry = self.registry.write().map_err(|_| AliasError::Poisoned)?;
        for (tool, rule) in &self.plan.policy.tools {
            for alias in &rule.aliases {
                registry.add_alias(alias, tool)?;
            }
        }
        Ok(())
    }

    /// The built-in families' profiles, then the plan's (a plan profile
    /// replaces a built-in one of the same name). A profile whose tool is
    /// not mounted is skipped; a malformed plan profile is an error.
    fn add_alias_profiles(&self) -> Result<(), AliasError> {
        let plan_names: std::collections::HashSet<&str> =
            self.plan.alias_profiles.iter().map(|p| p.name.as_str()).collect();
        let mut profiles: Vec<crate::alias::Profile> = crate::alias::builtin()
            .iter()
            .filter(|p| !plan_names.contains(p.name()))
            .map(crate::alias::Profile::builtin)
            .collect();
        // A plan's profile is checked and compiled now, so that a broken
        // one fails the load; a built-in one is read when first used.
        for def in &self.plan.alias_profiles {
            profiles.push(crate::alias::Profile::new(def.clone())?);
        }
        let mut registry = self.registry.write().map_err(|_| AliasError::Poisoned)?;
        let colliding = &self.plan.host.colliding_families;
        for profile in profiles {
            let (alias, tool) = (profile.name().to_string(), profile.tool().to_string());
            let added = registry.add_profile(profile, colliding);
            tracing::debug!(%alias, %tool, ?added, "alias profile");
        }
        // Policy rules match the canonical tool's names; a rule written for
        // a profile-only name (MultiEdit, WebFetch) would silently match
        // nothing, so it is refused with the name to use.
        for name in self.plan.policy.tools.keys() {
            let Some(resolved) = registry.resolve(name) else {
                continue;
            };
            let profile_only = resolved.profile.is_some() && !resolved.alternative;
            if profile_only && !resolved.tool.names().any(|n| n == name) {
                return Err(AliasError::RuleOnProfile {
                    name: name.clone(),
                    tool: resolved.tool.name().to_string(),
                });
            }
        }
        Ok(())
    }

    /// What a called name refers to (tool and profile), for the pipeline.
    pub fn resolve(&self, name: &str) -> Option<crate::registry::Resolved> {
        self.registry.read().ok().and_then(|r| r.resolve(name))
    }

    /// Every alias with its tool and profile, for `list_aliases`.
    #[allow(clippy::type_complexity)]
    pub fn aliases(&self) -> Vec<(String, Arc<MountedTool>, Option<Arc<crate::alias::Profile>>)> {
        self.registry.read().map(|r| r.aliases()).unwrap_or_default()
    }

    /// The tool a name or alias refers to.
    pub fn tool(&self, name: &str) -> Option<Arc<MountedTool>> {
        self.registry.read().ok().and_then(|r| r.get(name).cloned())
    }

    /// Names close to `name`, for "did you mean".
    pub fn suggest(&self, name: &str) -> Vec<String> {
        self.registry.read().map(|r| r.suggest(name)).unwrap_or_default()
    }

    /// Every tool, sorted by name.
    pub fn tools(&self) -> Vec<Arc<MountedTool>> {
        self.registry.read().map(|r| r.tools()).unwrap_or_default()
    }

    /// Drops each module's tools and runs its cleanup, in reverse mount
    /// order. Idempotent; also runs on drop.
    pub fn shutdown(&self) {
        // This process's session ends before the modules do.
        crate::session::end_process(self);
        let mut modules = match self.modules.lock() {
            Ok(mut m) => std::mem::take(&mut *m),
            Err(_) => return,
        };
        while let Some(mut module) = modules.pop() {
            if let Ok(mut registry) = self.registry.write() {
                registry.remove_module(&module.info);
            }
            module.cleanup();
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.shutdown();
    }
}
