//! The path policy every tool goes through: which roots a path may resolve
//! beneath, which rules deny it, and the handle-relative opens that make the
//! answer hold at the moment of use.
//!
//! Order of checks for a path: input hygiene (NUL, length, quotes) →
//! lexical containment by components → `denied_paths` → open beneath the
//! root's handle (symlinks may not leave it) → the opened handle's real
//! location is checked again against the roots and the deny rules.

pub mod deny;
mod error;
pub mod fd;
pub mod links;
pub mod locate;
pub mod path;
pub mod roots;

use std::borrow::Cow;
use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{Mode, OFlags, Stat};
use toolhost_core::protected::{Coverage, Protected};
use toolhost_core::ToolError;

use crate::config::Config;
use deny::DenyRules;
pub use error::PolicyError;
use fd::Links;
use roots::{Root, RootFd, Roots};

/// Read or write, which picks the set of roots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// allowed_read_paths.
    Read,
    /// allowed_write_paths.
    Write,
}

impl Access {
    fn verb(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
        }
    }
}

/// The compiled path policy of one mount.
pub struct Policy {
    /// The folder relative inputs resolve against when the plan sets one.
    configured_dir: Option<PathBuf>,
    /// The mount-time working dir (fallback base).
    mount_dir: PathBuf,
    home: Option<PathBuf>,
    read: Roots,
    write: Roots,
    deny: DenyRules,
    allow_hard_links: bool,
    /// The host's control plane: never written; its secret part never read.
    protected: Protected,
}

/// An input path resolved lexically to a root.
pub struct Resolved {
    /// Absolute, normalized.
    pub abs: PathBuf,
    /// For messages: relative to the working dir when inside it.
    pub display: String,
    /// The root it is beneath.
    pub root: Arc<Root>,
    /// The part below the root (no `..`, may be empty).
    pub rel: PathBuf,
}

/// An opened file or folder for reading.
pub struct ReadHandle {
    /// The handle (read-only; a folder handle for folders).
    pub fd: OwnedFd,
    /// Its stat, taken on the handle.
    pub stat: Stat,
    /// Its real location (key for the read-before-write guard).
    pub real: PathBuf,
    /// The lexical resolution.
    pub resolved: Resolved,
}

/// A write's destination: the parent folder's handle and the final name.
pub struct WriteTarget {
    /// The parent folder, opened read-only as a directory.
    pub dir: OwnedFd,
    /// The final name (one component).
    pub name: OsString,
    /// The real location (key for locks and the guard).
    pub key: PathBuf,
    /// For messages.
    pub display: String,
}

impl Policy {
    /// Compiles the policy from the config and the mount-time working dir.
    pub fn new(config: &Config, mount_dir: &Path) -> Result<Policy, PolicyError> {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        let configured_dir = match &config.working_dir {
            Some(dir) => Some(
                path::absolutize(dir, mount_dir, home.as_deref())
                    .map_err(|e| PolicyError::WorkingDir(e.message().to_string()))?,
            ),
            None => None,
        };
        let base = configured_dir
            .clone()
            .unwrap_or_else(|| path::normalize(mount_dir));
        let roots = |list: &Option<Vec<String>>, key: &'static str| -> Result<Roots, PolicyError> {
            let entries = list
                .clone()
                .unwrap_or_else(|| vec![base.to_string_lossy().into_owned()]);
            let roots = entries
                .iter()
                .map(|e| {
                    Root::new(e, &base, home.as_deref())
                        .map(Arc::new)
                        .map_err(|m| PolicyError::Root {
                            key,
                            entry: e.clone(),
                            reason: m.message().to_string(),
                        })
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Roots { roots, key })
        };
        let read = roots(&config.allowed_read_paths, "allowed_read_paths")?;
        let write = roots(&config.allowed_write_paths, "allowed_write_paths")?;
        let denied = config.denied_paths.clone().unwrap_or_else(deny::defaults);
        let deny = DenyRules::new(&denied, &base, home.as_deref())?;
        Ok(Policy {
            configured_dir,
            mount_dir: base,
            home,
            read,
            write,
            deny,
            allow_hard_links: config.allow_hard_links,
            protected: Protected::default(),
        })
    }

