//! # toolhost-engine: the host's pipeline layer
//!
//! Its one job: hold a plan's mounted tools and run every call through one
//! pipeline (resolve, validate, policy, hooks, schedule, execute,
//! post-process, record). It holds, bottom up: the mounted host ([`host`],
//! its [`registry`] of names and its [`session`]s), what a caller sees of
//! it ([`surface`]), and the [`pipeline`].
//!
//! It may depend on the layers below it: `toolhost-state` (the state
//! stores and the audit log), `toolhost-backend` (where a tool runs),
//! `toolhost-plan`, `toolhost-supervise`, `toolhost-core` and
//! `toolhost-sync`; it re-exports them under the module names the host has
//! always used. It knows no front door: the MCP server and the CLI are the
//! `toolhost` crate's, above it, and a `use` of them cannot compile here.

// Pipeline stages return `Result<_, ToolResult>`: a refusal *is* the
// finished result, which the rest of the pipeline passes through untouched.
// Boxing it would add noise to every stage for no measurable gain on a path
// that ends the call anyway.
#![allow(clippy::result_large_err)]
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

// The plan layer, under the module names the host has always used.
pub use toolhost_plan::{
    alias, ask, cancel, context, deadline, escape, governance, plan, private_file, progress, tool,
};

// The state and backend layers, likewise.
pub use toolhost_backend::{events, isolate, loader, source};
pub use toolhost_state::{audit, state};

pub mod host;
pub mod pipeline;
pub mod registry;
pub mod surface;

// Sessions end with the host's modules: they live beside it.
pub use host::session;
