//! # toolhost
//!
//! Loads tool modules (cdylibs built on toolhost-core) from a TOML mount
//! plan and runs every call through one pipeline: resolve, validate, policy,
//! hooks, schedule, execute, post-process, record.
//!
//! The binary (`toolhost`) is a thin CLI over this library; tests and
//! benchmarks drive the same [`pipeline::Pipeline`] in-process.

pub mod cancel;
pub mod cli;
pub mod context;
pub mod events;
pub mod host;
pub mod loader;
pub mod logging;
pub mod pipeline;
pub mod plan;
pub mod registry;
pub mod tool;