    /// The same policy, refusing to change the host's control plane
    /// ([`Protected`]) and to read its secret part.
    pub fn with_protected(mut self, protected: Protected) -> Policy {
        self.protected = protected;
        self
    }

    /// The refusal for `abs` when the control plane covers it for `access`.
    /// Part of every resolution (a hash lookup and a few prefix tests), so
    /// the check costs no system call.
    fn protected_refusal(&self, abs: &Path, access: Access, display: &str) -> Option<ToolError> {
        match (self.protected.covering(abs)?, access) {
            (Coverage::Protected, Access::Read) => None,
            (Coverage::Protected, Access::Write) => Some(ToolError::denied(format!(
                "write denied: {display} is part of toolhost's control plane (the plan, a file discovery \
                 would load as a plan, a hook or module the plan runs, the audit log or the lock file); \
                 tools cannot change it. A person changes it and reviews it with `toolhost trust`"
            ))),
            (Coverage::Secret, _) => Some(ToolError::denied(format!(
                "{} denied: {display} is toolhost's state (tokens, stores); tools can neither read nor \
                 change it",
                access.verb()
            ))),
        }
    }

    /// Whether a walk (grep, glob, list_directory) must leave `abs` out:
    /// the state folder and token files (the caller counts them).
    pub fn walk_secret(&self, abs: &Path) -> bool {
        self.protected.covering(abs) == Some(Coverage::Secret)
    }

    /// The folder relative inputs resolve against for this call.
    pub fn base(&self, call_dir: &Path) -> PathBuf {
        self.base_of(call_dir).into_owned()
    }

    fn base_of<'a>(&'a self, call_dir: &'a Path) -> Cow<'a, Path> {
        match &self.configured_dir {
            Some(dir) => Cow::Borrowed(dir),
            None if call_dir.is_absolute() => path::normalized(call_dir),
            None => Cow::Borrowed(&self.mount_dir),
        }
    }

    fn roots(&self, access: Access) -> &Roots {
        match access {
            Access::Read => &self.read,
            Access::Write => &self.write,
        }
    }

    /// Hygiene, lexical containment and deny rules; no file system access.
    pub fn resolve(
        &self,
        field: &str,
        raw: &str,
        call_dir: &Path,
        access: Access,
    ) -> Result<Resolved, ToolError> {
        path::check_input(field, raw)?;
        let base = self.base_of(call_dir);
        let abs = path::absolutize(raw, &base, self.home.as_deref())?;
        let display = path::display(&abs, &base);
        let roots = self.roots(access);
        let Some((root, rel)) = roots.find(&abs) else {
            return Err(ToolError::denied(format!(
                "{} denied: {display} is outside the allowed folders ({}); use a path inside them",
                access.verb(),
                roots.rule()
            )));
        };
        if let Some(rule) = self.deny.matching(&abs, &rel) {
            return Err(self.denied_by_rule(access, &display, rule));
        }
        if let Some(refusal) = self.protected_refusal(&abs, access, &display) {
            return Err(refusal);
        }
        Ok(Resolved {
            abs,
            display,
            root: root.clone(),
            rel,
        })
    }

    fn denied_by_rule(&self, access: Access, display: &str, rule: &str) -> ToolError {
        ToolError::denied(format!(
            "{} denied: {display} matches the denied_paths rule {rule:?}; this path is off limits",
            access.verb()
        ))
    }

    fn escape(&self, access: Access, display: &str) -> ToolError {
        ToolError::denied(format!(
            "{} denied: {display} goes through a symbolic link that leads outside the allowed folders ({}) or to nothing",
            access.verb(),
            self.roots(access).rule()
        ))
    }

