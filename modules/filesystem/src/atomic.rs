//! Atomic replacement inside an opened folder: a temp file created with
//! O_EXCL beside the target, written, fsynced, renamed over the target, and
//! the folder fsynced. Nothing is ever written through a symlink: O_EXCL
//! refuses one at the temp name and rename replaces a name, not a target.

use std::ffi::OsString;
use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{Access, AtFlags, FileType, Mode, OFlags, Stat};
use toolhost_core::ToolError;

use crate::pending::Pending;
use crate::policy::fd::kind_name;
use crate::policy::links;
use crate::policy::WriteTarget;

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// What is at a write's destination now.
pub enum Existing {
    /// Nothing: the write creates the file.
    Missing,
    /// A regular file with this stat.
    File(Stat),
}

/// Looks at the destination without following a symlink there, refusing
/// links, folders and special files.
pub fn inspect(target: &WriteTarget) -> Result<Existing, ToolError> {
    match rustix::fs::statat(&target.dir, target.name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
        Err(rustix::io::Errno::NOENT) => Ok(Existing::Missing),
        Err(e) => Err(ToolError::new("io_error", format!("cannot inspect {}: {e}", target.display))),
        Ok(stat) => match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => Ok(Existing::File(stat)),
            FileType::Symlink => Err(ToolError::denied(format!(
                "write denied: {} is a symbolic link, and files are never written through links; write to the real file path instead",
                target.display
            ))),
            FileType::Directory => Err(ToolError::invalid_input(format!(
                "{} is a folder; give the path of a file",
                target.display
            ))),
            other => Err(ToolError::new(
                "unsupported_file_type",
                format!("{} is a {}, not a regular file; it is not written", target.display, kind_name(other)),
            )),
        },
    }
}

/// Refuses replacing an existing file the caller could not write in place,
/// or one with more than one name unless the plan allows hard links.
///
/// The rename that makes a write atomic needs only the folder to be
/// writable, so without this check a read-only file (mode 0444) or another
/// user's file in a writable folder would be silently replaced. "Could not
/// write in place" is the kernel's own answer (`faccessat(W_OK)` with the
/// effective ids) for ordinary users. For root, to whom the kernel grants
/// every write, the write bits are honoured explicitly: a file with no write
/// bit at all is read-only on purpose and is refused; root may replace a
/// file that some user could write, and the owner is kept (see [`write`]).
pub fn check_replaceable(target: &WriteTarget, stat: &Stat, allow_hard_links: bool) -> Result<(), ToolError> {
    let readonly = || {
        ToolError::new(
            "permission_denied",
            format!(
                "write denied: {} is not writable by this user (mode {:o}, owner uid {}); it is not replaced — change its permissions first if it really should change",
                target.display,
                stat.st_mode & 0o7777,
                stat.st_uid
            ),
        )
    };
    if rustix::process::geteuid().is_root() {
        if stat.st_mode & 0o222 == 0 {
            return Err(readonly());
        }
    } else {
        match rustix::fs::accessat(
            &target.dir,
            target.name.as_os_str(),
            Access::WRITE_OK,
            AtFlags::EACCESS | AtFlags::SYMLINK_NOFOLLOW,
        ) {
            Ok(()) => {}
            Err(rustix::io::Errno::ACCESS) | Err(rustix::io::Errno::PERM) | Err(rustix::io::Errno::ROFS) => {
                return Err(readonly())
            }
            Err(e) => {
                return Err(ToolError::new(
                    "io_error",
                    format!("cannot check the permissions of {}: {e}", target.display),
                ))
            }
        }
    }
    if !allow_hard_links && links::is_multi_linked(stat) {
        return Err(links::refusal("write", &target.display, stat));
    }
    Ok(())
}

/// The tool error for a failed [`write`]: `disk_full` when the disk or
/// quota ran out (retryable once space is freed), `io_error` otherwise.
pub fn write_error(display: &str, e: io::Error) -> ToolError {
    let code = if e.kind() == io::ErrorKind::StorageFull {
        "disk_full"
    } else {
        "io_error"
    };
    ToolError::new(code, format!("cannot write {display}: {e}"))
}

/// A temp name beside `name`, short enough for NAME_MAX, and its sequence
/// number: `.NAME.toolhost-PID-N.tmp` (what the mount-time sweep looks for).
fn temp_name(name: &std::ffi::OsStr) -> (OsString, u64) {
    let bytes = name.as_bytes();
    let stem = &bytes[..bytes.len().min(100)];
    let mut out = b".".to_vec();
    out.extend_from_slice(stem);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    out.extend_from_slice(format!(".toolhost-{}-{n}.tmp", std::process::id()).as_bytes());
    (OsString::from_vec(out), n)
}

/// Replaces (or creates) the target with `content`; `keep` (the replaced
/// file's stat) keeps its permission bits and its owner and group. A file
/// whose owner cannot be kept (another user's, written by a non-root user)
/// is not replaced. Returns the new file's stat.
///
/// A full disk (or quota) fails the write before the rename: the target
/// keeps its old content and the temp file is removed.
pub fn write(
    target: &WriteTarget,
    content: &[u8],
    keep: Option<&Stat>,
    pending: &Pending,
) -> io::Result<Stat> {
    let (tmp, n) = temp_name(&target.name);
    let temp_path = target.key.with_file_name(&tmp);
    let _marker = pending.begin(&temp_path, n);
    let mode = keep.map(|st| st.st_mode & 0o7777);
    let create_mode = Mode::from_raw_mode(mode.unwrap_or(0o666));
    let fd: OwnedFd = rustix::fs::openat(
        &target.dir,
        tmp.as_os_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        create_mode,
    )?;
    let result = (|| -> io::Result<Stat> {
        if let Some(old) = keep {
            let made = rustix::fs::fstat(&fd)?;
            if made.st_uid != old.st_uid || made.st_gid != old.st_gid {
                std::os::unix::fs::fchown(&fd, Some(old.st_uid), Some(old.st_gid)).map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!(
                            "it belongs to uid {} gid {}, and replacing it would change its owner ({e}); it is not replaced",
                            old.st_uid, old.st_gid
                        ),
                    )
                })?;
            }
        }
        if let Some(mode) = mode {
            // The umask applied at create; a replaced file keeps its exact bits.
            rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode))?;
        }
        let mut file = std::fs::File::from(fd.try_clone()?);
        file.write_all(content)?;
        rustix::fs::fsync(&fd)?;
        rustix::fs::renameat(&target.dir, tmp.as_os_str(), &target.dir, target.name.as_os_str())?;
        // Stated after the rename, which sets the inode's ctime: the stamp
        // the guard and undo_edit keep includes ctime.
        let stat = rustix::fs::fstat(&fd)?;
        Ok(stat)
    })();
    match result {
        Ok(stat) => {
            // Durability of the rename; a failure here does not undo the write.
            let _ = rustix::fs::fsync(target.dir.as_fd());
            Ok(stat)
        }
        Err(e) => {
            let _ = rustix::fs::unlinkat(&target.dir, tmp.as_os_str(), AtFlags::empty());
            if matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT)) {
                return Err(io::Error::new(
                    io::ErrorKind::StorageFull,
                    format!("{e}: the disk (or quota) is full; nothing was changed, the file keeps its previous content (free some space and retry)"),
                ));
            }
            Err(e)
        }
    }
}
