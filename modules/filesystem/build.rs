//! Links the module with packed relative relocations (RELR, `-z
//! pack-relative-relocs`): its ~19,000 relative relocations are a 460 KB
//! RELA table the loader reads and walks at every mount (every `toolhost
//! serve` start); packed, a few KB. See the host's `build.rs`.
fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-cdylib=-Wl,-z,pack-relative-relocs");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
