//! The read-before-write guard and the per-file locks, both per host process.
//!
//! A model that overwrites a file it never read (or that changed on disk
//! since it read it) destroys work it has not seen; the guard refuses that.
//! The locks serialize writers of one file inside the module, whatever the
//! host schedules, so concurrent edits lose no update.
//!
//! **How "changed since read" is decided.** A file version is first told by
//! its [`Stamp`]: device, inode, size, mtime and ctime, to the nanosecond.
//! mtime alone can be put back (`touch -d`, `utimensat`), and an inode
//! number is reused after a delete; ctime cannot be set by an unprivileged
//! user: every change, including setting mtime, stamps it with the current
//! time. So once a file's ctime is older than [`RACY_WINDOW`], any later
//! change gives it a later ctime and the stamp alone decides, without
//! reading the file again. A file changed within that window of being seen
//! is *racy* (git's word for the same problem): a second change inside one
//! tick of the filesystem's clock could leave every field equal. For those
//! the guard also keeps the SHA-256 of the content, taken from the bytes in
//! hand after a write, or read once more at read time, and compares content
//! when the stamps agree. A racy file larger than [`MAX_HASH_BYTES`] is not
//! hashed; a write over it is refused until it is read again after the
//! window has passed.

use std::collections::HashMap;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::fs::Stat;
use sha2::{Digest, Sha256};
use toolhost_core::ToolError;

/// How recent a ctime may be for the stamp alone not to prove that a later
/// change will show: filesystem clocks tick in jiffies (a few ms) on Linux,
/// and coarser elsewhere (2 s on FAT); 2 s covers both.
pub const RACY_WINDOW: Duration = Duration::from_secs(2);

/// A racy file up to this size is hashed; a larger one cannot be vouched
/// for until its ctime is older than [`RACY_WINDOW`].
pub const MAX_HASH_BYTES: u64 = 32 * 1024 * 1024;

/// What identifies a version of a file on disk, short of its content.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stamp {
    dev: u64,
    ino: u64,
    size: i64,
    mtime: i64,
    mtime_nsec: i64,
    ctime: i64,
    ctime_nsec: i64,
}

impl Stamp {
    /// The stamp of a stat.
    pub fn of(stat: &Stat) -> Stamp {
        Stamp {
            dev: stat.st_dev,
            ino: stat.st_ino,
            size: stat.st_size,
            mtime: stat.st_mtime,
            mtime_nsec: stat.st_mtime_nsec as i64,
            ctime: stat.st_ctime,
            ctime_nsec: stat.st_ctime_nsec as i64,
        }
    }

    /// Whether a change made from now on could leave this very stamp: the
    /// ctime is within [`RACY_WINDOW`] of now, or ahead of this machine's
    /// clock (a network filesystem's server).
    pub fn racy(&self) -> bool {
        let ctime = i128::from(self.ctime) * 1_000_000_000 + i128::from(self.ctime_nsec);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        now - ctime < RACY_WINDOW.as_nanos() as i128
    }
}

/// What is known of the content beyond the stamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum Content {
    /// The stamp was not racy: it decides alone.
    ByStamp,
    /// The SHA-256 of the content.
    Hash([u8; 32]),
    /// Racy, and too large (or changing too fast) to hash.
    Unknown,
}

/// A version of a file as a session saw it (read or wrote it). Serialized
/// when kept in the host's shared state ([`crate::records`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Seen {
    stamp: Stamp,
    content: Content,
}

/// Why a version cannot be matched.
pub enum Mismatch {
    /// The file is another version.
    Changed,
    /// It was changed moments before it was seen and is too large to hash.
    Unverifiable,
}

impl Seen {
    /// The file as a write of `bytes` left it (`stat`, taken after the
    /// write): the bytes are in hand, so hashing them costs no read.
    pub fn written(stat: &Stat, bytes: &[u8]) -> Seen {
        let stamp = Stamp::of(stat);
        let content = if stamp.racy() {
            Content::Hash(Sha256::digest(bytes).into())
        } else {
            Content::ByStamp
        };
        Seen { stamp, content }
    }

