//! # toolhost-state: what outlives a call
//!
//! Its one job: keep what the host must remember past one call. That is
//! the idempotency store ([`state`]: embedded SQLite by default, a fleet's
//! PostgreSQL with `[host] state_url`) and the hash-chained audit log
//! ([`audit`]), whose records go to a sink ([`state::audit_sink`]: the
//! JSONL file, or PostgreSQL beside the fleet's keys).
//!
//! It may depend on `toolhost-plan` (re-exported here under the module
//! names the host has always used) and `toolhost-core`: it knows no
//! backend, pipeline or front door. Inside it, `audit` uses `state`, never
//! the other way round.

#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

pub use toolhost_plan::{plan, private_file};

pub mod audit;
pub mod state;
