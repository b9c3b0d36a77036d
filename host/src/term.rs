//! Whether to colour a stream: only a terminal, and never when `NO_COLOR`
//! is set (<https://no-color.org>: present and not empty), so logs piped to a
//! file or another program stay plain text.

use std::io::IsTerminal;

/// Colour for stderr (log lines, human status lines).
pub fn colour_stderr() -> bool {
    colour(std::io::stderr().is_terminal())
}

/// Colour for stdout (human output of `call`, `batch`, `list`).
pub fn colour_stdout() -> bool {
    colour(std::io::stdout().is_terminal())
}

/// Colour when the stream is a terminal and `NO_COLOR` is unset or empty.
pub fn colour(is_terminal: bool) -> bool {
    is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}
