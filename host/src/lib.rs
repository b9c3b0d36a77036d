//! # toolhost
//!
//! Loads tool modules (cdylibs built on toolhost-core) from a TOML mount
//! plan and runs every call through one pipeline: resolve, validate, policy,
//! hooks, schedule, execute, post-process, record.
//!
//! The binary (`toolhost`) is a thin CLI over this library; tests and
//! benchmarks drive the same [`pipeline::Pipeline`] in-process.
//!
//! This crate is the top layer, the front doors: the MCP server ([`mcp`],
//! stdio and streamable HTTP) and the CLI ([`cli`]). The engine below it
//! (`toolhost-engine`) and the plan layer (`toolhost-plan`) are re-exported
//! under their old module names, so `toolhost::pipeline::Pipeline` still
//! names the pipeline.

// Pipeline stages return `Result<_, ToolResult>`: a refusal *is* the
// finished result, which the rest of the pipeline passes through untouched.
// Boxing it would add noise to every stage for no measurable gain on a path
// that ends the call anyway.
#![allow(clippy::result_large_err)]
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

// The layers below, under the module names the host has always used (the
// engine re-exports the plan, state and backend layers). This crate adds the front doors (the MCP
// server and the CLI) on top.
pub use toolhost_engine::{
    alias, ask, audit, cancel, context, deadline, escape, events, governance, host, isolate, loader,
    pipeline, plan, private_file, progress, registry, session, source, state, surface, tool,
};

pub mod cli;
pub mod logging;
pub mod mcp;
pub mod term;
pub mod ui;
