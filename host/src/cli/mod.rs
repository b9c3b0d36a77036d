//! The `toolhost` command line (pinned in DESIGN.md: scripts depend on it).
//!
//! Exit codes: 0 success, 1 the tool call failed (any non-success status),
//! 2 usage or plan error. Results go to stdout, logs to stderr.

mod approve;
mod audit;
mod batch;
mod call;
mod check;
mod describe;
mod governance_args;
mod human;
mod init;
mod list;
pub mod output;
mod pin;
mod serve;
mod trust;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use clap::{Parser, Subcommand};

use crate::cancel::CancelToken;
use crate::host::Host;
use crate::logging::{self, LogFormat};

/// Loads tool modules from a mount plan and runs their tools.
#[derive(Parser, Debug)]
#[command(name = "toolhost", version, about, max_term_width = 100)]
pub struct Cli {
    /// Mount plan [default: $TOOLHOST_PLAN, then ./toolhost.toml or the
    /// nearest in a parent folder, then ~/.config/toolhost/plan.toml, then
    /// the built-in default plan]
    #[arg(long, global = true, value_name = "FILE")]
    pub plan: Option<PathBuf>,

    /// Log line format on stderr (filter with RUST_LOG).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Load every module, report what mounted, exit 0 if all did, else 1.
    Check,
    /// List the tools with their effect and a one-line summary.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Print a tool's full spec, input schema included.
    Describe {
        /// Tool name or alias.
        tool: String,
    },
    /// Run one call and print its ToolResult as JSON.
    Call(call::CallArgs),
    /// Run JSONL calls ({name, input[, tool_call_id, idempotency_key]}) in
    /// conflict-aware parallel groups; print JSONL results in input order.
    Batch(batch::BatchArgs),
    /// Serve the plan's tools over MCP (stdio, or streamable HTTP).
    Serve(serve::ServeArgs),
    /// Write a commented toolhost.toml for this folder from a ready plan.
    Init(init::InitArgs),
    /// Audit log tools: `audit verify FILE…` checks the hash chain.
    Audit(audit::AuditArgs),
    /// Record the plan's MCP tool definitions in toolhost.lock (showing
    /// what changed); with a lock, changed or new tools are not served.
    Pin,
    /// Trust the plan discovery finds here, as it is now (`--show`: review).
    Trust(trust::TrustArgs),
    /// Internal: an isolated module's worker process (started by the host).
    #[command(name = "__worker", hide = true)]
    Worker {
        /// The host's pid (the worker exits if it is not its parent).
        #[arg(long)]
        parent: u32,
        /// Address-space cap in MiB.
        #[arg(long)]
        memory_limit_mb: Option<u64>,
    },
    /// Internal: the subreaper a stdio MCP server or a hook runs under (started by the host).
    #[command(name = "__reaper", hide = true)]
    Reaper {
        /// The host's pid (the reaper exits if it is not its parent).
        #[arg(long)]
        parent: u32,
        /// What the command is, for the message when it cannot start.
        #[arg(long, default_value = "command")]
        what: String,
        /// The command line (an MCP server's, a hook's).
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
}

/// Exit code: the tool call failed.
pub const EXIT_FAILED: u8 = 1;
/// Exit code: usage or plan error.
pub const EXIT_USAGE: u8 = 2;

/// Parses the arguments and runs the command.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::Worker {
        parent,
        memory_limit_mb,
    } = cli.command
    {
        logging::init(cli.log_format, "warn");
        return crate::isolate::worker::main(parent, memory_limit_mb);
    }
    if let Command::Reaper {
        parent,
        what,
        command,
    } = &cli.command
    {
        return toolhost_supervise::reaper::main(*parent, what, command);
    }
    let default_level = if matches!(cli.command, Command::Check) {
        "info"
    } else {
        "warn"
    };
    logging::init(cli.log_format, default_level);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let code = runtime.block_on(run(cli));
    // Queued spans go to the collector (bounded by its export timeout).
    toolhost_telemetry::trace::shutdown();
    // Abandoned tool threads (tools that ignored cancellation) must not keep
    // the process alive.
    runtime.shutdown_background();
    code
}

