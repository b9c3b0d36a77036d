//! `mount.*`: mount with the given config, refuse a bad one without
//! panicking, clean up, mount again, and mount in the real host.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use toolhost_core::abi::ModuleRef;

use crate::validate::check::{names as n, CheckResult, Verdict};
use crate::validate::protocol::{Event, Job};
use crate::validate::worker::session::{CleanupTimedOut, MountError};
use crate::validate::worker::{library, logs, session, sink::Sink};

/// The checks of the mount group, in order.
pub const CHECKS: [&str; 5] = [
    n::MOUNT_MOUNT,
    n::MOUNT_CLEANUP,
    n::MOUNT_REMOUNT,
    n::MOUNT_BAD_CONFIG,
    n::MOUNT_HOST,
];

/// How long a cleanup may take.
const CLEANUP_BOUND: Duration = Duration::from_secs(10);

/// Configs no module should take silently as meaningful; each must give a
/// clear error or be accepted, never a panic.
fn bad_configs() -> [Value; 3] {
    [
        json!(42),
        json!(["validate-module: not a config"]),
        json!({ "validate_module_unknown_key": { "nested": [1, 2, 3] } }),
    ]
}

/// The library did not load; the loading checks say why in full. A single
/// struct: every caller skips or fails its check with this message.
#[derive(Debug, thiserror::Error)]
#[error("the library does not load: {}", .failure.as_deref().unwrap_or("see the loading checks"))]
pub struct NotLoaded {
    /// The first failing loading check's message, if one failed.
    pub failure: Option<String>,
}

/// Opens the library quietly (its checks belong to the load group).
pub fn open_module(job: &Job) -> Result<(ModuleRef, String), NotLoaded> {
    let mut failure = None;
    let module = library::open(&job.library, &mut |r| {
        if r.outcome == crate::validate::check::Outcome::Fail {
            failure = Some(r.message);
        }
    });
    let module = module.ok_or(NotLoaded { failure })?;
    let text = (module.manifest())().into_string();
    let name = serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|m| m.get("name").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_else(|| "module".into());
    Ok((module, name))
}

/// Runs the mount group.
pub fn run(job: &Job, sink: &Sink) {
    sink.begin(n::MOUNT_MOUNT, None, "mount with the given config");
    let skip_rest = |sink: &Sink, why: &str| {
        for check in &CHECKS[1..] {
            sink.result(CheckResult::skip(check, None, why));
        }
    };
    let (module, name) = match open_module(job) {
        Ok(opened) => opened,
        Err(e) => {
            sink.result(CheckResult::fail(n::MOUNT_MOUNT, None, e.to_string()));
            return skip_rest(sink, "the library does not load");
        }
    };
    let first = match session::mount(module, &name, &job.config, &job.work_dir) {
        Ok(mounted) => mounted,
        Err(error) => {
            sink.result(CheckResult::fail(
                n::MOUNT_MOUNT,
                None,
                mount_failure(&error, &job.config),
            ));
            sink.send(&Event::Tools { specs: Vec::new() });
            return skip_rest(sink, "mount failed");
        }
    };
    let specs = first.specs();
    let tool_names: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, s)| super::tool_label(i, s))
        .collect();
    sink.send(&Event::Tools { specs: specs.clone() });
    let mut v = Verdict::new();
    if specs.is_empty() {
        v.warn("mount registered no tools");
    }
    sink.result(v.finish(
        n::MOUNT_MOUNT,
        None,
        format!("registered {} tools: {}", specs.len(), tool_names.join(", ")),
    ));

    sink.begin(n::MOUNT_CLEANUP, None, "run the cleanup");
    let _ = logs::take();
    sink.result(cleanup_check(first.cleanup(CLEANUP_BOUND)));

    sink.begin(n::MOUNT_REMOUNT, None, "mount again after the cleanup");
    sink.result(match session::mount(module, &name, &job.config, &job.work_dir) {
        Err(message) => CheckResult::fail(
            n::MOUNT_REMOUNT,
            None,
            format!("the second mount failed: {message}"),
        ),
        Ok(second) => {
            let again: Vec<String> = second
                .specs()
                .iter()
                .enumerate()
                .map(|(i, s)| super::tool_label(i, s))
                .collect();
            let cleaned = second.cleanup(CLEANUP_BOUND);
            let mut v = Verdict::new();
            if again != tool_names {
                v.fail(format!(
                    "the second mount registered [{}], the first [{}]",
                    again.join(", "),
                    tool_names.join(", ")
                ));
            }
            if let Err(e) = cleaned {
                v.fail(format!("the second cleanup failed: {e}"));
            }
            v.finish(
                n::MOUNT_REMOUNT,
                None,
                "mount → cleanup → mount registers the same tools",
            )
        }
    });

    sink.begin(n::MOUNT_BAD_CONFIG, None, "mount with wrong configs");
    let mut v = Verdict::new();
    let mut refused = Vec::new();
    for bad in bad_configs() {
        match session::mount(module, &name, &bad, &job.work_dir) {
            Ok(mounted) => {
                v.note(format!("config {bad} was accepted"));
                let _ = mounted.cleanup(CLEANUP_BOUND);
            }
            Err(MountError::Panicked(message)) => v.fail(format!("config {bad} made mount panic: {message}")),
            Err(MountError::Refused(message)) if message.trim().is_empty() => {
                v.fail(format!("config {bad} was refused with an empty message"))
            }
            Err(error) => refused.push(format!("config {bad}: {error}")),
        }
    }
    let summary = match refused.first() {
        Some(first) => format!("refused with a message, e.g. {first}"),
        None => "accepts any config".to_string(),
    };
    for r in refused {
        v.note(r);
    }
    sink.result(v.finish(n::MOUNT_BAD_CONFIG, None, summary));

    sink.begin(n::MOUNT_HOST, None, "mount in toolhost from a plan");
    sink.result(host_check(&job.library, &job.config, &job.work_dir));
}

