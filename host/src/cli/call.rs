//! `toolhost call TOOL [JSON|-]`: one call through the pipeline. The
//! ToolResult JSON goes to stdout (indented on a terminal with `--json`);
//! a terminal without `--json` gets the tool's text and a status line.

use std::io::{IsTerminal, Read};
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::Value;

use super::approve::{terminal_approver, ApprovalArgs};
use super::governance_args::GovernanceArgs;
use super::{human, output, EXIT_FAILED, EXIT_USAGE};
use crate::cancel::CancelToken;
use crate::host::Host;
use crate::pipeline::{Call, Pipeline};

#[derive(clap::Args, Debug)]
pub(super) struct CallArgs {
    /// Tool name or alias.
    tool: String,
    /// The input as JSON, or `-` to read it from stdin [default: {}].
    input: Option<String>,
    /// The call's id (echoed in the result).
    #[arg(long)]
    id: Option<String>,
    /// Run a side-effecting call at most once for this key (replayed after).
    #[arg(long, value_name = "KEY")]
    idempotency_key: Option<String>,
    #[command(flatten)]
    flags: RunFlags,
}

/// The flags `call` and `batch` share: the output form, approvals given up
/// front, and who the calls run for.
#[derive(clap::Args, Debug)]
pub(super) struct RunFlags {
    /// Print the results' JSON even on a terminal (off a terminal, JSON is
    /// all there is; `batch` prints one result per line).
    #[arg(long)]
    pub(super) json: bool,
    #[command(flatten)]
    pub(super) approval: ApprovalArgs,
    #[command(flatten)]
    pub(super) governance: GovernanceArgs,
}

impl RunFlags {
    /// The principal `--as` names, checked against the plan; on an unknown
    /// name, says so on stderr and gives the usage exit code (both commands
    /// refuse a bad `--as` before running anything).
    pub(super) fn principal(&self, host: &Host) -> Result<Option<String>, ExitCode> {
        self.governance.principal(&host.plan).map_err(|e| {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_USAGE)
        })
    }

    /// The pipeline the calls run through, with the approvals given up front.
    pub(super) fn pipeline(&self, host: Arc<Host>, shutdown: CancelToken) -> Pipeline {
        Pipeline::new(host, shutdown).with_pre_approved(self.approval.pre_approved())
    }
}

pub(super) async fn run(host: Arc<Host>, shutdown: CancelToken, args: CallArgs) -> ExitCode {
    let text = match args.input.as_deref() {
        None => "{}".to_string(),
        Some("-") => {
            let mut buf = String::new();
            if let Err(e) = std::io::stdin().read_to_string(&mut buf) {
                eprintln!("error: cannot read the input from stdin: {e}");
                return ExitCode::from(EXIT_USAGE);
            }
            buf
        }
        Some(literal) => literal.to_string(),
    };
    let input: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: the input is not valid JSON: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let principal = match args.flags.principal(&host) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let stdin_free = args.input.as_deref() != Some("-");
    let pipeline = args.flags.pipeline(host, shutdown);
    let label = args.tool.clone();
    let result = pipeline
        .call(Call {
            name: args.tool,
            input,
            tool_call_id: args.id,
            idempotency_key: args.idempotency_key,
            approver: terminal_approver(stdin_free),
            principal,
            context: args.flags.governance.context(),
            ..Call::default()
        })
        .await;
    let on_terminal = std::io::stdout().is_terminal();
    let text = if on_terminal && !args.flags.json {
        human::result_block(&label, &result, crate::term::colour_stdout())
    } else if on_terminal {
        serde_json::to_string_pretty(&result).unwrap_or_default()
    } else {
        serde_json::to_string(&result).unwrap_or_default()
    };
    if let Err(e) = output::write_line(&text) {
        return output::lost(&e);
    }
    exit_status(result.success)
}

/// Exit code 0 when every call succeeded, 1 when any did not (`call` and
/// `batch` alike).
pub(super) fn exit_status(all_ok: bool) -> ExitCode {
    if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FAILED)
    }
}
