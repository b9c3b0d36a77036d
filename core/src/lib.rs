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
//! The ABI has its own version, [`abi::ABI_VERSION`], apart from this
//! crate's ([`SDK_VERSION`]): a module built against any toolhost-core
//! release that speaks ABI 0.y loads in every host that speaks 0.y, and no
//! other. The SDK follows ordinary semver; the ABI version changes only when
//! the frozen surface does.
//!
//! schemars, serde and serde_json are re-exported, so a module's Cargo.toml
//! names toolhost-core alone (see the README for the two derive attributes).

#![warn(missing_docs)]
// The one `unsafe` (building the library header) is in sdk/export.rs.
#![deny(unsafe_op_in_unsafe_fn)]
pub mod abi;
pub mod protected;
mod sdk;
pub mod state;
pub mod wire;

pub use schemars;
pub use schemars::JsonSchema;
pub use sdk::context::{Context, Level};
pub use sdk::coordinator::{Cleanup, Coordinator};
pub use sdk::error::{MountError, ToolError};
pub use sdk::granted::GrantedState;
pub use sdk::guard::panic_message;
pub use sdk::session;
pub use sdk::structured::Structured;
pub use sdk::testing;
pub use sdk::tool::Tool;
pub use serde;
pub use serde_json;
pub use wire::{
    AccessMode, Annotations, CallRequest, ContentBlock, Deprecation, Effect, ErrorInfo, Manifest, Metadata,
    RequestContext, Status, TaskSupport, ToolResult, ToolSpec,
};

/// This SDK's crate version (ordinary semver; not the ABI version).
pub const SDK_VERSION: &str = env!("TOOLHOST_SDK_VERSION");

/// Items the `export_module!` expansion needs; not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::sdk::export::{lib_header, manifest_json, mount_entry, root_module};
    pub use abi_stable::library::{__call_root_module_loader, LibHeader, RootModuleResult};
    pub use abi_stable::std_types::{RResult, RStr, RString};
}
