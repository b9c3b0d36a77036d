/// The version of the frozen ABI surface ([`crate::abi`]): what abi_stable
/// checks at load time and what the host's 0.y rule compares.
///
/// It is *not* toolhost-core's crate version. The SDK (helpers, re-exported
/// schemars, wire constructors) follows ordinary semver and may make a
/// breaking Rust-level change without refusing a single published module;
/// this constant changes only when `abi.rs` changes (a field or method added,
/// a signature altered), and then every module must be rebuilt.
///
/// The build script reads this file too, and compiles the crate with
/// `CARGO_PKG_VERSION` set to it, because abi_stable's derives record the
/// defining package's version in every boundary type's layout.
pub const ABI_VERSION: &str = "0.3.0";
