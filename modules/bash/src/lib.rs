//! # toolhost-bash
//!
//! Shell commands for agents, with real limits: `bash`, `bash_output`,
//! `bash_kill`. See the README for what is a policy and what is not a
//! sandbox.
//!
//! How it fits together: [`tools`] parse input and shape results;
//! [`policy`] checks commands on a real parse; [`process`] starts each
//! command under a reaper (forked per command by a small zygote program the
//! mount starts with `posix_spawn`; the host itself never forks) that ends
//! whatever the command left running when its call ends (with the sandbox
//! off, a command that kills its own reaper escapes it: see the README);
//! [`sandbox`] adds the OS walls (namespaces, Landlock, seccomp,
//! no_new_privs, dropped capabilities, a minimal `/dev`, a pids cgroup) and
//! reports which hold;
//! [`runner`] streams output into bounded [`output`] buffers and ends the
//! tree with SIGTERM then SIGKILL; [`jobs`] keeps background jobs.

#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
pub mod config;
pub mod env;
pub mod jobs;
pub mod netproxy;
pub mod output;
pub mod policy;
pub mod process;
pub mod runner;
pub mod sandbox;
pub mod session_end;
pub mod shared_job;
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
    let mut module = Module::new(
        config,
        coordinator.state_dir(),
        coordinator.working_dir(),
        coordinator.plan_file(),
        coordinator.protected(),
    )
    .map_err(MountError::new)?;
    if let Some(proxy) = &mut module.netproxy {
        coordinator.contribute_events(&[netproxy::log::REFUSED_EVENT]);
        proxy.report_to(netproxy::log::reporter(coordinator.clone()));
    }
    if let Err(e) = report_sandbox(coordinator, &module) {
        // The mount fails: its (empty) temp root goes with it.
        let _ = std::fs::remove_dir(module.sandbox.tmp_root());
        return Err(e);
    }
    let module = Arc::new(module);
    coordinator.register(Bash {
        module: module.clone(),
        coordinator: coordinator.clone(),
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
    session_end::register(coordinator, module.clone());
    let log = coordinator.clone();
    let tmp_root = module.sandbox.tmp_root().to_path_buf();
    Ok(Cleanup::new(move || {
        let jobs = module.jobs.describe();
        if !jobs.is_empty() {
            log.log(
                Level::Info,
                format!("bash: ending {} background job(s)", jobs.len()),
            );
        }
        module.jobs.shutdown();
        module.launcher.shutdown();
        // Empty once every call and job has ended (each removes its own).
        let _ = std::fs::remove_dir(&tmp_root);
    }))
}

/// The event a module emits at mount with a per-layer (or per-feature)
/// report; `toolhost check` prints it. Payload: `{"title": …, "items":
/// [{"name", "state": "active"|"unavailable"|"off", "detail"}]}`.
pub const REPORT_EVENT: &str = "module:report";

/// Tells the host which sandbox layers hold; with `sandbox_required`, an
/// unavailable layer fails the mount.
fn report_sandbox(coordinator: &Coordinator, module: &Module) -> Result<(), MountError> {
    let report = module.sandbox.report();
    coordinator.emit(
        REPORT_EVENT,
        &serde_json::json!({ "title": "shell sandbox", "items": report }),
    );
    for item in report.iter().filter(|r| r.detail.contains("NOT hidden")) {
        coordinator.log(Level::Warn, format!("bash: {}: {}", item.name, item.detail));
    }
    let missing = module.sandbox.unavailable();
    if missing.is_empty() {
        let active: Vec<&str> = report
            .iter()
            .filter(|r| r.state == "active")
            .map(|r| r.name.as_str())
            .collect();
        if module.sandbox.is_on() {
            coordinator.log(
                Level::Info,
                format!("bash: sandbox layers active: {}", active.join(", ")),
            );
        }
        return Ok(());
    }
    let list: Vec<String> = missing
        .iter()
        .map(|r| format!("{}: {}", r.name, r.detail))
        .collect();
    if module.config.sandbox_required {
        return Err(MountError::new(format!(
            "bash: sandbox_required = true but these sandbox layers are unavailable on this system: {}. Run on a \
             kernel with them (and as root or with unprivileged user namespaces), or set sandbox_required = false \
             to run with the layers that hold",
            list.join("; ")
        )));
    }
    coordinator.log(
        Level::Warn,
        format!(
            "bash: sandbox layers unavailable here (commands run without them): {}",
            list.join("; ")
        ),
    );
    Ok(())
}
