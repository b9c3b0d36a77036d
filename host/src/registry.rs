//! Tools by name and alias, with suggestions for names that do not exist.

use std::collections::HashMap;
use std::sync::Arc;

use crate::tool::{ModuleInfo, MountedTool};

/// Every mounted tool, reachable by name or alias.
#[derive(Default)]
pub struct Registry {
    tools: HashMap<String, Arc<MountedTool>>,
    aliases: HashMap<String, String>,
}

impl Registry {
    /// Adds a module's tools, all or none: a name or alias that is already
    /// taken fails the whole module, naming both modules.
    pub fn add_all(&mut self, tools: &[Arc<MountedTool>]) -> Result<(), String> {
        let mut seen: HashMap<&str, &str> = HashMap::new();
        for tool in tools {
            for name in tool.names() {
                if let Some(owner) = self.owner_of(name) {
                    return Err(format!(
                        "tool name '{name}' is registered by both module '{owner}' and module '{}'; \
                         give one of them a `prefix` in the plan",
                        tool.module.name
                    ));
                }
                if seen.insert(name, &tool.spec.name).is_some() {
                    return Err(format!(
                        "module '{}' registers the name '{name}' twice",
                        tool.module.name
                    ));
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
    pub fn add_alias(&mut self, alias: &str, tool: &str) -> Result<(), String> {
        let target = self
            .canonical(tool)
            .ok_or_else(|| format!("[policy.tools.{tool}] gives aliases for a tool that is not mounted"))?;
        if let Some(owner) = self.owner_of(alias) {
            if self.canonical(alias) != Some(target.clone()) {
                return Err(format!(
                    "alias '{alias}' for '{tool}' is already a name of module '{owner}'"
                ));
            }
            return Ok(());
        }
        self.aliases.insert(alias.to_string(), target);
        Ok(())
    }

    /// The tool a name or alias refers to.
    pub fn get(&self, name: &str) -> Option<&Arc<MountedTool>> {
        self.tools
            .get(name)
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
