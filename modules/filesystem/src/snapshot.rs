//! Reading the file a write is about to replace, through the folder handle
//! the write will use: edit_file edits it, and the undo history keeps it.

use std::io::Read;

use rustix::fs::{FileType, Mode, OFlags, Stat};
use toolhost_core::ToolError;

use crate::policy::fd::kind_name;
use crate::policy::WriteTarget;

/// The bytes of `target`, which [`crate::atomic::inspect`] found as `stat`;
/// refused if the name now holds another file (replaced meanwhile).
pub fn read(target: &WriteTarget, stat: &Stat) -> Result<Vec<u8>, ToolError> {
    let display = &target.display;
    let fd = rustix::fs::openat(
        &target.dir,
        target.name.as_os_str(),
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )
    .map_err(|e| ToolError::new("io_error", format!("cannot open {display}: {e}")))?;
    let now = rustix::fs::fstat(&fd)
        .map_err(|e| ToolError::new("io_error", format!("cannot stat {display}: {e}")))?;
    let kind = FileType::from_raw_mode(now.st_mode);
    if kind != FileType::RegularFile {
        return Err(ToolError::new(
            "unsupported_file_type",
            format!("{display} is a {}, not a regular file", kind_name(kind)),
        ));
    }
    if now.st_ino != stat.st_ino {
        return Err(ToolError::new(
            "io_error",
            format!("{display} was replaced while it was being changed; read it again and retry"),
        ));
    }
    let mut bytes = Vec::with_capacity(now.st_size.max(0) as usize);
    std::fs::File::from(fd)
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::new("io_error", format!("cannot read {display}: {e}")))?;
    Ok(bytes)
}
