//! The glue `export_module!` expands to: the library header, the manifest
//! and the guarded `mount` entry point.

use abi_stable::library::{CheckTypeLayout, LibHeader, RootModuleResult};
use abi_stable::prefix_type::PrefixTypeTrait;
use abi_stable::std_types::{RErr, ROk, RResult, RStr, RString};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::coordinator::{Cleanup, Coordinator};
use super::error::MountError;
use super::guard::guard;
use crate::abi::{FfiCleanupBox, FfiCoordinatorBox, Module, ModuleRef, ABI_VERSION};
use crate::wire::{Manifest, MountEnvelope};

/// The library header for a root-module constructor.
///
/// Only `export_module!` calls this, with a constructor that returns the
/// module built by [`root_module`]; that is the invariant abi_stable's
/// `from_constructor` requires.
#[doc(hidden)]
pub const fn lib_header(constructor: extern "C" fn() -> RootModuleResult) -> LibHeader {
    // SAFETY: `constructor` is the macro-generated loader that wraps a
    // `fn() -> ModuleRef`, so its PrefixRef was made from a ModuleRef.
    unsafe { LibHeader::from_constructor::<ModuleRef>(constructor, CheckTypeLayout::Yes) }
}

/// Builds the root module from the two macro-generated entry points.
#[doc(hidden)]
pub fn root_module(
    manifest: extern "C" fn() -> RString,
    mount: extern "C" fn(FfiCoordinatorBox, RStr<'_>) -> RResult<FfiCleanupBox, RString>,
) -> ModuleRef {
    Module { manifest, mount }.leak_into_prefix()
}

/// The manifest JSON for a module.
#[doc(hidden)]
pub fn manifest_json(name: &str, version: &str, description: &str) -> RString {
    let manifest = Manifest {
        name: name.to_string(),
        version: version.to_string(),
        description: description.to_string(),
        toolhost_core: ABI_VERSION.to_string(),
    };
    RString::from(serde_json::to_string(&manifest).unwrap_or_default())
}

/// Parses the envelope and config, runs the author's `mount` under the panic
/// guard, and hands back the cleanup. Config errors name the field.
#[doc(hidden)]
pub fn mount_entry<C, F>(
    ffi: FfiCoordinatorBox,
    envelope: RStr<'_>,
    name: &str,
    version: &str,
    mount: F,
) -> RResult<FfiCleanupBox, RString>
where
    C: DeserializeOwned,
    F: FnOnce(&Coordinator, C) -> Result<Cleanup, MountError>,
{
    let outcome = guard(|| -> Result<FfiCleanupBox, MountError> {
        let envelope: MountEnvelope = serde_json::from_str(envelope.as_str())
            .map_err(|e| MountError::new(format!("the host sent a malformed mount envelope: {e}")))?;
        let config = match envelope.config {
            Value::Null => Value::Object(Default::default()),
            other => other,
        };
        let config: C = serde_path_to_error::deserialize(config).map_err(|e| {
            let path = e.path().to_string();
            let at = if path == "." {
                String::new()
            } else {
                format!(" at `{path}`")
            };
            MountError::new(format!("invalid config{at}: {}", e.into_inner()))
        })?;
        let coordinator = Coordinator::new(ffi, name, version, envelope.host);
        super::panic_hook::install(&coordinator);
        let cleanup = mount(&coordinator, config)?;
        Ok(cleanup.into_ffi(coordinator))
    });
    match outcome {
        Ok(Ok(cleanup)) => ROk(cleanup),
        Ok(Err(e)) => RErr(RString::from(e.message())),
        Err(panic) => RErr(RString::from(format!("mount panicked: {panic}"))),
    }
}

/// Exports a module: the one line that turns a crate into a toolhost module.
///
/// ```ignore
/// toolhost_core::export_module! {
///     name: "acme",
///     description: "Acme's tools",
///     mount: mount,
/// }
///
/// fn mount(coordinator: &Coordinator, config: AcmeConfig) -> Result<Cleanup, MountError> {
///     coordinator.register(Hello)?;
///     Ok(Cleanup::none())
/// }
/// ```
///
/// The config type is any `Deserialize` type (use `serde_json::Value` to
/// take anything); the module's version is the crate's `CARGO_PKG_VERSION`.
#[macro_export]
macro_rules! export_module {
    (name: $name:expr, description: $description:expr, mount: $mount:expr $(,)?) => {
        #[doc(hidden)]
        #[export_name = "_1as_0lib_1header_0root_bmodule_bloader"]
        pub static __TOOLHOST_LIB_HEADER: $crate::__private::LibHeader = {
            extern "C" fn __toolhost_loader() -> $crate::__private::RootModuleResult {
                $crate::__private::__call_root_module_loader(__toolhost_root_module)
            }
            $crate::__private::lib_header(__toolhost_loader)
        };

        #[doc(hidden)]
        fn __toolhost_root_module() -> $crate::abi::ModuleRef {
            $crate::__private::root_module(__toolhost_manifest, __toolhost_mount)
        }

        #[doc(hidden)]
        extern "C" fn __toolhost_manifest() -> $crate::__private::RString {
            $crate::__private::manifest_json($name, env!("CARGO_PKG_VERSION"), $description)
        }

        #[doc(hidden)]
        extern "C" fn __toolhost_mount(
            coordinator: $crate::abi::FfiCoordinatorBox,
            envelope: $crate::__private::RStr<'_>,
        ) -> $crate::__private::RResult<$crate::abi::FfiCleanupBox, $crate::__private::RString> {
            $crate::__private::mount_entry(
                coordinator,
                envelope,
                $name,
                env!("CARGO_PKG_VERSION"),
                $mount,
            )
        }
    };
}
