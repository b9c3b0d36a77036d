//! The caching hints (`ttlMs`, `cacheScope`) of a `tools/list` answered to
//! a client on 2026-07-28, which caches lists by them instead of learning
//! of changes in a session it no longer has.

use rmcp::model::{CacheScope, ListToolsResult};

use crate::host::Host;
use crate::plan::ModuleSource;

/// How long a 2026-07-28 client may keep a `tools/list` when no mounted
/// MCP server can change it: the list is then fixed for the life of the
/// process, and a restart with another plan is the only change.
pub const FIXED_LIST_TTL_MS: u64 = 5 * 60 * 1000;

/// Sets the hints and a stable order (by name) on `listed`, the tools
/// `host` lists for one caller. The scope is always private: grants and
/// toolsets make the list the caller's own. A plan mounting an MCP server
/// gets `ttlMs: 0` (re-list before use), since that server may change its
/// tools at any moment and a stateless client is not told.
pub fn tools(host: &Host, listed: &mut ListToolsResult) {
    listed.tools.sort_by(|a, b| a.name.cmp(&b.name));
    let changing = host
        .plan
        .tools
        .iter()
        .any(|entry| matches!(entry.source, ModuleSource::Mcp(_)));
    listed.ttl_ms = Some(if changing { 0 } else { FIXED_LIST_TTL_MS });
    listed.cache_scope = Some(CacheScope::Private);
}