async fn run(cli: Cli) -> ExitCode {
    if let Command::Init(args) = &cli.command {
        return init::run(args);
    }
    if let Command::Audit(args) = &cli.command {
        return audit::run(args);
    }
    let found = match crate::plan::discover(cli.plan.as_deref()) {
        Ok(found) => found,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(match cli.command {
                Command::Check => EXIT_FAILED,
                _ => EXIT_USAGE,
            });
        }
    };
    if let Command::Trust(args) = &cli.command {
        return trust::run(args, &found);
    }
    let (mut plan, origin) = (found.plan, found.origin);
    if let Command::Check = cli.command {
        return check::run(plan, &origin, &found.trust);
    }
    if let crate::plan::TrustState::Untrusted(what) = &found.trust {
        eprintln!("error: {}", crate::plan::trust::refusal(&plan.file, what));
        return ExitCode::from(EXIT_USAGE);
    }
    if let Command::Pin = cli.command {
        return pin::run(plan);
    }
    if let Command::Serve(args) = &cli.command {
        if let Err(message) = serve::prepare(args) {
            eprintln!("error: {message}");
            return ExitCode::from(EXIT_USAGE);
        }
        plan.secret_files.extend(args.token_file());
    }
    let host = match Host::open(plan) {
        Ok(host) => Arc::new(host),
        Err(e) => {
            // A mount error may quote what a module or server said.
            eprintln!("error: {}", crate::escape::escape_text(&e.to_string()));
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let shutdown = CancelToken::new();
    let signal = Arc::new(AtomicI32::new(0));
    watch_signals(shutdown.clone(), signal.clone());

    let code = match cli.command {
        Command::Check | Command::Init(_) | Command::Audit(_) | Command::Pin | Command::Trust(_) => {
            unreachable_check()
        }
        Command::List { json } => list::run(&host, json),
        Command::Describe { tool } => describe::run(&host, &tool),
        Command::Call(args) => call::run(host.clone(), shutdown.clone(), args).await,
        Command::Batch(args) => batch::run(host.clone(), shutdown.clone(), args).await,
        Command::Serve(args) => serve::run(host.clone(), shutdown.clone(), args).await,
        Command::Worker { .. } | Command::Reaper { .. } => unreachable_check(),
    };
    host.shutdown();
    match signal.load(Ordering::SeqCst) {
        0 => code,
        sig => ExitCode::from(128u8.saturating_add(sig as u8)),
    }
}

fn unreachable_check() -> ExitCode {
    ExitCode::from(EXIT_USAGE)
}

/// On SIGINT or SIGTERM: cancel the calls in flight (their results still
/// print), then the normal path runs the cleanups and exits 128+signal.
fn watch_signals(shutdown: CancelToken, signal: Arc<AtomicI32>) {
    use tokio::signal::unix::{signal as listen, SignalKind};
    let (Ok(mut int), Ok(mut term)) = (listen(SignalKind::interrupt()), listen(SignalKind::terminate()))
    else {
        tracing::warn!("cannot listen for signals; Ctrl-C will not clean up");
        return;
    };
    tokio::spawn(async move {
        let sig = tokio::select! {
            _ = int.recv() => libc::SIGINT,
            _ = term.recv() => libc::SIGTERM,
        };
        tracing::info!(
            signal = sig,
            "signal received: cancelling calls in flight, then cleaning up"
        );
        signal.store(sig, Ordering::SeqCst);
        shutdown.cancel();
    });
}

/// Prints a line of a command's output to stdout; a failed write makes the
/// command exit 2 (see [`output::finish`]).
pub(crate) fn print_stdout(text: &str) {
    output::print_line(text);
}
