//! # toolhost-plan: the bottom layer of the host
//!
//! Its one job: read and check a mount plan, and hold the vocabulary every
//! layer above it shares. That is the plan ([`plan`]) with the rules it
//! carries ([`governance`], [`alias`], [`toolsets`], [`redact`]) and its
//! lock file ([`pin`]), and the
//! words the engine speaks about a call: a tool as mounted ([`tool`]), the
//! context a call runs in ([`context`], [`cancel`], [`progress`]), and the
//! small helpers they share ([`escape`], [`canonical`], [`fingerprint`],
//! [`private_file`]).
//!
//! It may depend on `toolhost-core` and `toolhost-sync` only: it knows no
//! backend, no pipeline, no state store and no front door, and a `use` of
//! one cannot compile here. Inside it the modules form no import circle:
//! `plan` uses `governance`, `toolsets` and `tool`; `governance` and
//! `toolsets` use `tool`; `tool` uses `context` and `fingerprint`;
//! `context` uses `redact`.

// Checks return `Result<_, ToolResult>`: a refusal *is* the finished result
// (see the pipeline).
#![allow(clippy::result_large_err)]
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod alias;
pub mod ask;
pub mod cancel;
pub mod canonical;
pub mod context;
pub mod deadline;
pub mod escape;
pub mod fingerprint;
pub mod governance;
pub mod grants;
pub mod lent;
pub mod pin;
pub mod plan;
pub mod private_file;
pub mod progress;
pub mod redact;
pub mod tool;
pub mod toolsets;
