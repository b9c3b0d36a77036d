//! Sources of tools: one plan entry becomes a mounted module from a
//! library loaded into the host, a library in a worker process, or a
//! mounted MCP server. The one place that picks between them, above all
//! three, so that none of them needs to know the others.

pub mod mcp;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use crate::events::EventBus;
use crate::loader::{self, locate, ModuleError, MountedModule};
use crate::plan::{Isolation, ModuleEntry, ModuleSource, Plan};

/// Loads and mounts one plan entry from whichever source it names.
pub fn mount(entry: &ModuleEntry, plan: &Plan, events: &Arc<EventBus>) -> Result<MountedModule, ModuleError> {
    let started = Instant::now();
    let path: PathBuf = match &entry.source {
        ModuleSource::Name(name) => locate::find(name, &plan.module_path)?,
        ModuleSource::Path(path) => {
            locate::exists(path)?;
            path.clone()
        }
        ModuleSource::Mcp(mcp) => return Ok(mcp::mount(entry, mcp, plan, events)?),
    };
    if entry.isolation == Isolation::Process {
        return crate::isolate::mount(entry, plan, events, &path);
    }
    loader::mount_library(entry, plan, events, &path, started)
}
