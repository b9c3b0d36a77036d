//! What is wrong with a `[tools.mcp]` table, as a kind.

use super::env_expand::ExpandError;

/// A `[tools.mcp]` table the host cannot use; `which` names the
/// `[[tools]]` entry (`[[tools]] #2`).
#[derive(Debug, thiserror::Error)]
pub enum McpTableError {
    /// Both `command` and `url`.
    #[error("{which}: [tools.mcp] takes `command` (stdio) or `url` (streamable HTTP), not both")]
    Both {
        /// The entry.
        which: String,
    },
    /// Neither `command` nor `url`.
    #[error("{which}: [tools.mcp] needs `command = [\"program\", …]` or `url = \"https://…\"`")]
    Neither {
        /// The entry.
        which: String,
    },
    /// `command` starts with an empty program.
    #[error("{which}: [tools.mcp] `command` needs a program")]
    NoProgram {
        /// The entry.
        which: String,
    },
    /// A URL that is not http(s).
    #[error("{which}: [tools.mcp] url '{url}' must start with http:// or https://")]
    Scheme {
        /// The entry.
        which: String,
        /// The URL as written.
        url: String,
    },
    /// `headers` on a stdio server.
    #[error("{which}: [tools.mcp] `headers` apply to `url` servers only")]
    HeadersWithoutUrl {
        /// The entry.
        which: String,
    },
    /// `env` on a URL server.
    #[error("{which}: [tools.mcp] `env` applies to `command` servers only")]
    EnvWithoutCommand {
        /// The entry.
        which: String,
    },
    /// A `${VAR}` that cannot be expanded.
    #[error("{which}: [tools.mcp]: {error}")]
    Expand {
        /// The entry.
        which: String,
        /// What is wrong with the reference.
        error: ExpandError,
    },
}
