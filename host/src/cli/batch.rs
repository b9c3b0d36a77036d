//! `toolhost batch FILE|-`: JSONL calls in, JSONL results out, in order
//! (on a terminal without `--json`: each result's text and status line).

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use toolhost_core::wire::codes;
use toolhost_core::{Status, ToolResult};

use super::approve::terminal_approver;
use super::{human, output, EXIT_USAGE};
use crate::cancel::CancelToken;
use crate::host::Host;
use crate::pipeline::{BatchItem, Call};

#[derive(clap::Args, Debug)]
pub(super) struct BatchArgs {
    /// JSONL file of calls, or `-` for stdin.
    file: PathBuf,
    #[command(flatten)]
    flags: super::call::RunFlags,
}

pub(super) async fn run(host: Arc<Host>, shutdown: CancelToken, args: BatchArgs) -> ExitCode {
    let from_stdin = args.file.as_os_str() == "-";
    let text = if from_stdin {
        let mut buf = String::new();
        std::io::stdin().read_to_string(&mut buf).map(|_| buf)
    } else {
        std::fs::read_to_string(&args.file)
    };
    let text = match text {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read the batch {}: {e}", args.file.display());
            return ExitCode::from(EXIT_USAGE);
        }
    };

    let principal = match args.flags.principal(&host) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let context = args.flags.governance.context();
    // A malformed line becomes that line's validation error; the rest run.
    let approver = terminal_approver(!from_stdin);
    let mut calls = Vec::new();
    // Each result's label for people, in input (= output) order.
    let mut labels = Vec::new();
    let mut malformed: Vec<(usize, ToolResult)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<BatchItem>(line) {
            Ok(item) => {
                labels.push(item.name.clone());
                let mut call: Call = item.into();
                call.approver = approver.clone();
                call.principal = principal.clone();
                call.context = context.clone();
                calls.push(call);
            }
            Err(e) => {
                labels.push(format!("line {}", n + 1));
                malformed.push((
                    calls.len() + malformed.len(),
                    ToolResult::failure(
                        format!("line-{}", n + 1),
                        Status::ValidationError,
                        codes::INVALID_INPUT,
                        format!(
                            "line {} is not a batch call ({{\"name\", \"input\"}}): {e}",
                            n + 1
                        ),
                    ),
                ))
            }
        }
    }

    let show_progress = std::io::stderr().is_terminal();
    let pipeline = Arc::new(args.flags.pipeline(host, shutdown));
    let mut results = pipeline
        .batch(calls, |finished, total| {
            if show_progress {
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "\r[{finished}/{total}] calls finished");
                if finished == total {
                    let _ = writeln!(err);
                }
                let _ = err.flush();
            }
        })
        .await;
    for (position, result) in malformed {
        results.insert(position.min(results.len()), result);
    }
    let human = std::io::stdout().is_terminal() && !args.flags.json;
    let colour = crate::term::colour_stdout();
    let total = results.len();
    let mut all_ok = true;
    for (i, result) in results.iter().enumerate() {
        all_ok &= result.success;
        let text = if human {
            let label = format!(
                "[{}/{total}] {}",
                i + 1,
                labels.get(i).map_or("?", String::as_str)
            );
            human::result_block(&label, result, colour)
        } else {
            serde_json::to_string(result).unwrap_or_default()
        };
        // A result that cannot be written is lost: stop and say so.
        if let Err(e) = output::write_line(&text) {
            return output::lost(&e);
        }
    }
    if human {
        let failed = results.iter().filter(|r| !r.success).count();
        let summary = format!("{total} call(s): {} succeeded, {failed} failed", total - failed);
        if let Err(e) = output::write_line(&summary) {
            return output::lost(&e);
        }
    }
    super::call::exit_status(all_ok)
}
