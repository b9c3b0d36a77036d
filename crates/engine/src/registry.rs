//! Tools by name and alias, with suggestions for names that do not exist.

use std::collections::HashMap;
use std::sync::Arc;

use crate::alias::Profile;
use crate::tool::{ModuleInfo, MountedTool};

/// A name that cannot be added to the registry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// Another module already has the name.
    #[error(
        "tool name '{name}' is registered by both module '{owner}' and module '{module}'; \
         give one of them a `prefix` in the plan"
    )]
    Taken {
        /// The name.
        name: String,
        /// The module that has it.
        owner: String,
        /// The module that asked for it.
        module: String,
    },
    /// One module registers the name twice.
    #[error("module '{module}' registers the name '{name}' twice")]
    Twice {
        /// The module.
        module: String,
        /// The name.
        name: String,
    },
    /// A plan alias for a tool that is not mounted.
    #[error("[policy.tools.{tool}] gives aliases for a tool that is not mounted")]
    NotMounted {
        /// The tool the plan names.
        tool: String,
    },
    /// A plan alias that is another module's name.
    #[error("alias '{alias}' for '{tool}' is already a name of module '{owner}'")]
    AliasTaken {
        /// The alias.
        alias: String,
        /// The tool it was meant for.
        tool: String,
        /// The module whose name it is.
        owner: String,
    },
}

/// Every mounted tool, reachable by name, alias or alias profile.
#[derive(Default)]
pub struct Registry {
    tools: HashMap<String, Arc<MountedTool>>,
    aliases: HashMap<String, String>,
    /// Alias profiles by their name: (canonical tool name, profile).
    profiles: HashMap<String, (String, Arc<Profile>)>,
    /// Profiles that share a canonical tool's name (Amp's `edit_file`),
    /// accepted under that name as a second shape when the plan selects
    /// their family (`[host] colliding_families`).
    shapes: HashMap<String, Arc<Profile>>,
}

/// What a called name refers to.
pub struct Resolved {
    /// The canonical tool that runs.
    pub tool: Arc<MountedTool>,
    /// The profile whose schema the caller used, if any.
    pub profile: Option<Arc<Profile>>,
    /// The profile is a second shape of a canonical name: the canonical
    /// schema is tried first.
    pub alternative: bool,
}

/// What happened to one alias profile at mount.
#[derive(Debug, PartialEq, Eq)]
pub enum ProfileAdded {
    /// Callable under its name.
    Added,
    /// Its canonical tool is not mounted (web_search without a backend).
    ToolMissing,
    /// Its name is a canonical tool's and its family is not selected.
    NameTaken,
}

impl Registry {
    /// Adds a module's tools, all or none: a name or alias that is already
    /// taken fails the whole module, naming both modules.
    pub fn add_all(&mut self, tools: &[Arc<MountedTool>]) -> Result<(), RegistryError> {
        let mut seen: HashMap<&str, &str> = HashMap::new();
        for tool in tools {
            for name in tool.names() {
                if let Some(owner) = self.owner_of(name) {
                    return Err(RegistryError::Taken {
                        name: name.clone(),
                        owner,
                        module: tool.module.name.clone(),
                    });
                }
                if seen.insert(name, &tool.spec.name).is_some() {
                    return Err(RegistryError::Twice {
                        module: tool.module.name.clone(),
                        name: name.clone(),
                    });
                }
            }
        }
        for tool in tools {
            for alias in &tool.spec.aliases {
                self.aliases.insert(alias.clone(), tool.spec.name.clone());
            }
            self.tools.insert(tool.spec.name.clone(), tool.clone());
        }
        Ok(())
    }

    /// Adds a plan alias for an existing tool.
    pub fn add_alias(&mut self, alias: &str, tool: &str) -> Result<(), RegistryError> {
        let target = self.canonical(tool).ok_or_else(|| RegistryError::NotMounted {
            tool: tool.to_string(),
        })?;
        if let Some(owner) = self.owner_of(alias) {
            if self.canonical(alias) != Some(target.clone()) {
                return Err(RegistryError::AliasTaken {
                    alias: alias.to_string(),
                    tool: tool.to_string(),
                    owner,
                });
            }
            return Ok(());
        }
        self.aliases.insert(alias.to_string(), target);
        Ok(())
    }

