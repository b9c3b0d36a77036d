//! Why a `[tools.mcp]` server could not be connected to or listed, as a
//! kind: connect (spawn, dial), initialize (the MCP handshake), or list
//! (`tools/list`). The loader wraps it in [`crate::loader::ModuleError`];
//! a reconnect that fails becomes a `module_crashed` answer.

use rmcp::service::{ClientInitializeError, ServiceError};

/// The MCP clients' own runtime could not run a task.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RuntimeError {
    /// The runtime could not be built (kept as text: the first failure is
    /// remembered for every later caller, and `io::Error` is not `Clone`).
    #[error("cannot start the MCP client runtime: {0}")]
    Start(String),
    /// The task ended (panicked or was dropped) before it answered.
    #[error("the MCP client task ended without an answer")]
    NoAnswer,
}

/// One failed connect, handshake or `tools/list` of a mounted MCP server;
/// every message but the runtime's starts with the entry's label.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The client runtime failed (a host fault, not the server's).
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// A `headers` name is not a valid HTTP header name.
    #[error("{label}: header name '{name}': {error}")]
    HeaderName {
        /// The plan entry's label.
        label: String,
        /// The name as written.
        name: String,
        /// Why it is invalid.
        error: hyper::header::InvalidHeaderName,
    },
    /// A `headers` value is not a valid HTTP header value.
    #[error("{label}: header '{name}' has an invalid value: {error}")]
    HeaderValue {
        /// The plan entry's label.
        label: String,
        /// The header's name.
        name: String,
        /// Why the value is invalid.
        error: hyper::header::InvalidHeaderValue,
    },
    /// A server reached by URL refused or broke the MCP handshake.
    #[error("{label}: cannot initialize an MCP session with {url}: {error}")]
    Initialize {
        /// The plan entry's label.
        label: String,
        /// The server's URL.
        url: String,
        /// What rmcp said.
        error: Box<ClientInitializeError>,
    },
    /// A server reached by URL did not finish the handshake in time.
    #[error("{label}: {url} did not finish the MCP handshake within {secs}s")]
    InitializeTimeout {
        /// The plan entry's label.
        label: String,
        /// The server's URL.
        url: String,
        /// The limit, in seconds.
        secs: u64,
    },
    /// `[tools.mcp]` has neither a command nor a URL (the plan check
    /// refuses this; kept so the server never indexes an empty command).
    #[error("{label}: [tools.mcp] has no command")]
    NoCommand {
        /// The plan entry's label.
        label: String,
    },
    /// The executable to re-run as the server's reaper was not found.
    #[error("{label}: cannot find the toolhost executable to run its reaper: {error}")]
    Reaper {
        /// The plan entry's label.
        label: String,
        /// What `current_exe` said.
        error: std::io::Error,
    },
    /// A stdio server could not be spawned.
    #[error("{label}: cannot start MCP server '{program}': {error}")]
    Spawn {
        /// The plan entry's label.
        label: String,
        /// The server's program.
        program: String,
        /// What the spawn said.
        error: std::io::Error,
    },
    /// The spawned server has no stdin or stdout pipe.
    #[error("{label}: the MCP server has no pipes")]
    Pipes {
        /// The plan entry's label.
        label: String,
    },
    /// A stdio server's handshake failed; `why` says how the server ended.
    #[error("{label}: MCP server '{program}' ({why}): {error}")]
    Handshake {
        /// The plan entry's label.
        label: String,
        /// The server's program.
        program: String,
        /// How the process ended ("exited with status 1").
        why: String,
        /// What failed.
        error: HandshakeError,
    },
    /// The thread that waits for a stdio server's exit could not start.
    #[error("{label}: cannot watch the MCP server: {error}")]
    Watch {
        /// The plan entry's label.
        label: String,
        /// What the spawn said.
        error: std::io::Error,
    },
    /// `tools/list` failed.
    #[error("{label}: tools/list failed: {error}")]
    List {
        /// The plan entry's label.
        label: String,
        /// What rmcp said.
        error: Box<ServiceError>,
    },
    /// `tools/list` got no answer in time.
    #[error("{label}: tools/list got no answer within {secs}s")]
    ListTimeout {
        /// The plan entry's label.
        label: String,
        /// The limit, in seconds.
        secs: u64,
    },
    /// The tool list went past one of `[host.mcp_limits]`; nothing of it
    /// was kept.
    #[error("{label}: the tool list was refused: {bound} (after {walked} when it was stopped)")]
    Bounded {
        /// The plan entry's label.
        label: String,
        /// The cap.
        bound: super::bounds::ListBound,
        /// What the walk had taken, in words.
        walked: String,
    },
    /// No live connection could be had for a re-read (the restart
    /// discipline's answer, which names the server).
    #[error("{0}")]
    Unavailable(String),
}

/// Why a stdio server's MCP handshake failed.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    /// Its pipes could not be handed to the async runtime.
    #[error("{0}")]
    Pipe(std::io::Error),
    /// The handshake itself failed.
    #[error("the MCP handshake failed: {0}")]
    Failed(Box<ClientInitializeError>),
    /// No answer in time.
    #[error("no MCP handshake within {secs}s")]
    Timeout {
        /// The limit, in seconds.
        secs: u64,
    },
    /// The client runtime failed.
    #[error("{0}")]
    Runtime(RuntimeError),
}
