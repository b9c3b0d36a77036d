//! Logs go to stderr only: stdout belongs to results and to MCP.

use tracing_subscriber::EnvFilter;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Installs the stderr subscriber, filtered by `RUST_LOG` (default
/// `default_level`: `warn` for most commands, `info` for `check`, whose job
/// is to say what each module did while mounting). Colour only when stderr
/// is a terminal and `NO_COLOR` is unset (see [`crate::term`]).
pub fn init(format: LogFormat, default_level: &str) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(crate::term::colour_stderr())
        .with_target(true);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
