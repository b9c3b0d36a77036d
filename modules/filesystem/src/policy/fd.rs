//! Handle-relative opens: every path is resolved by the kernel beneath an
//! opened root (openat2 with RESOLVE_BENEATH), so a symlink that leaves the
//! root, or one swapped in between a check and the use, fails the open.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{openat2, AtFlags, FileType, Mode, OFlags, ResolveFlags, Stat};

/// How symlinks met on the way are treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Links {
    /// Followed while they stay beneath the root.
    Beneath,
    /// Refused anywhere in the path (the path is known to be canonical).
    None,
}

fn resolve(links: Links) -> ResolveFlags {
    match links {
        Links::Beneath => ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
        Links::None => ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    }
}

/// Opens `rel` beneath `dir` (an empty `rel` reopens `dir` itself).
pub fn open_beneath(dir: BorrowedFd<'_>, rel: &Path, flags: OFlags, links: Links) -> io::Result<OwnedFd> {
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    // openat2 is strict: O_PATH admits only CLOEXEC, DIRECTORY and NOFOLLOW.
    let flags = if flags.contains(OFlags::PATH) {
        flags | OFlags::CLOEXEC
    } else {
        flags | OFlags::CLOEXEC | OFlags::NOCTTY
    };
    loop {
        match openat2(dir, rel, flags, Mode::empty(), resolve(links)) {
            Err(rustix::io::Errno::AGAIN) | Err(rustix::io::Errno::INTR) => continue,
            other => return other.map_err(io::Error::from),
        }
    }
}

/// Opens an allowed root by its real location (resolved at mount) as a path
/// handle, refusing any symlink on the way: one there now was swapped in
/// after mount.
pub fn open_root(root: &Path) -> io::Result<OwnedFd> {
    loop {
        match openat2(
            rustix::fs::CWD,
            root,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
        ) {
            Err(rustix::io::Errno::AGAIN) | Err(rustix::io::Errno::INTR) => continue,
            other => return other.map_err(io::Error::from),
        }
    }
}

/// Opens `rel` beneath `dir` for reading, refusing FIFOs, sockets and devices
/// without ever opening them for I/O (so a call never hangs on a FIFO or
/// wakes a device).
///
/// The object's type is learned before the readable open, and the readable
/// open must then land on the same inode. With [`Links::None`] the type comes
/// from a plain `stat` beneath `dir` (see [`open_plain`]); otherwise the
/// object is pinned with an `O_PATH` handle opened by the same rules as the
/// readable open. Either way the readable open resolves the path again: an
/// object swapped in between the check and the open is caught by the inode
/// comparison and refused before any read (only reopening the pinned handle
/// through /proc, a magic link, would close that window). (O_NONBLOCK stays
/// set: it has no effect on regular files and folders.)
pub fn open_readable(dir: BorrowedFd<'_>, rel: &Path, links: Links) -> io::Result<(OwnedFd, Stat)> {
    if links == Links::None {
        if let Some(opened) = open_plain(dir, rel) {
            return opened;
        }
    }
    let pinned = open_beneath(dir, rel, OFlags::PATH, links)?;
    let before = rustix::fs::fstat(&pinned)?;
    check_kind(&before)?;
    open_checked(dir, rel, links, &before)
}

/// The cheap way in for a path with no symlink in it: `fstatat` beneath
/// `dir` (nothing is opened, so no FIFO, socket or device is touched), then
/// the readable open with symlinks refused, then `fstat` on the result.
///
/// `fstatat` follows symlinks in the folders on the way, so it may look
/// somewhere the open will not: that is harmless, because it is only trusted
/// to say "a regular file or a folder", the open then refuses any symlink,
/// and the opened inode must be the one stated. Anything else (an error, a
/// symlink, a special file) answers `None`, and the caller takes the `O_PATH`
/// way, which gives the precise error.
fn open_plain(dir: BorrowedFd<'_>, rel: &Path) -> Option<io::Result<(OwnedFd, Stat)>> {
    let at = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    let before = rustix::fs::statat(dir, at, AtFlags::SYMLINK_NOFOLLOW).ok()?;
    check_kind(&before).ok()?;
    Some(open_checked(dir, rel, Links::None, &before))
}

