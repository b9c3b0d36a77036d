//! `cargo xtask validate-module`: proves a module library is safe to hand to
//! an agent. Every check runs against the loaded module in a worker process
//! (see [`worker`]), in groups: load, mount, the static spec checks, then
//! each behaviour check on each tool in its own process, several at a time.

pub mod check;
pub mod checks;
pub mod child;
pub mod inputs;
pub mod protocol;
pub mod report;
pub mod target;
pub mod wire_check;
pub mod worker;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde_json::Value;

use check::{names, CheckResult, Outcome};
use protocol::{Event, Group, Job};
use report::{Format, Report};

/// What to validate, and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// A library file or a crate folder.
    pub target: PathBuf,
    /// `--config`: JSON text, or a `.json` / `.toml` file.
    pub config: Option<String>,
    /// Output format.
    pub format: Format,
    /// Warnings fail too.
    pub strict: bool,
    /// Deadline of an ordinary behaviour call.
    pub call_timeout: Duration,
    /// How soon a cancelled call must return.
    pub cancel_bound: Duration,
    /// Worker processes run at once for the behaviour checks.
    pub jobs: usize,
    /// Tools whose behaviour checks are skipped.
    pub skip_tools: Vec<String>,
}

/// Validates `opts.target`, prints the report, and says whether it passed.
/// Errors are usage errors (no such file, the build failed, a bad config).
pub fn run(opts: &Options) -> anyhow::Result<bool> {
    let started = Instant::now();
    let config = parse_config(opts.config.as_deref())?;
    let library = target::resolve(&opts.target)?;
    let tmp = tempfile::Builder::new()
        .prefix("validate-module-")
        .tempdir()
        .context("cannot create a temporary folder")?;
    let runner = Runner {
        library: library.clone(),
        config,
        tmp: tmp.path().to_path_buf(),
        opts: opts.clone(),
        next: AtomicUsize::new(0),
    };
    let human = opts.format == Format::Human;
    if human {
        let _ = writeln!(std::io::stdout(), "validate-module: {}", library.display());
    }
    let mut checks: Vec<CheckResult> = Vec::new();
    let add = |results: Vec<CheckResult>, checks: &mut Vec<CheckResult>| {
        for r in results {
            if human {
                report::human::progress(&r);
            }
            checks.push(r);
        }
    };

    let expect = |names: &[&str]| names.iter().map(|n| (n.to_string(), None)).collect::<Vec<_>>();
    let (load, events) = runner.group(Group::Load, &expect(&checks::loading::CHECKS));
    let manifest = events.iter().find_map(|e| match e {
        Event::Manifest { manifest } => Some(manifest.clone()),
        _ => None,
    });
    let loaded = !load.iter().any(|r| {
        r.outcome == Outcome::Fail
            && (r.name == names::LOADING_LIBRARY || r.name == names::LOADING_ABI_VERSION)
    });
    add(load, &mut checks);
    if !loaded {
        add(
            skips(&checks::mount::CHECKS, "the library does not load"),
            &mut checks,
        );
        add(skip_later("the library does not load"), &mut checks);
        return finish(opts, library, manifest, checks, started);
    }

    let (mount, events) = runner.group(Group::Mount, &expect(&checks::mount::CHECKS));
    let specs = events.iter().find_map(|e| match e {
        Event::Tools { specs } => Some(specs.clone()),
        _ => None,
    });
    let mounted = mount
        .iter()
        .any(|r| r.name == names::MOUNT_MOUNT && r.outcome != Outcome::Fail);
    add(mount, &mut checks);
    let specs = match specs {
        Some(specs) if mounted => specs,
        _ => {
            add(skip_later("mount failed"), &mut checks);
            return finish(opts, library, manifest, checks, started);
        }
    };
    let labels: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, s)| checks::tool_label(i, s))
        .collect();

    for unknown in opts.skip_tools.iter().filter(|t| !labels.contains(t)) {
        eprintln!("validate-module: --skip-tool {unknown}: the module has no such tool");
    }
    let mut expected = expect(&checks::MODULE_STATIC);
    for label in &labels {
        expected.extend(
            checks::TOOL_STATIC
                .iter()
                .map(|c| (c.to_string(), Some(label.clone()))),
        );
    }
    let (statics, _) = runner.group(Group::Spec, &expected);
    add(statics, &mut checks);

    let mut behaviour = Vec::new();
    for (index, label) in labels.iter().enumerate() {
        for check in names::BEHAVIOUR {
            if opts.skip_tools.contains(label) {
                add(
                    vec![CheckResult::skip(check, Some(label), "excluded with --skip-tool")],
                    &mut checks,
                );
            } else {
                behaviour.push(Group::Behaviour {
                    check: check.to_string(),
                    index,
                    tool: label.clone(),
                });
            }
        }
    }
    let results = runner.parallel(behaviour, |r| {
        if human {
            for result in r {
                report::human::progress(result);
            }
        }
    });
    checks.extend(results.into_iter().flatten());
    finish(opts, library, manifest, checks, started)
}