    /// Adds an alias profile. It wins over a plain alias of the same name
    /// (a module's `.alias("Bash")`); under a canonical tool's name it is
    /// a second shape only when `colliding_families` names its family.
    pub fn add_profile(&mut self, profile: Profile, colliding_families: &[String]) -> ProfileAdded {
        let Some(target) = self.canonical(profile.tool()) else {
            return ProfileAdded::ToolMissing;
        };
        let name = profile.name().to_string();
        if self.tools.contains_key(&name) {
            if !colliding_families.iter().any(|f| f == profile.family()) {
                return ProfileAdded::NameTaken;
            }
            self.shapes.insert(name, Arc::new(profile));
            return ProfileAdded::Added;
        }
        self.aliases.remove(&name);
        self.profiles.insert(name, (target, Arc::new(profile)));
        ProfileAdded::Added
    }

    /// What a called name refers to: the tool, and the profile whose
    /// schema the caller used.
    pub fn resolve(&self, name: &str) -> Option<Resolved> {
        if let Some(tool) = self.tools.get(name) {
            return Some(Resolved {
                tool: tool.clone(),
                profile: self.shapes.get(name).cloned(),
                alternative: true,
            });
        }
        if let Some((target, profile)) = self.profiles.get(name) {
            return self.tools.get(target).map(|tool| Resolved {
                tool: tool.clone(),
                profile: Some(profile.clone()),
                alternative: false,
            });
        }
        let tool = self.aliases.get(name).and_then(|target| self.tools.get(target))?;
        Some(Resolved {
            tool: tool.clone(),
            profile: None,
            alternative: false,
        })
    }

    /// Every alias whose tool is mounted, sorted by name, with its
    /// profile when it has one.
    pub fn aliases(&self) -> Vec<(String, Arc<MountedTool>, Option<Arc<Profile>>)> {
        let plain = self
            .aliases
            .iter()
            .filter_map(|(name, target)| Some((name.clone(), self.tools.get(target)?.clone(), None)));
        let profiled = self.profiles.iter().filter_map(|(name, (target, profile))| {
            Some((
                name.clone(),
                self.tools.get(target)?.clone(),
                Some(profile.clone()),
            ))
        });
        let mut all: Vec<_> = plain.chain(profiled).collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// The tool a name, alias or profile refers to.
    pub fn get(&self, name: &str) -> Option<&Arc<MountedTool>> {
        self.tools
            .get(name)
            .or_else(|| {
                self.profiles
                    .get(name)
                    .and_then(|(target, _)| self.tools.get(target))
            })
            .or_else(|| self.aliases.get(name).and_then(|target| self.tools.get(target)))
    }

    fn canonical(&self, name: &str) -> Option<String> {
        self.get(name).map(|t| t.spec.name.clone())
    }

    fn owner_of(&self, name: &str) -> Option<String> {
        self.get(name).map(|t| t.module.name.clone())
    }

    /// All tools, sorted by name.
    pub fn tools(&self) -> Vec<Arc<MountedTool>> {
        let mut all: Vec<_> = self.tools.values().cloned().collect();
        all.sort_by(|a, b| a.spec.name.cmp(&b.spec.name));
        all
    }

    /// Every tool of one mounted module.
    pub fn tools_of(&self, module: &Arc<ModuleInfo>) -> Vec<Arc<MountedTool>> {
        self.tools
            .values()
            .filter(|t| Arc::ptr_eq(&t.module, module))
            .cloned()
            .collect()
    }

    /// Removes every tool of one mounted module (at cleanup).
    pub fn remove_module(&mut self, module: &Arc<ModuleInfo>) {
        self.tools.retain(|_, t| !Arc::ptr_eq(&t.module, module));
        let tools = &self.tools;
        self.aliases.retain(|_, target| tools.contains_key(target));
    }

    /// Up to three existing names closest to `name`.
    pub fn suggest(&self, name: &str) -> Vec<String> {
        let wanted = name.to_lowercase();
        let mut scored: Vec<(f64, &str)> = self
            .tools
            .keys()
            .chain(self.aliases.keys())
            .chain(self.profiles.keys())
            .map(|candidate| {
                let lower = candidate.to_lowercase();
                let mut score = strsim::jaro_winkler(&wanted, &lower);
                if !wanted.is_empty() && (lower.contains(&wanted) || wanted.contains(&lower)) {
                    score = score.max(0.9);
                }
                (score, candidate.as_str())
            })
            .filter(|(score, _)| *score >= 0.75)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
        scored.into_iter().take(3).map(|(_, n)| n.to_string()).collect()
    }
}
