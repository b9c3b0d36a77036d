//! Tool sources other than module libraries: mounted MCP servers.

pub mod mcp;
