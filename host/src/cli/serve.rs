//! `toolhost serve`: the plan's tools over MCP, on stdio or (with `--http`)
//! over streamable HTTP.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use super::EXIT_USAGE;
use crate::cancel::CancelToken;
use crate::host::Host;
use crate::mcp;
use crate::mcp::auth::Access;
use crate::pipeline::Pipeline;

#[derive(clap::Args, Debug)]
pub(super) struct ServeArgs {
    /// Serve streamable HTTP on ADDR (HOST:PORT, or a bare PORT for
    /// loopback) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// Bearer token HTTP requests must carry. Without one, a token is
    /// generated and written to --token-file.
    #[arg(long, env = "TOOLHOST_TOKEN", hide_env_values = true, value_name = "TOKEN")]
    token: Option<String>,
    /// Where a generated token is written, mode 0600 (default:
    /// `<state_dir>/http-<port>.token`).
    #[arg(long, value_name = "FILE", conflicts_with = "token")]
    token_file: Option<PathBuf>,
    /// Serve HTTP without authentication (loopback only): any local user or
    /// process could then call the tools as you.
    #[arg(long, conflicts_with_all = ["token", "token_file"])]
    no_auth: bool,
    /// A browser origin allowed to call (repeat it; e.g.
    /// `http://localhost:6274`). Requests with any other `Origin` get 403,
    /// except, on loopback, the server's own (`http://127.0.0.1:PORT`).
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origins: Vec<String>,
    /// HTTP connections open at once that have sent a known token; a
    /// request on one more is answered 503.
    #[arg(long, value_name = "N", default_value_t = 256)]
    max_connections: usize,
    /// HTTP connections open at once that have not yet sent a request with
    /// a known token; past it the oldest of them is closed.
    #[arg(long, value_name = "N", default_value_t = 64)]
    max_unauthenticated: usize,
    /// Seconds a new connection may take to send a request with a known
    /// token before it is closed.
    #[arg(long, value_name = "SECS", default_value_t = 3)]
    unauthenticated_timeout_secs: u64,
    /// MCP sessions live at once; more `initialize` calls are answered 503.
    #[arg(long, value_name = "N", default_value_t = 64)]
    max_sessions: usize,
    /// Seconds a client may take to send a request's headers (and an idle
    /// keep-alive connection is kept).
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    header_timeout_secs: u64,
    /// Seconds a client may take to send a request's body, once its
    /// headers and token are in: a token holder trickling a body cannot
    /// hold a connection (and its place) for ever.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    body_timeout_secs: u64,
    /// Seconds without a request after which a session ends, its calls and
    /// jobs with it.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    session_idle_secs: u64,
    /// Serve only the tools of this `[[toolsets]]` entry.
    #[arg(long, value_name = "NAME")]
    toolset: Option<String>,
}

impl ServeArgs {
    /// The file a generated token goes to, when given (protected like the
    /// state folder).
    pub(super) fn token_file(&self) -> Option<PathBuf> {
        self.token_file.clone()
    }
}

/// Why `serve` did not start or ended in error.
#[derive(Debug, thiserror::Error)]
pub(super) enum ServeFailed {
    /// stdout could not be taken for the protocol (stdio).
    #[error(transparent)]
    Stdout(mcp::stdio::StdioError),
    /// stdout was closed at start: the protocol would go nowhere (stdio).
    #[error("stdout was closed when toolhost started: `serve` without --http speaks MCP on stdout")]
    StdoutClosed,
    /// The stdio session failed.
    #[error(transparent)]
    Stdio(mcp::stdio::StdioError),
    /// The HTTP server failed.
    #[error(transparent)]
    Http(#[from] mcp::http::ServeError),
}

/// Before the plan loads: on stdio, the protocol takes stdout for itself,
/// so nothing a module prints while mounting reaches the client.
pub(super) fn prepare(args: &ServeArgs) -> Result<(), ServeFailed> {
    if args.http.is_none() {
        if super::output::stdout_was_closed() {
            return Err(ServeFailed::StdoutClosed);
        }
        mcp::stdio::claim_stdout().map_err(ServeFailed::Stdout)?;
    }
    Ok(())
}

pub(super) async fn run(host: Arc<Host>, shutdown: CancelToken, args: ServeArgs) -> ExitCode {
    if host.plan.host.audit_log.is_some() {
        reopen_on_sighup();
    }
    let pipeline = match Pipeline::new(host, shutdown.clone()).with_toolset(args.toolset) {
        Ok(pipeline) => Arc::new(pipeline),
        Err(refused) => {
            let message = refused.error.map(|e| e.message).unwrap_or_default();
            eprintln!("error: --toolset: {message}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let served = match args.http {
        Some(addr) => {
            let access = match (args.token, args.no_auth) {
                (Some(token), _) => Access::Token(token),
                (None, true) => Access::Open,
                (None, false) => Access::Generated(args.token_file),
            };
            let mut options = mcp::http::Options::new(addr, access);
            options.allowed_origins = args.allow_origins;
            options.max_connections = args.max_connections.max(1);
            options.max_sessions = args.max_sessions.max(1);
            options.max_unauthenticated = args.max_unauthenticated.max(1);
            options.unauthenticated_timeout = Duration::from_secs(args.unauthenticated_timeout_secs.max(1));
            options.sessions_per_principal = pipeline.host().plan.host.sessions_per_principal.max(1);
            options.header_timeout = Duration::from_secs(args.header_timeout_secs.max(1));
            options.body_timeout = Duration::from_secs(args.body_timeout_secs.max(1));
            options.session_idle = Duration::from_secs(args.session_idle_secs.max(1));
            mcp::http::serve(pipeline, shutdown, options)
                .await
                .map_err(ServeFailed::from)
        }
        None => mcp::stdio::serve(pipeline, shutdown)
            .await
            .map_err(ServeFailed::Stdio),
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// SIGHUP reopens the audit log (what logrotate's `postrotate` sends). Only
/// installed when the plan has an audit log, so SIGHUP keeps its default
/// meaning (end the process) otherwise.
fn reopen_on_sighup() {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut hup) = signal(SignalKind::hangup()) else {
        tracing::warn!("cannot listen for SIGHUP; the audit log still follows renames");
        return;
    };
    tokio::spawn(async move {
        while hup.recv().await.is_some() {
            crate::pipeline::audit_file::request_reopen();
            tracing::info!("SIGHUP: the audit log is reopened before its next record");
        }
    });
}
