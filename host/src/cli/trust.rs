//! `toolhost trust [--show]`: records that the user trusts the plan
//! discovery finds here, exactly as it is now, with every file it makes the
//! host run or load (see [`crate::plan::trust`]); `--show` prints all of it
//! for review and records nothing.

use std::process::ExitCode;

use super::{print_stdout, EXIT_FAILED, EXIT_USAGE};
use crate::plan::{trust, Discovered, TrustState};

#[derive(clap::Args, Debug)]
pub(super) struct TrustArgs {
    /// Print the plan, the files it pins with their SHA-256 and what changed
    /// since it was trusted; record nothing.
    #[arg(long)]
    show: bool,
}

pub(super) fn run(args: &TrustArgs, found: &Discovered) -> ExitCode {
    let Some(record) = &found.record else {
        print_stdout("the built-in default plan is part of toolhost and needs no trust");
        return ExitCode::SUCCESS;
    };
    if args.show {
        print_stdout(&format!(
            "plan: {} (sha256 {})",
            record.plan.display(),
            record.plan_sha256
        ));
        print_stdout(&format!("why: {}", found.origin.why()));
        print_stdout(&format!("trust: {}", found.trust.describe()));
        if record.files.is_empty() {
            print_stdout("pins: none (it runs no hook program, path module or MCP command file)");
        }
        for (file, hash) in &record.files {
            print_stdout(&format!("pin:  {} (sha256 {hash})", file.display()));
        }
        print_stdout("----- plan text -----");
        match std::fs::read_to_string(&record.plan) {
            Ok(text) => print_stdout(text.trim_end()),
            Err(e) => {
                eprintln!("error: cannot read {}: {e}", record.plan.display());
                return ExitCode::from(EXIT_FAILED);
            }
        }
        return ExitCode::SUCCESS;
    }
    if let Some((file, _)) = record.files.iter().find(|(_, h)| *h == trust::MISSING) {
        eprintln!(
            "error: the plan runs or loads {}, which cannot be read; fix the plan or the file first",
            file.display()
        );
        return ExitCode::from(EXIT_USAGE);
    }
    match trust::store(record) {
        Ok(at) => {
            let was = match &found.trust {
                TrustState::Untrusted(what) => format!(" (was: {})", what.join("; ")),
                _ => String::new(),
            };
            print_stdout(&format!(
                "trusted {} and {} pinned file(s){was}; record: {}",
                record.plan.display(),
                record.files.len(),
                at.display()
            ));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: cannot write the trust record: {e}");
            ExitCode::from(EXIT_FAILED)
        }
    }
}
