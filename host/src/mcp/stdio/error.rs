//! Why a stdio session could not be served: each kind names what failed,
//! so `serve` can say so in one line and exit with the usage code.

use std::io;

/// A stdio session that could not start (or ended abnormally).
#[derive(Debug, thiserror::Error)]
pub enum StdioError {
    /// Stdout could not be moved aside for the protocol.
    #[error("cannot set up stdout: {0}")]
    Stdout(#[source] io::Error),
    /// The stdin readers could not be started.
    #[error("cannot read stdin: {0}")]
    Stdin(#[source] io::Error),
    /// rmcp's own runtime or thread could not be started.
    #[error("cannot start the MCP {what}: {source}")]
    Start {
        /// "runtime" or "thread".
        what: &'static str,
        /// Why.
        source: io::Error,
    },
    /// The client's handshake failed (not merely a client that left).
    #[error("the MCP session did not start: {0}")]
    Handshake(#[source] Box<rmcp::service::ServerInitializeError>),
    /// The session's thread ended without saying how (it panicked).
    #[error("the MCP session ended abnormally")]
    Abnormal,
}
