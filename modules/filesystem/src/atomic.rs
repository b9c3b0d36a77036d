//! Atomic replacement inside an opened folder: a temp file created with
//! O_EXCL beside the target, written, fsynced, renamed over the target, and
//! the folder fsynced. Nothing is ever written through a symlink: O_EXCL
//! refuses one at the temp name and rename replaces a name, not a target.

use std::ffi::OsString;
use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use toolhost_core::ToolError;

use crate::policy::fd::kind_name;
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

/// A temp name beside `name`, short enough for NAME_MAX.
fn temp_name(name: &std::ffi::OsStr) -> OsString {
    let bytes = name.as_bytes();
    let stem = &bytes[..bytes.len().min(100)];
    let mut out = b".".to_vec();
    out.extend_from_slice(stem);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    out.extend_from_slice(format!(".toolhost-{}-{n}.tmp", std::process::id()).as_bytes());
    OsString::from_vec(out)
}

/// Replaces (or creates) the target with `content`; `mode` keeps the
/// permission bits of a replaced file. Returns the new file's stat.
pub fn write(target: &WriteTarget, content: &[u8], mode: Option<u32>) -> io::Result<Stat> {
    let tmp = temp_name(&target.name);
    let create_mode = Mode::from_raw_mode(mode.unwrap_or(0o666));
    let fd: OwnedFd = rustix::fs::openat(
        &target.dir,
        tmp.as_os_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        create_mode,
    )?;
    let result = (|| -> io::Result<Stat> {
        if let Some(mode) = mode {
            // The umask applied at create; a replaced file keeps its exact bits.
            rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode))?;
        }
        let mut file = std::fs::File::from(fd.try_clone()?);
        file.write_all(content)?;
        rustix::fs::fsync(&fd)?;
        let stat = rustix::fs::fstat(&fd)?;
        rustix::fs::renameat(&target.dir, tmp.as_os_str(), &target.dir, target.name.as_os_str())?;
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
            Err(e)
        }
    }
}
