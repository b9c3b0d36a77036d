//! The parent's side of a worker: spawn `xtask __validate-worker`, watch
//! its report for progress, kill it when it stalls, and turn however it
//! ended into check results (a crash fails the check it had begun).

use std::fs::File;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::check::{CheckResult, Outcome};
use super::protocol::{Event, Job};

/// How a worker ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// It exited with this code.
    Exited(i32),
    /// A signal killed it.
    Signal(i32),
    /// It made no progress for this long and was killed.
    Stalled(Duration),
    /// It could not be started.
    NotStarted(String),
}

impl Ended {
    /// Whether it finished on its own, successfully.
    pub fn is_clean(&self) -> bool {
        *self == Ended::Exited(0)
    }

    /// What happened, in words.
    pub fn describe(&self) -> String {
        match self {
            Ended::Exited(code) => format!("the worker process exited with code {code}"),
            Ended::Signal(signal) => format!(
                "the worker process was killed by {} (signal {signal})",
                signal_name(*signal)
            ),
            Ended::Stalled(idle) => format!(
                "the worker process made no progress for {} s and was killed (a hang)",
                idle.as_secs()
            ),
            Ended::NotStarted(e) => format!("the worker process could not start: {e}"),
        }
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        4 => "SIGILL",
        6 => "SIGABRT (an abort)",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV (a segfault)",
        15 => "SIGTERM",
        _ => "a signal",
    }
}

/// What a worker left behind.
#[derive(Debug)]
pub struct Run {
    /// Every event it reported, in order.
    pub events: Vec<Event>,
    /// How it ended.
    pub ended: Ended,
    /// The end of its stderr, for diagnosis.
    pub stderr_tail: String,
}

/// Runs `job` in a worker; kills it after `idle` without a new event.
pub fn run(job: &Job, dir: &Path, idle: Duration) -> Run {
    let job_file = dir.join("job.json");
    let stderr_file = dir.join("stderr.txt");
    let not_started = |e: String| Run {
        events: Vec::new(),
        ended: Ended::NotStarted(e),
        stderr_tail: String::new(),
    };
    let text = match serde_json::to_string_pretty(job) {
        Ok(t) => t,
        Err(e) => return not_started(e.to_string()),
    };
    if let Err(e) = std::fs::write(&job_file, text) {
        return not_started(e.to_string());
    }
    let (Ok(stdout), Ok(stderr)) = (File::create(dir.join("stdout.txt")), File::create(&stderr_file)) else {
        return not_started("cannot create its output files".into());
    };
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return not_started(e.to_string()),
    };
    let mut child = match Command::new(exe)
        .arg("__validate-worker")
        .arg(&job_file)
        .current_dir(&job.work_dir)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
    {
        Ok(child) => child,
        Err(e) => return not_started(e.to_string()),
    };
    let mut last_size = 0;
    let mut last_progress = Instant::now();
    let ended = loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                break match (status.code(), status.signal()) {
                    (Some(code), _) => Ended::Exited(code),
                    (None, Some(signal)) => Ended::Signal(signal),
                    (None, None) => Ended::Exited(-1),
                }
            }
            Ok(None) => {}
            Err(e) => break Ended::NotStarted(e.to_string()),
        }
        let size = std::fs::metadata(&job.report).map(|m| m.len()).unwrap_or(0);
        if size != last_size {
            last_size = size;
            last_progress = Instant::now();
        }
        if last_progress.elapsed() > idle {
            let _ = child.kill();
            let _ = child.wait();
            break Ended::Stalled(idle);
        }
        std::thread::sleep(Duration::from_millis(15));
    };
    Run {
        events: read_events(&job.report),
        ended,
        stderr_tail: tail(&stderr_file, 1500),
    }
}

fn read_events(report: &PathBuf) -> Vec<Event> {
    std::fs::read_to_string(report)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

fn tail(file: &Path, max: usize) -> String {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let start = text.len().saturating_sub(max);
    let start = (start..text.len())
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(0);
    text[start..].trim().to_string()
}

/// The check results of a run. `expected` lists the (check, tool) pairs the
/// run was meant to report; when the worker died, the check it had begun
/// fails with the reason, and the expected checks it never reached are
/// skipped (or, when it had begun none, the first of them fails).
pub fn results(run: &Run, expected: &[(String, Option<String>)]) -> Vec<CheckResult> {
    let mut results: Vec<CheckResult> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Check { result } => Some(result.clone()),
            _ => None,
        })
        .collect();
    let reported = |results: &[CheckResult], check: &str, tool: &Option<String>| {
        results.iter().any(|r| r.name == check && &r.tool == tool)
    };
    let mut blamed = false;
    if !run.ended.is_clean() {
        let begun = run.events.iter().rev().find_map(|e| match e {
            Event::Begin { check, tool, case } if !reported(&results, check, tool) => {
                Some((check.clone(), tool.clone(), case.clone()))
            }
            _ => None,
        });
        let (check, tool, case) = begun
            .or_else(|| {
                expected
                    .iter()
                    .find(|(c, t)| !reported(&results, c, t))
                    .map(|(c, t)| (c.clone(), t.clone(), String::new()))
            })
            .unwrap_or_else(|| (String::new(), None, String::new()));
        if !check.is_empty() {
            let on = if case.is_empty() {
                String::new()
            } else {
                format!(" on {case}")
            };
            let mut result =
                CheckResult::fail(&check, tool.as_deref(), format!("{}{on}", run.ended.describe()));
            if !run.stderr_tail.is_empty() {
                result.details.push(format!("worker stderr: {}", run.stderr_tail));
            }
            results.push(result);
            blamed = true;
        }
    }
    for (check, tool) in expected {
        if !reported(&results, check, tool) {
            let message = if blamed || !run.ended.is_clean() {
                format!("not run: {}", run.ended.describe())
            } else {
                "not run: an earlier step of the same worker could not run".to_string()
            };
            results.push(CheckResult::new(check, tool.as_deref(), Outcome::Skip, message));
        }
    }
    results
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crash_fails_the_begun_check() {
        let run = Run {
            events: vec![
                Event::Begin {
                    check: "a.x".into(),
                    tool: None,
                    case: "one".into(),
                },
                Event::Check {
                    result: CheckResult::pass("a.x", None, "ok"),
                },
                Event::Begin {
                    check: "a.y".into(),
                    tool: Some("t".into()),
                    case: "{}".into(),
                },
            ],
            ended: Ended::Signal(6),
            stderr_tail: String::new(),
        };
        let expected = vec![
            ("a.x".to_string(), None),
            ("a.y".to_string(), Some("t".to_string())),
            ("a.z".to_string(), None),
        ];
        let r = results(&run, &expected);
        assert_eq!(r.len(), 3);
        assert_eq!(r[1].outcome, Outcome::Fail);
        assert!(
            r[1].message.contains("SIGABRT") && r[1].message.contains("on {}"),
            "{}",
            r[1].message
        );
        assert_eq!(r[2].outcome, Outcome::Skip);
    }
}
