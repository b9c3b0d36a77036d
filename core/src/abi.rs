//! The frozen ABI surface between the host and a module.
//!
//! Everything here is checked by `abi_stable` when a library loads, and every
//! field or method added later breaks every module already published. So the
//! surface is deliberately tiny: each payload that may grow (specs, calls,
//! results, manifests, config) crosses as JSON text instead.
//!
//! Module authors never touch these types; the SDK in [`crate::sdk`] speaks
//! them. The host implements [`FfiCoordinator`] and [`FfiContext`]; modules
//! implement [`FfiTool`] and [`FfiCleanup`] (through the SDK).

#![allow(non_local_definitions)] // emitted by abi_stable's sabi_trait expansion

use abi_stable::{
    declare_root_module_statics,
    library::RootModule,
    sabi_trait,
    sabi_types::VersionStrings,
    std_types::{RBox, RResult, RStr, RString},
    StableAbi,
};

/// Log levels as they cross the boundary (`u8`, most severe first).
pub mod level {
    /// An error the operator should see.
    pub const ERROR: u8 = 1;
    /// Something unusual that did not stop the module.
    pub const WARN: u8 = 2;
    /// Normal operational messages.
    pub const INFO: u8 = 3;
    /// Diagnostics for developers.
    pub const DEBUG: u8 = 4;
    /// Very chatty diagnostics.
    pub const TRACE: u8 = 5;
}

/// `remaining_ms` value meaning "no deadline".
pub const NO_DEADLINE: u64 = u64::MAX;

/// A tool as the host sees it: a spec and an execute function, both JSON.
///
/// `execute` is blocking; the host runs it on a blocking thread and signals
/// cancellation through the context. It must never unwind (the SDK's adapter
/// catches panics before they reach this boundary).
#[sabi_trait]
pub trait FfiTool: Send + Sync {
    /// The tool's `ToolSpec` as JSON text.
    fn spec(&self) -> RString;

    /// Runs one call. `call` is a `CallRequest` as JSON text; the answer is a
    /// `ToolResult` as JSON text.
    #[sabi(last_prefix_field)]
    fn execute(&self, call: RStr<'_>, ctx: FfiContextRef<'_>) -> RString;
}

/// An owned tool object, as registered with the coordinator.
pub type FfiToolBox = FfiTool_TO<'static, RBox<()>>;

/// What the host hands to `mount`: the only way a module reaches the host.
#[sabi_trait]
pub trait FfiCoordinator: Send + Sync {
    /// Registers a tool. Fails (with a message) once mounting has finished.
    fn register_tool(&self, tool: FfiToolBox) -> RResult<(), RString>;

