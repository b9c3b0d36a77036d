//! Caps on a mounted MCP server's tool list, and MCP's rule for tool names.
//!
//! The server decides what `tools/list` answers: how many pages (each
//! with a `nextCursor` for the next), how many tools, how large. The host
//! walks the pages under these caps and keeps nothing of a walk that goes
//! past one: at mount the mount fails, on a refresh after
//! `notifications/tools/list_changed` the tools already mounted stay. One
//! message's size is bounded below this, by the MCP transports themselves
//! (16 MiB a line over stdio, a JSON body or an SSE event over HTTP).

pub use toolhost_plan::plan::limits::McpLimits;

/// The cap a `tools/list` walk went past.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListBound {
    /// More tools than `max_tools`.
    #[error("it listed more than {cap} tools ([host.mcp_limits] max_tools)")]
    Tools {
        /// The cap.
        cap: usize,
    },
    /// More pages than `max_list_pages`.
    #[error("its tools/list took more than {cap} pages ([host.mcp_limits] max_list_pages)")]
    Pages {
        /// The cap.
        cap: u64,
    },
    /// More bytes than `max_list_bytes`.
    #[error("its tool definitions passed {cap} bytes ([host.mcp_limits] max_list_bytes)")]
    Bytes {
        /// The cap.
        cap: u64,
    },
}

/// What one walk has taken so far: the counters `toolhost check` shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Walked {
    /// Tools listed.
    pub tools: usize,
    /// Pages read.
    pub pages: u64,
    /// Bytes of tool definitions, as JSON.
    pub bytes: u64,
}

impl Walked {
    /// Counts one more page, of `tools` tools.
    pub fn page(&mut self, limits: &McpLimits, tools: usize) -> Result<(), ListBound> {
        self.pages += 1;
        self.tools = self.tools.saturating_add(tools);
        if self.pages > limits.max_list_pages {
            return Err(ListBound::Pages {
                cap: limits.max_list_pages,
            });
        }
        if self.tools > limits.max_tools {
            return Err(ListBound::Tools {
                cap: limits.max_tools,
            });
        }
        Ok(())
    }

    /// Counts `bytes` more of tool definitions.
    pub fn bytes(&mut self, limits: &McpLimits, bytes: u64) -> Result<(), ListBound> {
        self.bytes = self.bytes.saturating_add(bytes);
        if self.bytes > limits.max_list_bytes {
            return Err(ListBound::Bytes {
                cap: limits.max_list_bytes,
            });
        }
        Ok(())
    }

    /// `12 of 1000 tools, 1 page, 3456 bytes`.
    pub fn describe(&self, limits: &McpLimits) -> String {
        format!(
            "{} of {} tools, {} of {} pages, {} of {} bytes",
            self.tools,
            limits.max_tools,
            self.pages,
            limits.max_list_pages,
            self.bytes,
            limits.max_list_bytes
        )
    }
}

/// Why a walk ended without a list.
#[derive(Debug)]
pub(super) enum WalkError {
    /// The server failed a request (or the connection did).
    Service(rmcp::service::ServiceError),
    /// The list went past a cap.
    Bound(ListBound, Walked),
}

/// Walks `tools/list` page by page under `limits`; what a page past a cap
/// brought is dropped with everything before it.
pub(super) async fn walk(
    peer: &rmcp::service::Peer<rmcp::RoleClient>,
    limits: &McpLimits,
) -> Result<(Vec<rmcp::model::Tool>, Walked), WalkError> {
    let mut tools = Vec::new();
    let mut walked = Walked::default();
    let mut cursor = None;
    loop {
        let params = rmcp::model::PaginatedRequestParams::default().with_cursor(cursor);
        let page = peer.list_tools(Some(params)).await.map_err(WalkError::Service)?;
        walked
            .page(limits, page.tools.len())
            .map_err(|b| WalkError::Bound(b, walked))?;
        let bytes: u64 = page
            .tools
            .iter()
            .map(|t| serde_json::to_vec(t).map_or(0, |v| v.len() as u64))
            .sum();
        walked
            .bytes(limits, bytes)
            .map_err(|b| WalkError::Bound(b, walked))?;
        tools.extend(page.tools);
        cursor = page.next_cursor;
        if cursor.is_none() {
            return Ok((tools, walked));
        }
    }
}

/// The longest tool name MCP allows.
pub const MAX_NAME_CHARS: usize = 128;

/// Why a tool name breaks MCP's rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The empty name.
    #[error("the name is empty")]
    Empty,
    /// Longer than [`MAX_NAME_CHARS`].
    #[error("the name is {0} characters long; at most {MAX_NAME_CHARS} are allowed")]
    TooLong(usize),
    /// A character outside `A-Z a-z 0-9 _ - .`.
    #[error("the name holds {0:?}; only A-Z, a-z, 0-9, '_', '-' and '.' are allowed")]
    Character(char),
}

/// Checks `name` against MCP's rule for tool names: 1 to 128 characters,
/// each an ASCII letter or digit, `_`, `-` or `.`. A name outside it (an
/// escape sequence, a newline, a space, a look-alike letter from another
/// script) cannot be told apart from another tool's, or rewrites what a
/// terminal shows.
pub fn check_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(NameError::Character(bad));
    }
    if name.len() > MAX_NAME_CHARS {
        return Err(NameError::TooLong(name.len()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_name_rule() {
        for good in ["read_file", "a", "ns.tool-2", &"x".repeat(128)] {
            check_name(good).unwrap_or_else(|e| panic!("{good}: {e}"));
        }
        assert_eq!(check_name(""), Err(NameError::Empty));
        assert_eq!(check_name(&"x".repeat(129)), Err(NameError::TooLong(129)));
        assert_eq!(check_name("two words"), Err(NameError::Character(' ')));
        assert_eq!(check_name("a\nb"), Err(NameError::Character('\n')));
        assert_eq!(check_name("\x1b]0;x\x07"), Err(NameError::Character('\x1b')));
        // Cyrillic 'е' (U+0435) in place of the Latin 'e'.
        assert_eq!(
            check_name("r\u{435}ad_file"),
            Err(NameError::Character('\u{435}'))
        );
        assert!(check_name("a\nb").unwrap_err().to_string().contains("'\\n'"));
    }

    #[test]
    fn a_walk_stops_at_each_cap() {
        let limits = McpLimits {
            max_tools: 3,
            max_list_pages: 2,
            max_list_bytes: 100,
        };
        let mut walked = Walked::default();
        walked.page(&limits, 2).expect("first page");
        assert_eq!(walked.page(&limits, 2), Err(ListBound::Tools { cap: 3 }));
        let mut walked = Walked::default();
        walked.page(&limits, 0).expect("one");
        walked.page(&limits, 0).expect("two");
        assert_eq!(walked.page(&limits, 0), Err(ListBound::Pages { cap: 2 }));
        let mut walked = Walked::default();
        walked.bytes(&limits, 100).expect("at the cap");
        assert_eq!(walked.bytes(&limits, 1), Err(ListBound::Bytes { cap: 100 }));
    }
}