    /// Checks where an opened handle really is: inside a root, not denied.
    fn verify_real(&self, real: &Path, access: Access, display: &str) -> Result<(), ToolError> {
        self.verify_real_after(real, access, display, None)
    }

    /// [`Policy::verify_real`], told which `(abs, rel)` the deny rules
    /// already passed: when the real location yields the very same pair, the
    /// rules (a pure function of it) are not asked twice.
    fn verify_real_after(
        &self,
        real: &Path,
        access: Access,
        display: &str,
        checked: Option<(&Path, &Path)>,
    ) -> Result<(), ToolError> {
        let Some((_, rel)) = self.roots(access).find_real(real) else {
            return Err(self.escape(access, display));
        };
        let same = checked.is_some_and(|(abs, below)| {
            abs.as_os_str() == real.as_os_str() && below.as_os_str() == rel.as_os_str()
        });
        if !same {
            if let Some(rule) = self.deny.matching(real, &rel) {
                return Err(self.denied_by_rule(access, display, rule));
            }
            if let Some(refusal) = self.protected_refusal(real, access, display) {
                return Err(refusal);
            }
        }
        Ok(())
    }

    /// Whether a file with this stat may be served: not a hard link, or
    /// hard links allowed (see [`links`]).
    pub fn serves(&self, stat: &Stat) -> bool {
        self.allow_hard_links || !links::is_multi_linked(stat)
    }

    /// Refuses a hard-linked file unless the plan allows them.
    pub fn check_links(&self, verb: &str, display: &str, stat: &Stat) -> Result<(), ToolError> {
        if self.serves(stat) {
            Ok(())
        } else {
            Err(links::refusal(verb, display, stat))
        }
    }

    /// Whether a path found by a walk is denied (`rel` is below `root`).
    pub fn walk_denied(&self, abs: &Path, rel: &Path) -> bool {
        self.deny.matching(abs, rel).is_some()
    }

    /// Opens a path for reading under the read roots.
    pub fn open_read(&self, field: &str, raw: &str, call_dir: &Path) -> Result<ReadHandle, ToolError> {
        let resolved = self.resolve(field, raw, call_dir, Access::Read)?;
        self.open_resolved(resolved, Access::Read)
    }

