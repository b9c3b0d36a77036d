//! Links the `toolhost` binary with packed relative relocations (RELR,
//! `-z pack-relative-relocs`): the position-independent binary has ~45,000
//! relative relocations, which as RELA entries are a 1 MB table the dynamic
//! loader reads and walks at every start; packed, they take ~13 KB. It is
//! most of what the loader does before `main`, and `toolhost serve` starts
//! once per agent session. A linker that does not know the option ignores
//! it with a warning (GNU ld before 2.38); the glibc loader knows RELR from
//! 2.36 on.
fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
