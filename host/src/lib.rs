//! # toolhost
//!
//! Loads tool modules (cdylibs built on toolhost-core) from a TOML mount
//! plan and runs every call through one pipeline: resolve, validate, policy,
//! hooks, schedule, execute, post-process, record.
//!
//! The binary (`toolhost`) is a thin CLI over this library; tests and
//! benchmarks drive the same [`pipeline::Pipeline`] in-process.

// Pipeline stages return `Result<_, ToolResult>`: a refusal *is* the
// finished result, which the rest of the pipeline passes through untouched.
// Boxing it would add noise to every stage for no measurable gain on a path
// that ends the call anyway.
#![allow(clippy::result_large_err)]
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

// The plan layer, under the module names the host has always used.
pub use toolhost_plan::{alias, cancel, context, escape, governance, plan, private_file, progress, tool};

pub mod audit;
pub mod cli;
pub mod events;
pub mod host;
pub mod isolate;
pub mod loader;
pub mod logging;
pub mod mcp;
pub mod pipeline;
pub mod registry;
// Sessions end with the host's modules: they live beside it.
pub use host::session;
pub mod source;
pub mod state;
pub mod surface;
pub mod term;
