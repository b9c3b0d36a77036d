//! `cargo xtask loom`: the model checks of `toolhost-sync` (the hand-off
//! slot and the cancel token), every interleaving of their races.
//!
//! They need `--cfg loom`, and a flag in `RUSTFLAGS` changes every crate's
//! fingerprint: built in the normal target folder it would rebuild the
//! whole workspace twice per run. So they build in a folder of their own
//! (`<target>/loom`) and only `toolhost-sync` with its two dependencies
//! (tokio's `sync` part and loom), which stays small and cached.

use std::process::Command;

use crate::tasks::{run, target_dir};

/// Runs the loom tests.
pub fn loom() -> anyhow::Result<()> {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.args(["test", "-p", "toolhost-sync", "--test", "loom"])
        .env("RUSTFLAGS", "--cfg loom")
        .env("CARGO_TARGET_DIR", target_dir().join("loom"))
        // The models are small: a bound on preemptions keeps each under a
        // second without leaving out the races they are about (each needs
        // at most two preemptions).
        .env("LOOM_MAX_PREEMPTIONS", "3");
    run(&mut cmd)
}
