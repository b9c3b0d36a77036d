//! Allowed roots: the folders a tool may work beneath, and the handles on
//! them that every open is made relative to.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use rustix::fs::{AtFlags, Stat};
use toolhost_core::ToolError;

use super::fd;
use super::path::{absolutize, below};

/// An opened root folder (an `O_PATH` directory handle) and its identity.
#[derive(Debug)]
pub struct RootFd {
    fd: OwnedFd,
    dev: u64,
    ino: u64,
}

impl RootFd {
    /// Whether `stat` describes the folder this handle holds. The handle
    /// keeps its inode alive, so the number cannot be reused by another folder.
    fn is(&self, stat: &Stat) -> bool {
        self.dev == stat.st_dev && self.ino == stat.st_ino
    }
}

impl AsFd for RootFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// One allowed folder, by the path the plan gave and by its real location.
///
/// The real location is resolved once, at mount: a root configured through
/// a symlink is pinned to where the link led then. The folder's handle is
/// opened on first use and kept across calls; each use first checks (one
/// `lstat` of the real location) that it still names the folder held, and
/// opens it afresh when not (deleted and recreated, renamed). The fresh open
/// refuses every symlink on the way (`RESOLVE_NO_SYMLINKS`), so a root (or
/// one of its ancestors) replaced by a symlink while the host runs is never
/// followed: only a real folder at the real location is served.
#[derive(Debug)]
pub struct Root {
    /// As configured (for messages).
    pub configured: String,
    /// Absolute and lexically normalized.
    pub lexical: PathBuf,
    /// With symlinks resolved (the same as `lexical` when it did not exist at mount).
    pub canonical: PathBuf,
    held: RwLock<Option<Arc<RootFd>>>,
}

impl Root {
    /// Resolves a configured entry against the working dir and home.
    pub fn new(configured: &str, working_dir: &Path, home: Option<&Path>) -> Result<Root, ToolError> {
        let lexical = absolutize(configured, working_dir, home)?;
        let canonical = canonical_or_missing(&lexical);
        Ok(Root {
            configured: configured.to_string(),
            lexical,
            canonical,
            held: RwLock::new(None),
        })
    }

    /// The part of `abs` below this root (either form), if it is inside.
    pub fn below(&self, abs: &Path) -> Option<PathBuf> {
        below(abs, &self.lexical).or_else(|| below(abs, &self.canonical))
    }

    /// The part of a real (canonical) path below this root.
    pub fn below_real(&self, real: &Path) -> Option<PathBuf> {
        below(real, &self.canonical)
    }

    /// A handle on the folder `canonical` names now: the held one when the
    /// path still names it, else a freshly opened one (which is then held).
    pub fn handle(&self) -> io::Result<Arc<RootFd>> {
        let now = match rustix::fs::statat(rustix::fs::CWD, &self.canonical, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(now) => now,
            Err(e) => {
                // Gone (or unreachable): let go of the folder held, if any.
                self.held.write().unwrap_or_else(PoisonError::into_inner).take();
                return Err(e.into());
            }
        };
        if let Some(held) = self.held.read().unwrap_or_else(PoisonError::into_inner).as_ref() {
            if held.is(&now) {
                return Ok(held.clone());
            }
        }
        let fd = match fd::open_root(&self.canonical) {
            Ok(fd) => fd,
            Err(e) => {
                self.held.write().unwrap_or_else(PoisonError::into_inner).take();
                if e.raw_os_error() == Some(libc::ELOOP) {
                    return Err(io::Error::other(
                        "it (or a folder above it) was replaced by a symbolic link after mount; an allowed folder is never followed through a link that was not there at mount",
                    ));
                }
                return Err(e);
            }
        };
        let stat = rustix::fs::fstat(&fd).map_err(io::Error::from)?;
        let opened = Arc::new(RootFd {
            fd,
            dev: stat.st_dev,
            ino: stat.st_ino,
        });
        *self.held.write().unwrap_or_else(PoisonError::into_inner) = Some(opened.clone());
        Ok(opened)
    }
}

/// The real location of `lexical`: canonicalized when it exists, else its
/// longest existing ancestor canonicalized with the rest appended (so a root
/// created after mount under a symlinked ancestor is still found by a path
/// without symlinks).
fn canonical_or_missing(lexical: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(lexical) {
        return real;
    }
    let mut rest = Vec::new();
    let mut at = lexical;
    while let Some(parent) = at.parent() {
        if let Some(name) = at.file_name() {
            rest.push(name.to_os_string());
        }
        if let Ok(mut real) = std::fs::canonicalize(parent) {
            real.extend(rest.iter().rev());
            return real;
        }
        at = parent;
    }
    lexical.to_path_buf()
}

/// A set of roots, searched in order.
#[derive(Debug, Clone)]
pub struct Roots {
    /// The roots.
    pub roots: Vec<Arc<Root>>,
    /// The config key they came from, for messages.
    pub key: &'static str,
}

impl Roots {
    /// The first root containing `abs`, with the rest of the path.
    pub fn find(&self, abs: &Path) -> Option<(&Arc<Root>, PathBuf)> {
        self.roots.iter().find_map(|r| r.below(abs).map(|rel| (r, rel)))
    }

    /// The first root containing a real path, with the rest of the path.
    pub fn find_real(&self, real: &Path) -> Option<(&Arc<Root>, PathBuf)> {
        self.roots
            .iter()
            .find_map(|r| r.below_real(real).map(|rel| (r, rel)))
    }

    /// `key = ["a", "b"]`, for denial messages.
    pub fn rule(&self) -> String {
        let list: Vec<String> = self.roots.iter().map(|r| format!("{:?}", r.configured)).collect();
        format!("{} = [{}]", self.key, list.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_held_handle_follows_the_path() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("root");
        let root = Root::new(&path.to_string_lossy(), dir.path(), None).unwrap_or_else(|e| panic!("{e}"));
        assert!(root.handle().is_err(), "a missing folder has no handle");
        std::fs::create_dir(&path).unwrap_or_else(|e| panic!("{e}"));
        let first = root.handle().unwrap_or_else(|e| panic!("{e}"));
        let again = root.handle().unwrap_or_else(|e| panic!("{e}"));
        assert!(
            Arc::ptr_eq(&first, &again),
            "the handle is kept while the path names it"
        );
        std::fs::rename(&path, dir.path().join("moved")).unwrap_or_else(|e| panic!("{e}"));
        assert!(root.handle().is_err(), "a folder moved away is not followed");
        std::fs::create_dir(&path).unwrap_or_else(|e| panic!("{e}"));
        let fresh = root.handle().unwrap_or_else(|e| panic!("{e}"));
        assert!(
            !Arc::ptr_eq(&first, &fresh),
            "a new folder at the path gets a new handle"
        );
    }
}