    /// Declares event names this module may emit (a JSON array of strings).
    fn contribute_events(&self, names_json: RStr<'_>);

    /// Emits an event with a JSON payload to the host's observers.
    fn emit(&self, event: RStr<'_>, payload_json: RStr<'_>);

    /// Writes a log line into the host's `tracing` output.
    #[sabi(last_prefix_field)]
    fn log(&self, level: u8, message: RStr<'_>);

    /// Owner-scoped state outside a call (ABI 0.3): `request` is a
    /// [`crate::state::Granted`] as JSON text, carrying a grant a call gave
    /// the module; the answer a [`crate::state::Answer`]. Optional in the
    /// vtable, like [`FfiContext::state`]: this default answers
    /// `unsupported`.
    fn state(&self, request: RStr<'_>) -> RString {
        let _ = request;
        RString::from(crate::state::UNSUPPORTED_ANSWER)
    }
}

/// The owned coordinator object passed to `mount`.
pub type FfiCoordinatorBox = FfiCoordinator_TO<'static, RBox<()>>;

/// Per-call services the host offers to a running tool.
#[sabi_trait]
pub trait FfiContext: Sync {
    /// Whether the call has been cancelled (timeout, client cancel, SIGINT).
    fn is_cancelled(&self) -> bool;

    /// Blocks until cancelled or `timeout_ms` passes; returns whether cancelled.
    fn wait_cancelled(&self, timeout_ms: u64) -> bool;

    /// Milliseconds left before the host's deadline, or [`NO_DEADLINE`].
    fn remaining_ms(&self) -> u64;

    /// Reports progress: `{"progress": n, "total"?: n, "message"?: s}`.
    fn progress(&self, json: RStr<'_>);

    /// Writes a log line attributed to this call.
    #[sabi(last_prefix_field)]
    fn log(&self, level: u8, message: RStr<'_>);

    /// The call's owner-scoped state (ABI 0.2): `request` is a
    /// [`crate::state::Request`] as JSON text, the answer a
    /// [`crate::state::Answer`]. Optional in the vtable: a host that does
    /// not provide it leaves the slot out, and this default answers
    /// `unsupported`, so a module falls back to keeping its state in memory.
    fn state(&self, request: RStr<'_>) -> RString {
        let _ = request;
        RString::from(crate::state::UNSUPPORTED_ANSWER)
    }
}

/// A borrowed context, valid for the duration of one `execute`.
pub type FfiContextRef<'a> = FfiContext_TO<'a, abi_stable::sabi_types::RRef<'a, ()>>;

/// Undoes what `mount` did (stop runtimes, kill children, flush files).
#[sabi_trait]
pub trait FfiCleanup: Send {
    /// Runs the cleanup. Called once, after the module's tools are dropped.
    #[sabi(last_prefix_field)]
    fn cleanup(&mut self);
}

/// The owned cleanup handle returned by `mount`.
pub type FfiCleanupBox = FfiCleanup_TO<'static, RBox<()>>;

/// The root module every toolhost library exports.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = ModuleRef)))]
#[sabi(missing_field(panic))]
pub struct Module {
    /// The module's `Manifest` as JSON text.
    pub manifest: extern "C" fn() -> RString,

    /// Mounts the module: `envelope` is a `MountEnvelope` as JSON text. On
    /// success the module has registered its tools and returns its cleanup.
    #[sabi(last_prefix_field)]
    pub mount:
        extern "C" fn(coordinator: FfiCoordinatorBox, envelope: RStr<'_>) -> RResult<FfiCleanupBox, RString>,
}

impl RootModule for ModuleRef {
    declare_root_module_statics! {ModuleRef}
    const BASE_NAME: &'static str = "toolhost_module";
    const NAME: &'static str = "toolhost_module";
    const VERSION_STRINGS: VersionStrings = VersionStrings::new(ABI_VERSION);
}

include!("abi_version.rs");

/// Whether a library built against ABI version `library` can be loaded by a
/// host speaking `host`: for 0.y versions y must match, for x.y.z x must match.
///
/// abi_stable's own check also admits a *newer* 0.y library, whose prefix
/// types the host may not know, so the host applies this stricter rule first.
pub fn abi_compatible(host: (u32, u32), library: (u32, u32)) -> bool {
    if host.0 == 0 || library.0 == 0 {
        host == library
    } else {
        host.0 == library.0
    }
}

/// `(major, minor)` of a version string such as `0.1.0`.
pub fn major_minor(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.split('.');
    let major = parts.next()?.trim().parse().ok()?;
    let minor = parts.next()?.trim().parse().ok()?;
    Some((major, minor))
}

/// Whether a library built against ABI version `built_against` may be
/// loaded by this host ([`abi_compatible`] on the two versions).
pub fn loads_in_this_host(built_against: &str) -> bool {
    match (major_minor(ABI_VERSION), major_minor(built_against)) {
        (Some(host), Some(library)) => abi_compatible(host, library),
        _ => false,
    }
}

/// The ABI series a module must be built against to load here: `0.y` while the
/// major version is 0, else the major version.
pub fn abi_series() -> String {
    match major_minor(ABI_VERSION) {
        Some((0, minor)) => format!("0.{minor}"),
        Some((major, _)) => major.to_string(),
        None => ABI_VERSION.to_string(),
    }
}

/// The exported symbol name of the library header (abi_stable's mangling of
/// `_as.lib_header.root module loader`). The `export_module!` macro needs it
/// as a literal; a test pins it to abi_stable's constant.
#[doc(hidden)]
#[macro_export]
macro_rules! __root_module_symbol {
    () => {
        "_1as_0lib_1header_0root_bmodule_bloader"
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbol_name_matches_abi_stable() {
        assert_eq!(
            crate::__root_module_symbol!(),
            abi_stable::library::ROOT_MODULE_LOADER_NAME
        );
    }

    #[test]
    fn versions_are_read_and_judged_against_this_host() {
        assert_eq!(major_minor("0.1.7"), Some((0, 1)));
        assert_eq!(major_minor(" 2 . 3"), Some((2, 3)));
        assert_eq!(major_minor("x.1"), None);
        assert!(loads_in_this_host(ABI_VERSION));
        assert!(!loads_in_this_host("0.0.7"));
        assert!(!loads_in_this_host("garbage"));
        assert!(ABI_VERSION.starts_with(&abi_series()));
    }

    /// abi_stable compares the package and version recorded in each boundary
    /// type's layout; they must be toolhost-core and the ABI version (not the
    /// SDK's crate version), or an SDK release would refuse every module.
    #[test]
    fn layouts_record_the_abi_version_not_the_sdk_version() {
        use abi_stable::StableAbi;
        let (package, version) = <FfiCleanupBox as StableAbi>::LAYOUT.package_and_version();
        assert_eq!(package.as_str(), "toolhost-core");
        assert_eq!(version.version.as_str(), ABI_VERSION);
        assert_eq!(
            <ModuleRef as RootModule>::VERSION_STRINGS.version.as_str(),
            ABI_VERSION
        );
        assert_ne!(crate::SDK_VERSION, "", "the SDK's own version is kept");
    }

    #[test]
    fn zero_minor_must_match() {
        assert!(abi_compatible((0, 1), (0, 1)));
        assert!(!abi_compatible((0, 1), (0, 2)));
        assert!(!abi_compatible((0, 2), (0, 1)));
        assert!(!abi_compatible((1, 0), (0, 1)));
        assert!(abi_compatible((1, 0), (1, 3)));
        assert!(!abi_compatible((1, 0), (2, 0)));
    }
}
