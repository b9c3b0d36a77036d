//! `toolhost serve`: the plan's tools over the Model Context Protocol.
//!
//! The tools are only known once the plan has loaded, so the server is a
//! hand-written [`rmcp::ServerHandler`] ([`handler::ToolhostServer`]) rather
//! than rmcp's compile-time tool macros. Every `tools/call` runs through the
//! same [`crate::pipeline::Pipeline`] as `toolhost call`, turned into one and
//! answered by the one [`adapter`], whichever transport brought it.
//!
//! Transports: stdio ([`stdio::serve`]) and streamable HTTP ([`http::serve`]),
//! the latter behind a bearer token ([`auth`]) whenever it leaves loopback.

pub mod adapter;
pub mod auth;
pub mod cache_hints;
// How a tool and a result look in MCP: the surface lists tools in that form.
pub use crate::surface::convert;
pub mod elicit;
pub mod handler;
pub mod http;
pub mod input_required;
pub mod oauth;
pub mod progress;
pub mod stdio;
pub mod tasks;
pub mod tools_changed;

pub use handler::ToolhostServer;
