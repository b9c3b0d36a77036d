//! `toolhost pin`: records the current definitions of the plan's MCP tools
//! in `toolhost.lock` beside the plan, after showing how they differ from
//! what it held (see [`crate::surface::pin`]).

use std::process::ExitCode;

use super::{print_stdout, EXIT_FAILED, EXIT_USAGE};
use crate::host::Host;
use crate::plan::Plan;
use crate::surface::pin::{self, Lock};

pub(super) fn run(plan: Plan) -> ExitCode {
    // A lock that cannot be read is replaced (its error shown): pinning is
    // how a broken lock is repaired.
    let old = match Lock::read(&plan) {
        Ok(old) => old,
        Err(e) => {
            eprintln!("warning: {e}; it is replaced");
            None
        }
    };
    let (host, reports) = Host::load(plan, true);
    let failed: Vec<String> = reports
        .iter()
        .filter_map(|r| r.error.as_ref().map(|e| format!("{}: {e}", r.label)))
        .collect();
    if !failed.is_empty() {
        // Pinning a partial list would hold back the tools of a server that
        // is only down now: refuse instead.
        for line in failed {
            eprintln!("error: {line}");
        }
        eprintln!("error: nothing was pinned: every source must mount to be pinned");
        host.shutdown();
        return ExitCode::from(EXIT_FAILED);
    }
    let new = pin::current(&host.tools(), &host.plan);
    let diff = old.clone().unwrap_or_default().diff(&new);
    if old.as_ref() == Some(&new) {
        print_stdout(&format!("{} is up to date", pin::LOCK_FILE));
        host.shutdown();
        return ExitCode::SUCCESS;
    }
    for line in &diff {
        print_stdout(line);
    }
    let code = match new.write(&host.plan) {
        Ok(file) => {
            let tools: usize = new.servers.iter().map(|s| s.tools.len()).sum();
            print_stdout(&format!(
                "pinned {tools} tool(s) of {} MCP server(s) in {}",
                new.servers.len(),
                file.display()
            ));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_USAGE)
        }
    };
    host.shutdown();
    code
}
