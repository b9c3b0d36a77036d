//! The worker: a child process (`xtask __validate-worker JOB`) that loads
//! the module and runs one group of checks, so that an abort, a segfault or
//! a hang costs one process, not the validator.

pub mod call;
pub mod library;
pub mod logs;
pub mod session;
pub mod sink;

use std::path::Path;
use std::process::ExitCode;

use super::checks;
use super::protocol::{Group, Job};

/// Runs the job described in `job_file`; the results go to its report file.
pub fn main(job_file: &Path) -> ExitCode {
    let job: Job = match std::fs::read_to_string(job_file)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str(&text).map_err(|e| e.to_string()))
    {
        Ok(job) => job,
        Err(e) => {
            eprintln!("validate worker: cannot read job {}: {e}", job_file.display());
            return ExitCode::from(2);
        }
    };
    let sink = match sink::Sink::open(&job.report) {
        Ok(sink) => sink,
        Err(e) => {
            eprintln!("validate worker: cannot open {}: {e}", job.report.display());
            return ExitCode::from(2);
        }
    };
    logs::install();
    match &job.group {
        Group::Load => checks::loading::run(&job, &sink),
        Group::Mount => checks::mount::run(&job, &sink),
        Group::Spec => checks::run_static(&job, &sink),
        Group::Behaviour { check, index, tool } => checks::behaviour::run(&job, &sink, check, *index, tool),
    }
    ExitCode::SUCCESS
}
