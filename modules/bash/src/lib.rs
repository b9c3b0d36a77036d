//! # toolhost-bash
//!
//! Shell commands for agents, with real limits: `bash`, `bash_output`,
//! `bash_kill`. See the README for what is a policy and what is not a
//! sandbox.
//!
//! How it fits together: [`tools`] parse input and shape results;
//! [`policy`] checks commands on a real parse; [`process`] starts each
//! command under a child subreaper (cloned, sharing the host's memory) so
//! no process can leave its tree;
//! [`runner`] streams output into bounded [`output`] buffers and ends the
//! tree with SIGTERM then SIGKILL; [`jobs`] keeps background jobs.

#![warn(missing_docs)]
pub mod config;
pub mod env;
pub mod jobs;
pub mod output;
pub mod policy;
pub mod process;
pub mod runner;
pub mod slots;
pub mod state;
pub mod tools;

use std::sync::Arc;

use toolhost_core::{Cleanup, Coordinator, Level, MountError};

use config::Config;
use state::Module;
use tools::bash::Bash;
use tools::kill::BashKill;
use tools::output::BashOutput;

toolhost_core::export_module! {
    name: "bash",
    description: "Shell commands with timeouts, bounded output, a clean environment and background jobs",
    mount: mount,
}

/// Registers the tools; the cleanup ends every background job.
pub fn mount(coordinator: &Coordinator, config: Config) -> Result<Cleanup, MountError> {
    config.validate()?;
    let module = Arc::new(Module::new(config, coordinator.state_dir()));
    coordinator.register(Bash {
        module: module.clone(),
    })?;
    coordinator.register(BashOutput {
        module: module.clone(),
    })?;
    coordinator.register(BashKill {
        module: module.clone(),
    })?;
    if module.policy.is_active() {
        coordinator.log(
            Level::Info,
            "bash: command policy active (allowed_commands/denied_commands); it is a policy, not a sandbox",
        );
    }
    let log = coordinator.clone();
    Ok(Cleanup::new(move || {
        let jobs = module.jobs.describe();
        if !jobs.is_empty() {
            log.log(
                Level::Info,
                format!("bash: ending {} background job(s)", jobs.len()),
            );
        }
        module.jobs.shutdown();
    }))
}
