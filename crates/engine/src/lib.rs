//! # toolhost-engine: the host's middle layer
//!
//! Its one job: mount a plan's tool sources and run every call through one
//! pipeline (resolve, validate, policy, hooks, schedule, execute,
//! post-process, record). It holds, bottom up: the state stores
//! ([`state`]) and the audit log ([`audit`]); the backends a tool runs in
//! ([`loader`] for a library in the host, [`isolate`] for one in a worker
//! process, [`source`] for a mounted MCP server) and the [`events`] they
//! emit; the mounted host ([`host`], its [`registry`] of names and its
//! [`session`]s); what a caller sees ([`surface`]); and the [`pipeline`].
//!
//! It may depend on `toolhost-plan` (re-exported here under the module
//! names the engine has always used), `toolhost-supervise`,
//! `toolhost-core` and `toolhost-sync`. It knows no front door: the MCP
//! server and the CLI are the `toolhost` crate's, above it, and a `use` of
//! them cannot compile here.

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
pub mod events;
pub mod host;
pub mod isolate;
pub mod loader;
pub mod pipeline;
pub mod registry;
pub mod source;
pub mod state;
pub mod surface;

// Sessions end with the host's modules: they live beside it.
pub use host::session;
