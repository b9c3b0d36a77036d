//! The folder walks behind glob and grep: ripgrep's `ignore` walker over the
//! real location of an allowed folder, never following links, pruning
//! `.git` and denied entries; each hit is then re-opened beneath the root
//! handle with symlinks refused, so a folder swapped mid-walk yields nothing.

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ignore::WalkBuilder;
use rustix::fs::OFlags;
use toolhost_core::{Context, ToolError};

use crate::policy::fd::{self, Links};
use crate::policy::roots::RootFd;
use crate::policy::{path, root_handle_or_err, ReadHandle};
use crate::state::State;

/// Where a walk runs, in both the model's terms and the kernel's.
pub struct Scope {
    /// The folder's (or file's) real location; the walk starts here.
    pub base_real: PathBuf,
    /// The same place as the model named it (absolute, lexical).
    pub base_lexical: PathBuf,
    /// The working dir, for showing paths relative to it.
    pub working_dir: PathBuf,
    /// The real location of the allowed root containing it.
    pub root_real: PathBuf,
    /// The held handle on that root.
    pub root_fd: Arc<RootFd>,
    /// The opened base itself.
    pub handle: ReadHandle,
    /// Entries the walk left out because they are toolhost's state (the
    /// state folder, token files), counted for the caller's note.
    pub secret_skipped: Arc<AtomicUsize>,
}

impl Scope {
    /// Opens `raw` (default `.`) under the read policy.
    pub fn open(
        state: &State,
        field: &str,
        raw: Option<&str>,
        ctx: &Context<'_>,
    ) -> Result<Scope, ToolError> {
        let policy = &state.policy;
        let handle = policy.open_read(field, raw.unwrap_or("."), ctx.working_dir())?;
        let (root, _) = policy.read_roots().find_real(&handle.real).ok_or_else(|| {
            ToolError::denied(format!(
                "read denied: {} is outside the allowed folders",
                handle.resolved.display
            ))
        })?;
        let root_real = root.canonical.clone();
        let root_fd = root_handle_or_err(root)?;
        Ok(Scope {
            base_real: handle.real.clone(),
            base_lexical: handle.resolved.abs.clone(),
            working_dir: policy.base(ctx.working_dir()),
            root_real,
            root_fd,
            handle,
            secret_skipped: Arc::default(),
        })
    }

    /// A note on the entries left out as toolhost's state, or nothing.
    pub fn secret_note(&self) -> String {
        match self.secret_skipped.load(Ordering::Relaxed) {
            0 => String::new(),
            n => format!(
                "[{n} entr(y/ies) skipped: toolhost's state (tokens, stores), which tools cannot read]\n"
            ),
        }
    }

    /// Whether the base is a folder.
    pub fn is_dir(&self) -> bool {
        fd::is_dir(&self.handle.stat)
    }

    /// How the model should see a path found under `base_real`.
    pub fn show(&self, found: &Path) -> String {
        match found.strip_prefix(&self.base_real) {
            Ok(rel) => path::display(&self.base_lexical.join(rel), &self.working_dir),
            Err(_) => found.display().to_string(),
        }
    }

    /// `found` relative to the base (for glob matching).
    pub fn relative<'a>(&self, found: &'a Path) -> Option<&'a Path> {
        found.strip_prefix(&self.base_real).ok()
    }

    /// Opens a found file for reading beneath the root, refusing any symlink
    /// on the way (the walk never follows links, so a real path has none).
    pub fn open_found(&self, found: &Path, flags: OFlags) -> Option<OwnedFd> {
        let rel = found.strip_prefix(&self.root_real).ok()?;
        fd::open_beneath(self.root_fd.as_fd(), rel, flags, Links::None).ok()
    }

    /// A walker over the base with the module's ignore settings.
    pub fn walker(&self, state: &State) -> WalkBuilder {
        let respect = state.config.respect_gitignore;
        let mut builder = WalkBuilder::new(&self.base_real);
        builder
            .hidden(false)
            .follow_links(false)
            .git_ignore(respect)
            .git_global(respect)
            .git_exclude(respect)
            .ignore(respect)
            .parents(respect)
            .require_git(false);
        let state = state.clone();
        let root = self.root_real.clone();
        let secret = self.secret_skipped.clone();
        builder.filter_entry(move |entry| {
            if entry.file_name() == ".git" && entry.file_type().is_some_and(|t| t.is_dir()) {
                return false;
            }
            if state.policy.walk_secret(entry.path()) {
                secret.fetch_add(1, Ordering::Relaxed);
                return false;
            }
            match entry.path().strip_prefix(&root) {
                Ok(below) => !state.policy.walk_denied(entry.path(), below),
                Err(_) => false,
            }
        });
        builder
    }
}