    /// The file open as `fd`, in state `stat`, as a read saw it. Reads the
    /// content a second time only when the stamp is racy (changed within
    /// [`RACY_WINDOW`]): the fast path is one `clock_gettime`.
    pub fn read(stat: &Stat, fd: impl AsFd) -> Seen {
        let stamp = Stamp::of(stat);
        let content = if !stamp.racy() {
            Content::ByStamp
        } else {
            match hash_fd(fd.as_fd(), stat) {
                Some(hash) => Content::Hash(hash),
                None => Content::Unknown,
            }
        };
        Seen { stamp, content }
    }

    /// Whether the file now in state `stat` is this version. `content` reads
    /// the file; it is called only when the stamps agree and the version was
    /// racy.
    pub fn matches(
        &self,
        stat: &Stat,
        content: impl FnOnce() -> Result<Vec<u8>, ToolError>,
    ) -> Result<Result<(), Mismatch>, ToolError> {
        if Stamp::of(stat) != self.stamp {
            return Ok(Err(Mismatch::Changed));
        }
        match self.content {
            Content::ByStamp => Ok(Ok(())),
            Content::Unknown => Ok(Err(Mismatch::Unverifiable)),
            Content::Hash(hash) => {
                let now: [u8; 32] = Sha256::digest(content()?).into();
                Ok(if now == hash {
                    Ok(())
                } else {
                    Err(Mismatch::Changed)
                })
            }
        }
    }
}

impl Seen {
    /// Whether the file now in state `stat` is still this version, as the
    /// guard words it.
    pub fn still(
        &self,
        stat: &Stat,
        content: impl FnOnce() -> Result<Vec<u8>, ToolError>,
    ) -> Result<(), Stale> {
        match self.matches(stat, content) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(Mismatch::Changed)) => Err(Stale::Changed),
            Ok(Err(Mismatch::Unverifiable)) => Err(Stale::Unverifiable),
            Err(e) => Err(Stale::Unreadable(e)),
        }
    }
}

/// SHA-256 of the content of `fd` (in state `stat`), read from its start
/// without moving its offset; `None` when too large, unreadable, or changed
/// while it was read.
fn hash_fd(fd: std::os::fd::BorrowedFd<'_>, stat: &Stat) -> Option<[u8; 32]> {
    let size = u64::try_from(stat.st_size).ok()?;
    if size > MAX_HASH_BYTES {
        return None;
    }
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut at = 0u64;
    loop {
        let n = match rustix::io::pread(fd, &mut buf, at) {
            Ok(0) => break,
            Ok(n) => n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return None,
        };
        hasher.update(&buf[..n]);
        at += n as u64;
        if at > size {
            return None;
        }
    }
    let after = rustix::fs::fstat(fd).ok()?;
    (at == size && Stamp::of(&after) == Stamp::of(stat)).then(|| hasher.finalize().into())
}

/// Files read, by session (the host's session id: an MCP session, a CLI
/// process) and real path: a file one session read does not let another
/// overwrite it.
#[derive(Default)]
pub struct ReadTracker {
    seen: Mutex<HashMap<(String, PathBuf), Seen>>,
}

/// Why a write must read first.
pub enum Stale {
    /// Never read in this session.
    NotRead,
    /// Read, but the file changed since.
    Changed,
    /// Read moments after it changed, and too large to fingerprint.
    Unverifiable,
    /// The file could not be read to compare its content.
    Unreadable(ToolError),
}

impl ReadTracker {
    /// Records that `session` read `path`, open as `fd`, in state `stat`.
    pub fn record_read(&self, session: Option<&str>, path: &Path, stat: &Stat, fd: impl AsFd) {
        self.record(session, path, Seen::read(stat, fd));
    }

    /// Records that `session` holds `path` as `seen` (after its own write).
    pub fn record(&self, session: Option<&str>, path: &Path, seen: Seen) {
        self.lock()
            .insert((session.unwrap_or_default().to_owned(), path.to_path_buf()), seen);
    }

