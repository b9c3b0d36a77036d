//! `toolhost audit verify FILE…`: checks the audit log's hash chain and
//! names the first broken link (see [`crate::pipeline::audit_verify`]).

use std::path::PathBuf;
use std::process::ExitCode;

use super::{print_stdout, EXIT_FAILED, EXIT_USAGE};
use crate::pipeline::audit_verify;

#[derive(clap::Args, Debug)]
pub(super) struct AuditArgs {
    #[command(subcommand)]
    command: AuditCommand,
}

#[derive(clap::Subcommand, Debug)]
enum AuditCommand {
    /// Verify the hash chain of audit files, oldest first (rotated files
    /// before the current one). Exit 0 intact, 1 broken, 2 unreadable.
    Verify {
        /// The files, in order.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

pub(super) fn run(args: &AuditArgs) -> ExitCode {
    let AuditCommand::Verify { files } = &args.command;
    let paths: Vec<&std::path::Path> = files.iter().map(PathBuf::as_path).collect();
    let report = match audit_verify::verify(&paths) {
        Ok(report) => report,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    for at in &report.torn {
        print_stdout(&format!(
            "torn  {at}: not a record (a writer was killed mid-write); accepted where a crash leaves one \
             (the file's last line, or right before the restart record naming it)"
        ));
    }
    if report.unchained > 0 {
        print_stdout(&format!(
            "note  {} record(s) before the chain starts carry no link (written before the chain existed)",
            report.unchained
        ));
    }
    match (&report.genesis, report.continues_from) {
        (Some((host, started)), _) => print_stdout(&format!(
            "start the log was begun by host {host} at {started} ms since the epoch (its genesis record)"
        )),
        (None, None) if report.head.is_some() => print_stdout(
            "note  the first record carries no genesis (a log begun by an older toolhost): records \
             before it cannot be told from prepended ones",
        ),
        _ => {}
    }
    if let Some(seq) = report.continues_from {
        print_stdout(&format!(
            "note  the first record is seq {seq}: this file continues an earlier one (rotated); \
             give the earlier files first to check the link between them"
        ));
    }
    if let Some(broken) = &report.broken {
        print_stdout(&format!("BROKEN {broken}"));
        print_stdout(&format!("{} record(s) verified before the break", report.records));
        return ExitCode::from(EXIT_FAILED);
    }
    match &report.head {
        Some(head) => print_stdout(&format!(
            "ok    {} record(s) intact; head: seq {} sha256 {} (keep it elsewhere to detect a cut tail later)",
            report.records, head.seq, head.sha256
        )),
        None => print_stdout("ok    no chained records"),
    }
    ExitCode::SUCCESS
}
