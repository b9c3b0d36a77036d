//! `toolhost serve`: the plan's tools over MCP, on stdio or (with `--http`)
//! over streamable HTTP.

use std::process::ExitCode;
use std::sync::Arc;

use super::EXIT_USAGE;
use crate::cancel::CancelToken;
use crate::host::Host;
use crate::mcp;
use crate::pipeline::Pipeline;

#[derive(clap::Args, Debug)]
pub(super) struct ServeArgs {
    /// Serve streamable HTTP on ADDR (HOST:PORT, or a bare PORT for
    /// loopback) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// Bearer token HTTP requests must carry; required beyond loopback.
    #[arg(long, env = "TOOLHOST_TOKEN", hide_env_values = true, value_name = "TOKEN")]
    token: Option<String>,
}

pub(super) async fn run(host: Arc<Host>, shutdown: CancelToken, args: ServeArgs) -> ExitCode {
    let pipeline = Arc::new(Pipeline::new(host, shutdown.clone()));
    let served = match args.http {
        Some(addr) => {
            let options = mcp::http::Options {
                addr,
                token: args.token,
            };
            mcp::http::serve(pipeline, shutdown, options).await
        }
        None => mcp::stdio::serve(pipeline, shutdown).await,
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}