    /// Opens a path resolved by [`Policy::resolve`] (whose deny check it
    /// relies on) for reading.
    fn open_resolved(&self, resolved: Resolved, access: Access) -> Result<ReadHandle, ToolError> {
        let root_fd = root_handle_or_err(&resolved.root)?;
        // Fast path: no symlink anywhere, so the real location is the root's
        // real path plus `rel` (which has no `..`), known without asking /proc.
        let (fd, stat, real) = match fd::open_readable(root_fd.as_fd(), &resolved.rel, Links::None) {
            Ok((fd, stat)) => (fd, stat, resolved.root.canonical.join(&resolved.rel)),
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                let opened = match fd::open_readable(root_fd.as_fd(), &resolved.rel, Links::Beneath) {
                    Ok(x) => Ok(x),
                    Err(e) if fd::is_escape(&e) => self.open_via_real_path(&resolved, access),
                    Err(e) => Err(self.io_error(e, &resolved, access)),
                };
                let (fd, stat) = opened?;
                let real = match fd::real_path(&fd) {
                    Some(real) => real,
                    None => self.locate_read(&resolved, &fd, &stat, access)?,
                };
                (fd, stat, real)
            }
            Err(e) => return Err(self.io_error(e, &resolved, access)),
        };
        let checked = Some((resolved.abs.as_path(), resolved.rel.as_path()));
        self.verify_real_after(&real, access, &resolved.display, checked)?;
        self.check_links(access.verb(), &resolved.display, &stat)?;
        Ok(ReadHandle {
            fd,
            stat,
            real,
            resolved,
        })
    }

    /// Where an object opened through a symlink really is, when /proc cannot
    /// say (its real path is longer than PATH_MAX): a folder by climbing its
    /// handles to the root; a file by its parent folder, when the last name
    /// is the file itself (not a link). Anything else is refused: never
    /// guessed, so `denied_paths` holds at every depth.
    fn locate_read(
        &self,
        resolved: &Resolved,
        fd: &OwnedFd,
        stat: &Stat,
        access: Access,
    ) -> Result<PathBuf, ToolError> {
        let unknown = || {
            ToolError::denied(format!(
                "{} denied: {} is reached through a symbolic link and its real location is longer than PATH_MAX ({} bytes), so the deny rules cannot be checked on it; use its real path",
                access.verb(),
                resolved.display,
                path::MAX_PATH_BYTES
            ))
        };
        let root_fd = root_handle_or_err(&resolved.root)?;
        if fd::is_dir(stat) {
            let below = locate::path_below(fd.as_fd(), root_fd.as_fd()).map_err(|_| unknown())?;
            return Ok(resolved.root.canonical.join(below));
        }
        let (Some(name), Some(parent_rel)) = (resolved.rel.file_name(), resolved.rel.parent()) else {
            return Err(unknown());
        };
        let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY;
        let parent = fd::open_beneath(root_fd.as_fd(), parent_rel, dir_flags, Links::Beneath)
            .map_err(|_| unknown())?;
        let here = rustix::fs::statat(&parent, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|_| unknown())?;
        if here.st_dev != stat.st_dev || here.st_ino != stat.st_ino {
            return Err(unknown());
        }
        let real_parent = self.real_dir(&parent, &resolved.root).ok_or_else(unknown)?;
        Ok(real_parent.join(name))
    }

    /// The real location of an opened folder beneath `root`: from /proc when
    /// it fits in PATH_MAX, else by climbing the handles ([`locate`]).
    fn real_dir(&self, dir: &OwnedFd, root: &Root) -> Option<PathBuf> {
        if let Some(real) = fd::real_path(dir) {
            return Some(real);
        }
        let root_fd = root.handle().ok()?;
        let below = locate::path_below(dir.as_fd(), root_fd.as_fd()).ok()?;
        Some(root.canonical.join(below))
    }

    /// A symlink's target was absolute or climbed out of its root: resolve it
    /// ambiently, and if the result lies inside an allowed root, open that
    /// canonical path beneath that root with no symlinks allowed at all.
    fn open_via_real_path(&self, resolved: &Resolved, access: Access) -> Result<(OwnedFd, Stat), ToolError> {
        let escape = || self.escape(access, &resolved.display);
        let real = std::fs::canonicalize(&resolved.abs).map_err(|_| escape())?;
        let (root, rel) = self.roots(access).find_real(&real).ok_or_else(escape)?;
        if let Some(rule) = self.deny.matching(&real, &rel) {
            return Err(self.denied_by_rule(access, &resolved.display, rule));
        }
        if let Some(refusal) = self.protected_refusal(&real, access, &resolved.display) {
            return Err(refusal);
        }
        let root_fd = root_handle_or_err(root)?;
        fd::open_readable(root_fd.as_fd(), &rel, Links::None).map_err(|e| {
            if fd::is_escape(&e) {
                escape()
            } else {
                self.io_error(e, resolved, access)
            }
        })
    }

    /// Turns an open error into a message a model can act on.
    fn io_error(&self, e: io::Error, resolved: &Resolved, access: Access) -> ToolError {
        let display = &resolved.display;
        match e.raw_os_error() {
            Some(libc::ENOENT) => {
                let hint = self
                    .suggest(resolved, access)
                    .map(|s| format!("; did you mean {s}?"))
                    .unwrap_or_default();
                ToolError::not_found(format!("file not found: {display}{hint}"))
            }
            Some(libc::ENOTDIR) => ToolError::not_found(format!(
                "file not found: {display} (a part of the path is a file, not a folder)"
            )),
            Some(libc::EACCES) | Some(libc::EPERM) => ToolError::new(
                "permission_denied",
                format!(
                    "the operating system refused to {} {display} (permission denied)",
                    access.verb()
                ),
            ),
            _ if e.kind() == io::ErrorKind::Unsupported => {
                ToolError::new("unsupported_file_type", format!("{display} {e}"))
            }
            _ => ToolError::new("io_error", format!("cannot {} {display}: {e}", access.verb())),
        }
    }

    /// The closest existing, allowed name beside a missing file.
    ///
    /// The folder is looked at where it really is (it may be reached
    /// through a link): nothing is suggested from a folder that is denied or
    /// outside the roots there, and a candidate must itself be an allowed
    /// regular file or folder, not a link (a dangling link is not a file)
    /// and not the missing name itself.
    fn suggest(&self, resolved: &Resolved, access: Access) -> Option<String> {
        let name = resolved.rel.file_name()?.to_string_lossy().into_owned();
        let parent_rel = resolved.rel.parent().unwrap_or(Path::new(""));
        let root_fd = resolved.root.handle().ok()?;
        let dir = fd::open_beneath(
            root_fd.as_fd(),
            parent_rel,
            OFlags::RDONLY | OFlags::DIRECTORY,
            Links::Beneath,
        )
        .ok()?;
        let real_dir = self.real_dir(&dir, &resolved.root)?;
        let (_, real_below) = self.roots(access).find_real(&real_dir)?;
        if self.deny.matching(&real_dir, &real_below).is_some() {
            return None;
        }
        let mut best: Option<(usize, String)> = None;
        let entries = rustix::fs::Dir::read_from(&dir).ok()?;
        for entry in entries.take(5000).flatten() {
            let candidate = entry.file_name().to_string_lossy().into_owned();
            if candidate == "." || candidate == ".." || candidate == name {
                continue;
            }
            let d = crate::text::similar::edit_distance(&name.to_lowercase(), &candidate.to_lowercase());
            let limit = (name.chars().count() / 3).max(2);
            if d > limit || best.as_ref().is_some_and(|(bd, _)| d >= *bd) {
                continue;
            }
            if self
                .deny
                .matching(&real_dir.join(&candidate), &real_below.join(&candidate))
                .is_some()
            {
                continue;
            }
            let servable = rustix::fs::statat(&dir, entry.file_name(), rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|st| fd::check_kind(&st).is_ok() && self.serves(&st));
            if servable {
                best = Some((d, candidate));
            }
        }
        let (_, found) = best?;
        let shown = Path::new(&resolved.display).with_file_name(found);
        Some(shown.display().to_string())
    }

    /// Resolves a write destination and opens its parent folder (creating
    /// missing folders beneath the root when `create_parents`).
    pub fn open_write(
        &self,
        field: &str,
        raw: &str,
        call_dir: &Path,
        create_parents: bool,
    ) -> Result<WriteTarget, ToolError> {
        let resolved = self.resolve(field, raw, call_dir, Access::Write)?;
        let display = resolved.display.clone();
        let (Some(name), Some(parent_rel)) = (resolved.rel.file_name(), resolved.rel.parent()) else {
            return Err(ToolError::invalid_input(format!(
                "{display} is an allowed folder itself; give the path of a file inside it"
            )));
        };
        let name = name.to_os_string();
        let root_fd = root_handle_or_err(&resolved.root)?;
        let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY;
        let dir = match fd::open_beneath(root_fd.as_fd(), parent_rel, dir_flags, Links::Beneath) {
            Ok(dir) => dir,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) && create_parents => {
                self.create_parents(root_fd.as_fd(), parent_rel, &display)?
            }
            Err(e) if fd::is_escape(&e) => {
                let parent_abs = resolved.abs.parent().unwrap_or(Path::new("/"));
                let escape = || self.escape(Access::Write, &display);
                let real = std::fs::canonicalize(parent_abs).map_err(|_| escape())?;
                let (root, rel) = self.write.find_real(&real).ok_or_else(escape)?;
                let root_fd = root_handle_or_err(root)?;
                fd::open_beneath(root_fd.as_fd(), &rel, dir_flags, Links::None).map_err(|_| escape())?
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                return Err(ToolError::not_found(format!(
                    "the folder of {display} does not exist; create it first"
                )))
            }
            Err(e) => return Err(self.io_error(e, &resolved, Access::Write)),
        };
        // Never guessed from the input: deep below PATH_MAX /proc cannot say,
        // and the handles are climbed instead, so the deny rules always see
        // the real location.
        let key = match self.real_dir(&dir, &resolved.root) {
            Some(real_parent) => real_parent.join(&name),
            None => {
                return Err(ToolError::denied(format!(
                    "write denied: the real location of the folder of {display} cannot be found (it is reached through a symbolic link to another allowed folder, deeper than PATH_MAX), so the deny rules cannot be checked on it; use its real path"
                )))
            }
        };
        self.verify_real(&key, Access::Write, &display)?;
        Ok(WriteTarget {
            dir,
            name,
            key,
            display,
        })
    }

    /// mkdir -p beneath a root, one component at a time, each step opened
    /// beneath the root so a swapped-in symlink cannot redirect it.
    fn create_parents(
        &self,
        root_fd: BorrowedFd<'_>,
        parent_rel: &Path,
        display: &str,
    ) -> Result<OwnedFd, ToolError> {
        let mut prefix = PathBuf::new();
        let mut cur = fd::open_beneath(
            root_fd.as_fd(),
            &prefix,
            OFlags::PATH | OFlags::DIRECTORY,
            Links::Beneath,
        )
        .map_err(|e| ToolError::new("io_error", format!("cannot open the allowed folder: {e}")))?;
        for component in parent_rel.components() {
            prefix.push(component);
            let flags = OFlags::PATH | OFlags::DIRECTORY;
            cur = match fd::open_beneath(root_fd.as_fd(), &prefix, flags, Links::Beneath) {
                Ok(next) => next,
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                    match rustix::fs::mkdirat(&cur, component.as_os_str(), Mode::from_raw_mode(0o777)) {
                        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                        Err(e) => {
                            return Err(ToolError::new(
                                "io_error",
                                format!("cannot create the folders of {display}: {e}"),
                            ))
                        }
                    }
                    fd::open_beneath(root_fd.as_fd(), &prefix, flags, Links::Beneath)
                        .map_err(|_| self.escape(Access::Write, display))?
                }
                Err(e) if fd::is_escape(&e) => return Err(self.escape(Access::Write, display)),
                Err(e) => {
                    return Err(ToolError::new(
                        "io_error",
                        format!("cannot create the folders of {display}: {e}"),
                    ))
                }
            };
        }
        fd::open_beneath(
            cur.as_fd(),
            Path::new(""),
            OFlags::RDONLY | OFlags::DIRECTORY,
            Links::Beneath,
        )
        .map_err(|e| ToolError::new("io_error", format!("cannot open the folder of {display}: {e}")))
    }

    /// The read roots (for walks).
    pub fn read_roots(&self) -> &Roots {
        &self.read
    }

    /// The write roots (for the mount-time temp file sweep).
    pub fn write_roots(&self) -> &Roots {
        &self.write
    }
}

/// The held handle on an allowed root (see [`Root::handle`]), or a message
/// for the plan's author.
pub fn root_handle_or_err(root: &Root) -> Result<Arc<RootFd>, ToolError> {
    root.handle().map_err(|e| {
        ToolError::new(
            "io_error",
            format!(
                "the allowed folder {:?} cannot be opened ({e}); check the mount plan",
                root.configured
            ),
        )
    })
}
