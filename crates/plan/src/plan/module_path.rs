//! Where modules are looked for when a plan names no `module_path`.

use std::path::{Path, PathBuf};

/// The folders searched when a plan names no `module_path`: the running
/// binary's own folder (a checkout's `target/release` or `target/debug`,
/// where cargo puts the cdylibs beside the binary), then
/// `<exe dir>/../lib/toolhost` (the layout `cargo xtask install` writes:
/// `bin/toolhost` and `lib/toolhost/*.so`). So the default plan works from
/// any folder without knowing where toolhost was installed.
pub fn beside_exe() -> Vec<PathBuf> {
    let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
    else {
        return Vec::new();
    };
    let installed = super::normalize(&dir.join("../lib/toolhost"));
    vec![dir, installed]
}
