//! Where an opened folder is, at any depth.
//!
//! `/proc/self/fd` gives an open handle's path only while it fits in
//! PATH_MAX (4096 bytes); deeper, the kernel answers ENAMETOOLONG. The deny
//! rules must hold at every depth, so when /proc cannot say, the path below
//! the root is found from the handles themselves: climb `..` from the folder
//! to the root's inode, naming each folder by finding its inode in its
//! parent. Nothing here follows a symlink.

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use rustix::fs::{AtFlags, Mode, OFlags, Stat};

/// Deepest folder climbed (a path of 4096 bytes cannot have more parts
/// than this, and a path ten times longer is still found).
const MAX_LEVELS: usize = 20_000;

fn same(a: &Stat, b: &Stat) -> bool {
    a.st_dev == b.st_dev && a.st_ino == b.st_ino
}

/// The path of the folder `dir` below the folder `root`. Fails when `dir`
/// is not beneath it (climbing reached `/`).
pub fn path_below(dir: BorrowedFd<'_>, root: BorrowedFd<'_>) -> io::Result<PathBuf> {
    let root = &rustix::fs::fstat(root)?;
    let mut names: Vec<OsString> = Vec::new();
    let mut cur: OwnedFd = dir.try_clone_to_owned()?;
    for _ in 0..MAX_LEVELS {
        let here = rustix::fs::fstat(&cur)?;
        if same(&here, root) {
            return Ok(names.iter().rev().collect());
        }
        let parent = rustix::fs::openat(
            &cur,
            "..",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let above = rustix::fs::fstat(&parent)?;
        if same(&above, &here) {
            return Err(io::Error::other("the folder is not beneath the allowed folder"));
        }
        names.push(name_in(parent.as_fd(), &here)?);
        cur = parent;
    }
    Err(io::Error::other("the folder is nested too deeply to locate"))
}

/// The name under which `parent` holds the folder `child`.
fn name_in(parent: BorrowedFd<'_>, child: &Stat) -> io::Result<OsString> {
    let crosses_mount = rustix::fs::fstat(parent)?.st_dev != child.st_dev;
    for entry in rustix::fs::Dir::read_from(parent)? {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        // A mount point's entry carries the inode beneath the mount, so
        // there every entry is asked; elsewhere the entry's inode decides.
        if !crosses_mount && entry.ino() != child.st_ino {
            continue;
        }
        let name = std::ffi::OsStr::from_bytes(name);
        if let Ok(st) = rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
            if same(&st, child) {
                return Ok(name.to_os_string());
            }
        }
    }
    Err(io::Error::other(
        "the folder was moved while it was being located",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_folder_deeper_than_path_max() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = rustix::fs::open(dir.path(), OFlags::PATH | OFlags::DIRECTORY, Mode::empty())
            .unwrap_or_else(|e| panic!("{e}"));
        let name = "d".repeat(200);
        let mut cur = rustix::fs::open(dir.path(), OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty())
            .unwrap_or_else(|e| panic!("{e}"));
        for _ in 0..30 {
            rustix::fs::mkdirat(&cur, name.as_str(), Mode::from_raw_mode(0o755))
                .unwrap_or_else(|e| panic!("{e}"));
            cur = rustix::fs::openat(
                &cur,
                name.as_str(),
                OFlags::RDONLY | OFlags::DIRECTORY,
                Mode::empty(),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        }
        assert!(
            super::super::fd::real_path(&cur).is_none(),
            "/proc answered past PATH_MAX"
        );
        let below = path_below(cur.as_fd(), root.as_fd()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(below, std::iter::repeat_n(name.as_str(), 30).collect::<PathBuf>());
        let elsewhere = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let other = rustix::fs::open(elsewhere.path(), OFlags::PATH | OFlags::DIRECTORY, Mode::empty())
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(path_below(cur.as_fd(), other.as_fd()).is_err());
    }
}
