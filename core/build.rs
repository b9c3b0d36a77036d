//! Gives the ABI surface its own version.
//!
//! abi_stable's derives record `CARGO_PKG_NAME;CARGO_PKG_VERSION` of the
//! crate that defines each boundary type, and refuse a library whose record
//! is not 0.y-compatible with the host's. Left alone, that would make
//! toolhost-core's crate version the ABI version, so any SDK release would
//! refuse every published module. This script compiles the crate with
//! `CARGO_PKG_VERSION` set to [`ABI_VERSION`] (src/abi_version.rs) and keeps
//! the real crate version as `TOOLHOST_SDK_VERSION`. A unit test in
//! `abi.rs` checks that the recorded layout version is the ABI version.

include!("src/abi_version.rs");

fn main() {
    let sdk = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    println!("cargo::rustc-env=TOOLHOST_SDK_VERSION={sdk}");
    println!("cargo::rustc-env=CARGO_PKG_VERSION={ABI_VERSION}");
    println!("cargo::rerun-if-changed=src/abi_version.rs");
    println!("cargo::rerun-if-changed=build.rs");
}
