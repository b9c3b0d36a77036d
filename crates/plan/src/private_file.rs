//! Writing a file only this user may read: the trust records and the HTTP
//! token file.
//!
//! Both decide who may do what, so both are written the same careful way:
//! the folder is made 0700 and must be a real folder of this user (not a
//! link planted in its place, not another user's, who could read or swap
//! the file), and the content goes to a new 0600 file opened with
//! `O_NOFOLLOW` beside the target, then renamed over it, so an existing file
//! with looser permissions, or a symlink planted there, is replaced, never
//! written through, and a reader never sees half a file.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Writes `bytes` to `file` as described in the module docs.
pub fn write_private(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        let meta = std::fs::symlink_metadata(dir)?;
        if !meta.is_dir() || meta.uid() != current_uid() {
            return Err(std::io::Error::other(format!(
                "{} is not a folder owned by this user (a link, or another user's)",
                dir.display()
            )));
        }
    }
    let mut temp = file.as_os_str().to_owned();
    temp.push(format!(".{}.tmp", std::process::id()));
    let temp = PathBuf::from(temp);
    let _ = std::fs::remove_file(&temp);
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&temp)?;
    let written = out.write_all(bytes).and_then(|()| out.sync_all());
    if let Err(e) = written.and_then(|()| std::fs::rename(&temp, file)) {
        let _ = std::fs::remove_file(&temp);
        return Err(e);
    }
    Ok(())
}

/// The running user's id.
pub fn current_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}
