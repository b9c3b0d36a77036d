//! # toolhost-backend: where a tool runs
//!
//! Its one job: turn one `[[tools]]` entry of a plan into mounted tools
//! and run their calls. Three backends: a library loaded into the host
//! ([`loader`]), the same library in an isolated worker process
//! ([`isolate`]), and a mounted MCP server ([`source`], which also picks
//! the backend an entry names); the [`events`] their modules emit.
//!
//! It may depend on `toolhost-plan` (re-exported here under the module
//! names the host has always used), `toolhost-supervise`, `toolhost-core`
//! and `toolhost-sync`: it knows no registry, pipeline, state store or
//! front door. Inside it the three backends share one layer: the loader's
//! error wraps the other two's, and they mount through the loader's
//! common parts, so `loader`, `isolate` and `source` may use each other.

// A backend's call returns `Result<_, ToolResult>` where a refusal is the
// finished result (see the pipeline).
#![allow(clippy::result_large_err)]
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

pub use toolhost_plan::{ask, cancel, context, deadline, escape, governance, plan, tool};

pub mod events;
pub mod isolate;
pub mod loader;
pub mod source;
