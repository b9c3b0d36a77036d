//! # toolhost-core
//!
//! The one crate a toolhost module depends on. It holds:
//!
//! - [`abi`]: the small, frozen boundary the host and modules share, checked by
//!   `abi_stable` at load time;
//! - [`wire`]: the JSON documents that cross it (specs, calls, results), which
//!   may grow without breaking anyone;
//! - the SDK ([`Tool`], [`Context`], [`Coordinator`], [`export_module!`]): plain
//!   Rust for module authors, with no `unsafe` and no `abi_stable` types.
//!
//! A tool is a struct implementing [`Tool`] with a typed input: the JSON Schema
//! is derived from it (schemars), bad input becomes a `validation_error` naming
//! the field, and a panic becomes an `error` result with code `panicked` rather
//! than an abort. See the crate README for the module author's guide.
//!
//! The version of this crate is the ABI version: a module built against
//! toolhost-core 0.y loads in every host that speaks 0.y, and no other.

#![warn(missing_docs)]
pub mod abi;
mod sdk;
pub mod wire;

pub use schemars::JsonSchema;
pub use sdk::context::{Context, Level};
pub use sdk::coordinator::{Cleanup, Coordinator};
pub use sdk::error::{MountError, ToolError};
pub use sdk::testing;
pub use sdk::tool::Tool;
pub use wire::{
    AccessMode, Annotations, CallRequest, Effect, ErrorInfo, Manifest, Metadata, Status, ToolResult, ToolSpec,
};

/// Items the `export_module!` expansion needs; not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::sdk::export::{lib_header, manifest_json, mount_entry, root_module};
    pub use abi_stable::library::{__call_root_module_loader, LibHeader, RootModuleResult};
    pub use abi_stable::std_types::{RResult, RStr, RString};
}