    /// Checks that `session` read `path`, now in state `stat`, in that
    /// state; `content` reads the file when the content must be compared.
    pub fn check(
        &self,
        session: Option<&str>,
        path: &Path,
        stat: &Stat,
        content: impl FnOnce() -> Result<Vec<u8>, ToolError>,
    ) -> Result<(), Stale> {
        let key = (session.unwrap_or_default().to_owned(), path.to_path_buf());
        let seen = self.lock().get(&key).copied().ok_or(Stale::NotRead)?;
        seen.still(stat, content)
    }

    /// Forgets every file `session` read (the session ended); returns how
    /// many records went.
    pub fn forget_session(&self, session: &str) -> usize {
        let mut seen = self.lock();
        let before = seen.len();
        seen.retain(|(owner, _), _| owner != session);
        before - seen.len()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<(String, PathBuf), Seen>> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One mutex per file path that has been written.
#[derive(Default)]
pub struct FileLocks {
    locks: Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>,
}

impl FileLocks {
    /// The lock of `path` (created on first use).
    pub fn of(&self, path: &Path) -> Arc<Mutex<()>> {
        let mut map = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        map.entry(path.to_path_buf()).or_default().clone()
    }
}

/// Holds a file's lock for a scope.
pub fn hold(lock: &Mutex<()>) -> MutexGuard<'_, ()> {
    lock.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use super::*;

    fn stat(path: &Path) -> Stat {
        rustix::fs::stat(path).unwrap_or_else(|e| panic!("{e}"))
    }

    fn unread() -> Result<Vec<u8>, ToolError> {
        panic!("the content must not be read when the stamp decides")
    }

    #[test]
    fn a_same_size_rewrite_with_mtime_put_back_is_caught() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("f");
        std::fs::write(&path, "aaaa").unwrap_or_else(|e| panic!("{e}"));
        let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{e}"));
        let before = stat(&path);
        let seen = Seen::read(&before, &file);
        assert!(
            matches!(seen.content, Content::Hash(_)),
            "a file just written is racy"
        );
        assert!(matches!(
            seen.matches(&before, || Ok(b"aaaa".to_vec())),
            Ok(Ok(()))
        ));
        let mtime = std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(&path, "bbbb").unwrap_or_else(|e| panic!("{e}"));
        std::fs::File::options()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_modified(mtime))
            .unwrap_or_else(|e| panic!("{e}"));
        let after = stat(&path);
        assert_eq!(
            (after.st_mtime, after.st_mtime_nsec),
            (before.st_mtime, before.st_mtime_nsec)
        );
        assert!(matches!(
            seen.matches(&after, || Ok(b"bbbb".to_vec())),
            Ok(Err(Mismatch::Changed))
        ));
    }

    #[test]
    fn an_old_stamp_decides_without_reading() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("f");
        std::fs::write(&path, "x").unwrap_or_else(|e| panic!("{e}"));
        let mut old = stat(&path);
        // As if the file last changed an hour ago.
        let hour_ago = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64 - 3600);
        old.st_ctime = hour_ago;
        let seen = Seen::written(&old, b"x");
        assert_eq!(seen.content, Content::ByStamp);
        assert!(matches!(seen.matches(&old, unread), Ok(Ok(()))));
        // Any change moves ctime forward: the stamp alone refuses.
        let mut changed = old;
        changed.st_ctime = hour_ago + 1;
        assert!(matches!(
            seen.matches(&changed, unread),
            Ok(Err(Mismatch::Changed))
        ));
    }

    #[test]
    fn a_racy_file_too_large_to_hash_is_unverifiable() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("big");
        let file = std::fs::File::create(&path).unwrap_or_else(|e| panic!("{e}"));
        file.set_len(MAX_HASH_BYTES + 1).unwrap_or_else(|e| panic!("{e}"));
        let now = stat(&path);
        let seen = Seen::read(&now, &file);
        assert!(matches!(
            seen.matches(&now, unread),
            Ok(Err(Mismatch::Unverifiable))
        ));
    }
}
