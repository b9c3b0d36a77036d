//! # toolhost-layers
//!
//! Layer: tooling, outside the product. It depends on no workspace crate
//! (only `regex` and `serde_json`), so that checking the layering never
//! waits for the crates it checks to build, and a broken layer cannot hide
//! the check that reports it.
//!
//! Three checks, each a test in `tests/`:
//! - [`crates`]: the workspace's crates, read from `cargo metadata`, each in
//!   a declared layer that names what it may depend on; a crate that
//!   depends on a higher one fails the test (so does a crate no layer
//!   declares).
//! - [`files`]: every workspace crate's sources as a graph of files joined
//!   by `crate::` and `super::` paths; an import circle of more than three
//!   files fails the test. The compiler allows such circles inside a crate,
//!   and they are how layers dissolve unnoticed.
//! - [`modules`]: the same graph folded to each of the host's layer crates'
//!   top-level modules; a circle between two of them fails the test unless
//!   the crate declares them one layer.

pub mod crates;
pub mod files;
pub mod metadata;
pub mod modules;