/// Prints the report and returns whether the module passed.
fn finish(
    opts: &Options,
    library: PathBuf,
    manifest: Option<Value>,
    checks: Vec<CheckResult>,
    started: Instant,
) -> anyhow::Result<bool> {
    let report = Report {
        library,
        manifest,
        checks,
        strict: opts.strict,
        duration: started.elapsed(),
    };
    let mut text = report.render(opts.format);
    if opts.format != Format::Human {
        text.push('\n');
    }
    // A closed pipe (`| head`) is not an error worth a panic.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    Ok(report.ok())
}

fn skips(names: &[&str], why: &str) -> Vec<CheckResult> {
    names.iter().map(|n| CheckResult::skip(n, None, why)).collect()
}

/// Skips for every check after the mount group, once per check name.
fn skip_later(why: &str) -> Vec<CheckResult> {
    let mut all = skips(&checks::MODULE_STATIC, why);
    all.extend(skips(&checks::TOOL_STATIC, why));
    all.extend(skips(&names::BEHAVIOUR, why));
    all
}

/// Reads `--config`: JSON text, or a file holding JSON or TOML.
pub fn parse_config(arg: Option<&str>) -> anyhow::Result<Value> {
    let Some(arg) = arg else {
        return Ok(Value::Object(Default::default()));
    };
    if let Ok(value) = serde_json::from_str::<Value>(arg) {
        return Ok(value);
    }
    let path = Path::new(arg);
    if !path.is_file() {
        bail!("--config {arg}: neither JSON nor a file");
    }
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {arg}"))?;
    if path.extension().is_some_and(|e| e == "toml") {
        let table: toml::Table = toml::from_str(&text).with_context(|| format!("{arg} is not TOML"))?;
        Ok(serde_json::to_value(table)?)
    } else {
        serde_json::from_str(&text).with_context(|| format!("{arg} is not JSON"))
    }
}

/// Runs groups of checks in worker processes.
struct Runner {
    library: PathBuf,
    config: Value,
    tmp: PathBuf,
    opts: Options,
    next: AtomicUsize,
}

impl Runner {
    /// Runs one group in a fresh worker and folder; its results and events.
    fn group(&self, group: Group, expected: &[(String, Option<String>)]) -> (Vec<CheckResult>, Vec<Event>) {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let dir = self.tmp.join(format!("job-{n}"));
        let work_dir = dir.join("work");
        if let Err(e) = std::fs::create_dir_all(&work_dir) {
            let results = expected
                .iter()
                .map(|(c, t)| {
                    CheckResult::fail(
                        c,
                        t.as_deref(),
                        format!("cannot create {}: {e}", work_dir.display()),
                    )
                })
                .collect();
            return (results, Vec::new());
        }
        let job = Job {
            library: self.library.clone(),
            config: self.config.clone(),
            group,
            work_dir,
            report: dir.join("report.jsonl"),
            call_timeout_ms: millis(self.opts.call_timeout),
            cancel_bound_ms: millis(self.opts.cancel_bound),
        };
        let idle = self.opts.call_timeout + self.opts.cancel_bound + Duration::from_secs(15);
        let run = child::run(&job, &dir, idle);
        (child::results(&run, expected), run.events)
    }

    /// Runs behaviour groups, `opts.jobs` at a time; `progress` sees each
    /// group's results as it finishes. Results come back in input order.
    fn parallel(&self, groups: Vec<Group>, progress: impl Fn(&[CheckResult])) -> Vec<Vec<CheckResult>> {
        let next = AtomicUsize::new(0);
        let (tx, rx) = mpsc::channel();
        let mut slots: Vec<Vec<CheckResult>> = vec![Vec::new(); groups.len()];
        std::thread::scope(|scope| {
            for _ in 0..self.opts.jobs.max(1).min(groups.len().max(1)) {
                let tx = tx.clone();
                let (groups, next) = (&groups, &next);
                scope.spawn(move || loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(group) = groups.get(i) else { break };
                    let expected = match group {
                        Group::Behaviour { check, tool, .. } => vec![(check.clone(), Some(tool.clone()))],
                        _ => Vec::new(),
                    };
                    let (results, _) = self.group(group.clone(), &expected);
                    if tx.send((i, results)).is_err() {
                        break;
                    }
                });
            }
            drop(tx);
            for (i, results) in rx {
                progress(&results);
                slots[i] = results;
            }
        });
        slots
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn config_from_text_or_file() {
        assert_eq!(parse_config(None).ok(), Some(json!({})));
        assert_eq!(parse_config(Some(r#"{"a": 1}"#)).ok(), Some(json!({"a": 1})));
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let toml_file = tmp.path().join("c.toml");
        std::fs::write(&toml_file, "allowed = [\".\"]\n[limits]\nmax = 3\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let parsed = parse_config(toml_file.to_str()).ok();
        assert_eq!(parsed, Some(json!({"allowed": ["."], "limits": {"max": 3}})));
        assert!(parse_config(Some("not json, not a file")).is_err());
    }
}