fn mount_failure(error: &MountError, config: &Value) -> String {
    match error {
        MountError::Panicked(message) if message.starts_with("mount panicked") => message.clone(),
        MountError::Panicked(message) => format!("mount panicked: {message}"),
        other => format!("mount failed with config {config}: {other}"),
    }
}

fn cleanup_check(outcome: Result<(), CleanupTimedOut>) -> CheckResult {
    let mut v = Verdict::new();
    if let Err(e) = outcome {
        v.fail(e.to_string());
    }
    let logged = logs::take();
    if let Some(line) = logged.lines().find(|l| l.contains("cleanup panicked")) {
        v.fail(format!("the cleanup panicked: {}", line.trim()));
    }
    v.finish(n::MOUNT_CLEANUP, None, "ran and returned")
}

/// Mounts the library in the real host through a one-entry plan.
///
/// In-process: the host runs here as a library inside xtask, which has no
/// `__worker` subcommand to re-execute (a `path` entry defaults to process
/// isolation in the `toolhost` binary); the worker path has its own tests.
fn host_check(library: &Path, config: &Value, work_dir: &Path) -> CheckResult {
    let plan_file = work_dir.join("validate-plan.toml");
    let text = format!(
        "[host]\nworking_dir = {}\n\n[[tools]]\npath = {}\nisolation = \"in-process\"\n",
        toml::Value::String(work_dir.to_string_lossy().into_owned()),
        toml::Value::String(library.to_string_lossy().into_owned()),
    );
    let mut plan = match toolhost::plan::Plan::parse(&text, &plan_file) {
        Ok(plan) => plan,
        Err(e) => return CheckResult::fail(n::MOUNT_HOST, None, format!("cannot build a plan: {e}")),
    };
    if let Some(entry) = plan.tools.first_mut() {
        entry.config = config.clone();
    }
    match toolhost::host::Host::open(plan) {
        Ok(host) => {
            let count = host.tools().len();
            host.shutdown();
            CheckResult::pass(n::MOUNT_HOST, None, format!("toolhost mounts it: {count} tools"))
        }
        Err(e) => CheckResult::fail(n::MOUNT_HOST, None, format!("toolhost refuses it: {e}")),
    }
}
