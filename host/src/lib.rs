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

pub mod alias;
pub mod ask;
pub mod cancel;
pub mod cli;
pub mod context;
pub mod escape;
pub mod events;
pub mod governance;
pub mod host;
pub mod isolate;
pub mod loader;
pub mod logging;
pub mod mcp;
pub mod pipeline;
pub mod plan;
pub mod private_file;
pub mod progress;
pub mod registry;
pub mod session;
pub mod source;
pub mod state;
pub mod surface;
pub mod term;
pub mod tool;
