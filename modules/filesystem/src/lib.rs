//! The filesystem module: read_file, write_file, edit_file, list_directory,
//! glob and grep behind one path policy.
//!
//! Every path is checked by components against the allowed roots and the
//! deny rules, then opened by the kernel beneath an opened root handle
//! (openat2 with RESOLVE_BENEATH), so neither a prefix sibling, a symlink
//! pointing out, nor a folder swapped for a symlink mid-call can escape.
//! Writes are atomic (temp file, fsync, rename in the same folder handle)
//! and guarded: a file must be read in this process before it is replaced.

#![warn(missing_docs)]

pub mod atomic;
pub mod config;
pub mod edit;
pub mod file_types;
pub mod guard;
pub mod history;
pub mod listing;
pub mod media;
pub mod pending;
pub mod policy;
pub mod records;
pub mod search;
pub mod session_end;
pub mod snapshot;
pub mod state;
pub mod text;
pub mod tools;
pub mod walk;

use std::sync::Arc;

use toolhost_core::{Cleanup, Coordinator, Level, MountError};

pub use config::Config;
use state::Shared;

toolhost_core::export_module! {
    name: "filesystem",
    description: "Files: read_file, write_file, edit_file, delete_file, undo_edit, list_directory, glob, grep, confined to allowed folders",
    mount: mount,
}

/// Compiles the policy and registers every tool.
pub fn mount(coordinator: &Coordinator, config: Config) -> Result<Cleanup, MountError> {
    let state = build_state_with(
        coordinator.working_dir(),
        config,
        coordinator.state_dir(),
        coordinator.protected().clone(),
    )
    .map_err(MountError::new)?;
    let swept = state.pending.sweep(&state.policy);
    if swept.removed > 0 {
        coordinator.log(
            Level::Info,
            format!(
                "removed {} temp file(s) left by a host that stopped mid-write",
                swept.removed
            ),
        );
    }
    for root in state.policy.read_roots().roots.iter() {
        if !root.canonical.is_dir() {
            coordinator.log(
                Level::Warn,
                format!(
                    "allowed folder {:?} does not exist (yet); nothing can be read there",
                    root.configured
                ),
            );
        }
    }
    session_end::register(coordinator, state.clone());
    coordinator.register(tools::read_file::ReadFile { state: state.clone() })?;
    coordinator.register(tools::write_file::WriteFile { state: state.clone() })?;
    coordinator.register(tools::edit_file::EditFile { state: state.clone() })?;
    coordinator.register(tools::list_directory::ListDirectory { state: state.clone() })?;
    coordinator.register(tools::glob::Glob { state: state.clone() })?;
    coordinator.register(tools::grep::Grep { state: state.clone() })?;
    coordinator.register(tools::delete_file::DeleteFile { state: state.clone() })?;
    coordinator.register(tools::undo_edit::UndoEdit { state })?;
    Ok(Cleanup::none())
}

/// The shared state for a config and a mount-time working dir (also used by tests).
pub fn build_state(
    working_dir: &std::path::Path,
    config: Config,
) -> Result<state::State, policy::PolicyError> {
    build_state_in(working_dir, config, None)
}

/// [`build_state`] with the host's state folder, where the markers of
/// pending temp files live (see [`pending`]).
pub fn build_state_in(
    working_dir: &std::path::Path,
    config: Config,
    state_dir: Option<&std::path::Path>,
) -> Result<state::State, policy::PolicyError> {
    build_state_with(working_dir, config, state_dir, Default::default())
}

/// [`build_state_in`] with the host's control plane, which no tool may
/// change (and whose secret part no tool may read).
pub fn build_state_with(
    working_dir: &std::path::Path,
    config: Config,
    state_dir: Option<&std::path::Path>,
    protected: toolhost_core::protected::Protected,
) -> Result<state::State, policy::PolicyError> {
    let policy = policy::Policy::new(&config, working_dir)?.with_protected(protected);
    Ok(Arc::new(Shared {
        policy,
        config,
        reads: Default::default(),
        locks: Default::default(),
        pending: pending::Pending::new(state_dir),
        history: Default::default(),
    }))
}