/// The readable open of an object already known (by `before`) to be a
/// regular file or a folder; fails when it is no longer that object.
fn open_checked(dir: BorrowedFd<'_>, rel: &Path, links: Links, before: &Stat) -> io::Result<(OwnedFd, Stat)> {
    let flags = if is_dir(before) {
        OFlags::RDONLY | OFlags::DIRECTORY
    } else {
        OFlags::RDONLY | OFlags::NONBLOCK
    };
    let fd = open_beneath(dir, rel, flags, links)?;
    let stat = rustix::fs::fstat(&fd)?;
    if stat.st_dev != before.st_dev || stat.st_ino != before.st_ino {
        return Err(io::Error::other(
            "the file changed while it was being opened; retry",
        ));
    }
    check_kind(&stat)?;
    Ok((fd, stat))
}

/// The error a FIFO, socket or device path gets.
pub fn special_file_error(kind: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("is a {kind}, not a regular file; these are refused so a call cannot hang or touch a device"),
    )
}

/// Refuses anything but regular files and folders.
pub fn check_kind(stat: &Stat) -> io::Result<()> {
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile | FileType::Directory => Ok(()),
        other => Err(special_file_error(kind_name(other))),
    }
}

/// Whether a stat is a folder.
pub fn is_dir(stat: &Stat) -> bool {
    FileType::from_raw_mode(stat.st_mode) == FileType::Directory
}

/// A word for a file type, for listings and messages.
pub fn kind_name(kind: FileType) -> &'static str {
    match kind {
        FileType::RegularFile => "file",
        FileType::Directory => "dir",
        FileType::Symlink => "symlink",
        FileType::Fifo => "FIFO",
        FileType::Socket => "socket",
        FileType::CharacterDevice => "character device",
        FileType::BlockDevice => "block device",
        FileType::Unknown => "special file",
    }
}

/// Where an open handle really is (from /proc/self/fd), or None without /proc.
pub fn real_path(fd: impl AsFd) -> Option<PathBuf> {
    let link = format!("/proc/self/fd/{}", fd.as_fd().as_raw_fd());
    let target = std::fs::read_link(link).ok()?;
    // A deleted file reads as "path (deleted)"; treat it as unknown.
    target.is_absolute().then_some(target)
}

/// Whether an error means "the path tried to leave the root".
pub fn is_escape(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EXDEV) | Some(libc::ELOOP))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn opens_beneath_and_reads() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("a.txt"), "abc").unwrap_or_else(|e| panic!("{e}"));
        let root = open_root(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let (fd, stat) =
            open_readable(root.as_fd(), Path::new("a.txt"), Links::Beneath).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(stat.st_size, 3);
        let mut s = String::new();
        std::fs::File::from(fd)
            .read_to_string(&mut s)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s, "abc");
    }

    #[test]
    fn special_files_are_refused_without_being_opened() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let fifo = dir.path().join("pipe");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let _socket =
            std::os::unix::net::UnixListener::bind(dir.path().join("sock")).unwrap_or_else(|e| panic!("{e}"));
        let mut names = vec![("pipe", "FIFO"), ("sock", "socket")];
        // A device node needs CAP_MKNOD; test it where the tests may make one.
        let null = rustix::fs::stat("/dev/null").map(|s| s.st_rdev);
        if let Ok(rdev) = null {
            let made = rustix::fs::mknodat(
                rustix::fs::CWD,
                dir.path().join("null"),
                FileType::CharacterDevice,
                Mode::from_raw_mode(0o666),
                rdev,
            );
            if made.is_ok() {
                names.push(("null", "character device"));
            }
        }
        std::os::unix::fs::symlink("pipe", dir.path().join("link")).unwrap_or_else(|e| panic!("{e}"));
        let root = open_root(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        for (name, kind) in names {
            for links in [Links::None, Links::Beneath] {
                let err = open_readable(root.as_fd(), Path::new(name), links)
                    .map(|_| ())
                    .unwrap_err();
                assert_eq!(err.kind(), io::ErrorKind::Unsupported, "{name} {links:?}: {err}");
                assert!(err.to_string().contains(kind), "{name}: {err}");
            }
        }
        // Through a symlink: refused outright without links, by kind beneath.
        let err = open_readable(root.as_fd(), Path::new("link"), Links::None)
            .map(|_| ())
            .unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ELOOP), "{err}");
        let err = open_readable(root.as_fd(), Path::new("link"), Links::Beneath)
            .map(|_| ())
            .unwrap_err();
        assert!(err.to_string().contains("FIFO"), "{err}");
    }
}
