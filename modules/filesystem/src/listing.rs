//! Listing a folder tree through handles: each subfolder is opened beneath
//! its parent's handle with symlinks refused, so a listing never follows a
//! link out (links are shown as links) and a swapped folder is skipped.

use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, OFlags};
use toolhost_core::{Context, ToolError};

use crate::policy::fd::{self, Links};
use crate::policy::Policy;

/// One entry found.
struct Entry {
    name: String,
    kind: FileType,
    size: u64,
    /// A hard link the policy does not serve (its size is not shown either).
    refused_link: bool,
}

/// Limits of one listing.
pub struct Limits {
    /// Levels shown: 1 is the folder's own entries.
    pub depth: usize,
    /// Entries shown before counting the rest.
    pub max_entries: usize,
}

/// Where the listed folder is, for deny checks on its entries.
pub struct Origin<'p> {
    /// The policy (for `denied_paths`).
    pub policy: &'p Policy,
    /// The folder's real absolute path.
    pub real: PathBuf,
    /// The folder's path below its allowed root.
    pub below_root: PathBuf,
}

struct Walk<'a, 'p, 'c> {
    origin: &'a Origin<'p>,
    limits: &'a Limits,
    ctx: &'a Context<'c>,
    lines: Vec<String>,
    omitted: usize,
}

/// A folder's listing: the text and its counts.
pub struct Listing {
    /// One line `kind size path` per entry shown, or `(empty folder)`.
    pub text: String,
    /// Entries shown.
    pub shown: usize,
    /// Entries left out (over the entry cap).
    pub omitted: usize,
}

/// Lists `dir` as lines `kind size path`, sorted by path, folders before
/// their contents.
pub fn list(
    dir: BorrowedFd<'_>,
    origin: &Origin<'_>,
    limits: &Limits,
    ctx: &Context<'_>,
) -> Result<Listing, ToolError> {
    let mut walk = Walk {
        origin,
        limits,
        ctx,
        lines: Vec::new(),
        omitted: 0,
    };
    walk.dir(dir, Path::new(""), 1)?;
    let text = if walk.lines.is_empty() {
        "(empty folder)".to_string()
    } else {
        walk.lines.join("\n")
    };
    Ok(Listing {
        text,
        shown: walk.lines.len(),
        omitted: walk.omitted,
    })
}

impl Walk<'_, '_, '_> {
    fn dir(&mut self, dir: BorrowedFd<'_>, prefix: &Path, level: usize) -> Result<(), ToolError> {
        self.ctx.check_cancelled()?;
        let entries = self.entries(dir, prefix)?;
        for entry in entries {
            let rel = prefix.join(&entry.name);
            if self.lines.len() >= self.limits.max_entries {
                self.omitted += 1;
                continue;
            }
            let is_dir = entry.kind == FileType::Directory;
            let shown = if is_dir {
                format!("{}/", rel.display())
            } else {
                rel.display().to_string()
            };
            let size = match entry.kind {
                FileType::RegularFile if !entry.refused_link => entry.size.to_string(),
                _ => "-".to_string(),
            };
            let note = if entry.kind == FileType::Symlink {
                " (symlink, not followed)"
            } else if entry.refused_link {
                " (hard link, not served: allow_hard_links = false)"
            } else {
                ""
            };
            self.lines.push(format!(
                "{:<8} {:>12}  {shown}{note}",
                fd::kind_name(entry.kind),
                size
            ));
            if is_dir && level < self.limits.depth {
                // Refuses symlinks: a folder swapped for a link since the
                // listing is skipped rather than followed.
                let name = Path::new(&entry.name);
                if let Ok(sub) = fd::open_beneath(dir, name, OFlags::RDONLY | OFlags::DIRECTORY, Links::None)
                {
                    self.dir(sub.as_fd(), &rel, level + 1)?;
                }
            }
        }
        Ok(())
    }

    fn entries(&self, dir: BorrowedFd<'_>, prefix: &Path) -> Result<Vec<Entry>, ToolError> {
        let reader = rustix::fs::Dir::read_from(dir)
            .map_err(|e| ToolError::new("io_error", format!("cannot list {}: {e}", prefix.display())))?;
        let mut out = Vec::new();
        for entry in reader.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == "." || name == ".." {
                continue;
            }
            let below = self.origin.below_root.join(prefix).join(&name);
            let abs = self.origin.real.join(prefix).join(&name);
            if self.origin.policy.walk_denied(&abs, &below) || self.origin.policy.walk_secret(&abs) {
                continue;
            }
            let (kind, size, refused_link) =
                match rustix::fs::statat(dir, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(st) => (
                        FileType::from_raw_mode(st.st_mode),
                        st.st_size.max(0) as u64,
                        !self.origin.policy.serves(&st),
                    ),
                    Err(_) => continue,
                };
            out.push(Entry {
                name,
                kind,
                size,
                refused_link,
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }
}
