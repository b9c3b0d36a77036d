//! `toolhost serve`: the plan's tools over MCP.

use std::process::ExitCode;
use std::sync::Arc;

use super::EXIT_USAGE;
use crate::cancel::CancelToken;
use crate::host::Host;

#[derive(clap::Args, Debug)]
pub(super) struct ServeArgs {}

pub(super) async fn run(_host: Arc<Host>, _shutdown: CancelToken, _args: ServeArgs) -> ExitCode {
    eprintln!("error: `serve` is being built (issue #7)");
    ExitCode::from(EXIT_USAGE)
}
