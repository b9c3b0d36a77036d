//! The default audit sink: a local JSONL file, one record per line, that
//! follows log rotation.
//!
//! logrotate (and most rotation tools) rename the file and expect the writer
//! to start a new one. Before every append the sink compares the path's
//! device and inode with the file it holds open and reopens (creating) the
//! path when they differ or the path is gone, so no record goes to a renamed
//! or deleted file; SIGHUP ([`request_reopen`]) forces a reopen as well,
//! for rotation schemes that copy and truncate.
//!
//! The log is never reached through a link: every open uses `O_NOFOLLOW`,
//! and the file must be a regular file owned by this user with one name
//! (a hard link could be another name of any of the user's files). A path
//! that now names something else (a symlink, a folder, a file of another
//! owner or with several names) is a swap, not a rotation: the sink stops
//! storing records, so side-effecting calls fail `audit_unavailable`, until
//! an operator restores the path and sends SIGHUP (or restarts the host).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use crate::state::audit_sink::{AuditSink, AuditSinkError, Torn};

/// Set by SIGHUP: the next append reopens the path whatever it is.
static REOPEN: AtomicBool = AtomicBool::new(false);

/// Asks every file sink to reopen its path before its next append (SIGHUP).
pub fn request_reopen() {
    REOPEN.store(true, Ordering::SeqCst);
}

/// A JSONL audit file.
pub struct FileSink {
    path: PathBuf,
    open: Mutex<Open>,
}

struct Open {
    file: File,
    /// Device and inode of `file`, to notice a rename.
    id: (u64, u64),
    /// The file ends in a torn fragment (found at open, or left by a failed
    /// write that could not be cut back): the next line must be the restart
    /// record naming it.
    torn: Option<Torn>,
    /// The file ends in a whole record without its newline.
    needs_newline: bool,
    /// The path was found swapped (why): nothing is stored until SIGHUP.
    swapped: Option<String>,
}

impl FileSink {
    /// Opens (creating it and its folder) the log for appending. The path
    /// must be a regular file or not exist: a folder, `/dev/full` or a FIFO
    /// is refused, so a plan naming one fails `check` and the mount.
    ///
    /// A process killed inside a write (`kill -9`, power loss) can leave the
    /// log ending in a torn record with no newline. That fragment is kept
    /// (an audit log is never rewritten); the first append after it writes
    /// a newline and a restart record naming the fragment (its SHA-256 and
    /// length) in one write, so a torn line is only ever the last line of a
    /// file or the line right before its restart record. `toolhost audit
    /// verify` accepts torn lines in exactly those two places.
    pub fn open(path: &Path) -> Result<FileSink, AuditSinkError> {
        let open = open_path(path)?;
        Ok(FileSink {
            path: path.to_path_buf(),
            open: Mutex::new(open),
        })
    }

    fn io(&self, source: std::io::Error) -> AuditSinkError {
        io(&self.path, source)
    }

    /// The open file, reopened first when the path names a new regular file
    /// (rotated), is gone, or SIGHUP asked for it. A path swapped for
    /// something else refuses every record from then until SIGHUP.
    fn current<'a>(&self, open: &'a mut Open) -> Result<&'a mut Open, AuditSinkError> {
        let forced = REOPEN.swap(false, Ordering::SeqCst);
        if let (Some(why), false) = (&open.swapped, forced) {
            return Err(swapped_error(&self.path, why));
        }
        let moved = match std::fs::symlink_metadata(&self.path) {
            Ok(meta) if (meta.dev(), meta.ino()) == open.id => false,
            Ok(meta) => {
                if let Some(why) = unsafe_kind(&meta) {
                    tracing::error!(log = %self.path.display(), "the audit log path was swapped: {why}");
                    open.swapped = Some(why.clone());
                    return Err(swapped_error(&self.path, &why));
                }
                true
            }
            Err(_) => true,
        };
        if forced || moved {
            *open = open_path(&self.path).inspect_err(|e| {
                tracing::error!(log = %self.path.display(), "the audit log cannot be reopened: {e}");
            })?;
            tracing::info!(log = %self.path.display(), "audit log reopened (rotated or SIGHUP)");
        }
        Ok(open)
    }

    /// Writes `line` and a newline (after a newline closing `torn`/the last
    /// record when `close`) in one write. A write that fails part-way is cut
    /// back to where it began, so a failed record leaves no fragment; when
    /// even that fails, the fragment is remembered as torn.
    fn write_line(&self, open: &mut Open, close: bool, line: &str) -> Result<(), AuditSinkError> {
        let mut bytes = Vec::with_capacity(line.len() + 2);
        if close {
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        // One write on an O_APPEND file: concurrent writers never interleave
        // inside a line.
        let mut written = 0;
        let failure = loop {
            if written == bytes.len() {
                break None;
            }
            match open.file.write(&bytes[written..]) {
                Ok(0) => break Some(std::io::Error::from(std::io::ErrorKind::WriteZero)),
                Ok(n) => written += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => break Some(e),
            }
        };
        let Some(error) = failure else {
            open.torn = None;
            open.needs_newline = false;
            return Ok(());
        };
        if written > 0 {
            let cut = open
                .file
                .metadata()
                .and_then(|m| open.file.set_len(m.len().saturating_sub(written as u64)));
            if cut.is_err() {
                // The fragment stays: the next append must name it.
                let (torn, needs_newline) = tail_state(&open.file).map_err(|e| self.io(e))?;
                open.torn = torn;
                open.needs_newline = needs_newline;
            }
        }
        Err(self.io(error))
    }
}

impl AuditSink for FileSink {
    fn append(&self, line: &str) -> Result<(), AuditSinkError> {
        let mut guard = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let open = self.current(&mut guard)?;
        if let Some(torn) = &open.torn {
            return Err(AuditSinkError::TornTail(torn.clone()));
        }
        let close = open.needs_newline;
        self.write_line(open, close, line)
    }

    fn close_torn(&self, torn: &Torn, line: &str) -> Result<bool, AuditSinkError> {
        let mut guard = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let open = self.current(&mut guard)?;
        if open.torn.as_ref() != Some(torn) {
            // Reopened onto another file meanwhile (rotation): nothing to
            // close here; the record is appended again and finds out.
            return Ok(false);
        }
        self.write_line(open, true, line).map(|()| true)
    }

    fn last(&self) -> Result<Option<String>, AuditSinkError> {
        let mut guard = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        last_record(&mut guard.file).map_err(|e| self.io(e))
    }
}

fn io(path: &Path, source: std::io::Error) -> AuditSinkError {
    AuditSinkError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Why a file at the log's path must not be written, if it must not: a
/// link, not a regular file, another owner, or more than one name.
fn unsafe_kind(meta: &std::fs::Metadata) -> Option<String> {
    let kind = meta.file_type();
    if kind.is_symlink() {
        return Some("it is a symbolic link (records would go wherever it points)".into());
    }
    if kind.is_dir() {
        return Some("it is a folder".into());
    }
    if !kind.is_file() {
        return Some("it is not a regular file".into());
    }
    let me = crate::private_file::current_uid();
    if meta.uid() != me {
        return Some(format!(
            "it is owned by uid {}, not by this user (uid {me})",
            meta.uid()
        ));
    }
    if meta.nlink() > 1 {
        return Some(format!(
            "it has {} names (a hard link: records would go into another file too)",
            meta.nlink()
        ));
    }
    None
}

/// The error of a swapped log, saying what an operator does about it.
fn swapped_error(path: &Path, why: &str) -> AuditSinkError {
    AuditSinkError::Unavailable(format!(
        "the audit log {} is no longer the file toolhost opened: {why}. No record is written there \
         and side-effecting calls are refused until an operator restores it (move the replacement \
         away so the path is a regular file of this user, or nothing) and sends SIGHUP to toolhost, \
         or restarts it",
        path.display()
    ))
}

/// Opens `path` for appending (creating it, never through a link) after
/// checking it is, or will be, a regular file of this user with one name,
/// and closes a torn last line.
fn open_path(path: &Path) -> Result<Open, AuditSinkError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| io(path, e))?;
    }
    let refuse = |why: String| {
        io(
            path,
            std::io::Error::other(format!(
                "{why}; an audit log must be a regular file of this user so records can be appended and rotated"
            )),
        )
    };
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if let Some(why) = unsafe_kind(&meta) {
            return Err(refuse(why));
        }
    }
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => refuse("it is a symbolic link".into()),
            _ => io(path, e),
        })?;
    // What was opened is what is checked: a swap between the look above
    // and the open is caught here.
    let meta = file.metadata().map_err(|e| io(path, e))?;
    if let Some(why) = unsafe_kind(&meta) {
        return Err(refuse(why));
    }
    let (torn, needs_newline) = tail_state(&file).map_err(|e| io(path, e))?;
    if let Some(torn) = &torn {
        tracing::warn!(
            log = %path.display(),
            torn_bytes = torn.bytes,
            "the audit log ends in a torn record (a process was killed while writing it); the next record is preceded by a restart record naming it"
        );
    }
    Ok(Open {
        file,
        id: (meta.dev(), meta.ino()),
        torn,
        needs_newline,
        swapped: None,
    })
}

/// How the file ends: in a torn fragment (its hash and length), in a whole
/// record without its newline (`true`), or cleanly.
fn tail_state(file: &File) -> std::io::Result<(Option<Torn>, bool)> {
    use std::os::unix::fs::FileExt;
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok((None, false));
    }
    let mut last = [0u8; 1];
    file.read_exact_at(&mut last, len - 1)?;
    if last[0] == b'\n' {
        return Ok((None, false));
    }
    // Read back to the last newline, in growing chunks.
    let mut chunk: u64 = 4096;
    let fragment = loop {
        let start = len.saturating_sub(chunk);
        let mut buf = vec![0u8; (len - start) as usize];
        file.read_exact_at(&mut buf, start)?;
        if let Some(nl) = buf.iter().rposition(|b| *b == b'\n') {
            break buf.split_off(nl + 1);
        }
        if start == 0 {
            break buf;
        }
        chunk = chunk.saturating_mul(4);
    };
    if let Ok(serde_json::Value::Object(_)) = serde_json::from_slice(&fragment) {
        return Ok((None, true));
    }
    Ok((
        Some(Torn {
            sha256: super::sha256_hex(&fragment),
            bytes: fragment.len() as u64,
        }),
        false,
    ))
}

/// The last line of the file that is a JSON object (torn fragments are
/// skipped), read backwards in growing chunks so a large log is not read
/// whole.
fn last_record(file: &mut File) -> std::io::Result<Option<String>> {
    let len = file.metadata()?.len();
    let mut chunk: u64 = 64 * 1024;
    loop {
        let start = len.saturating_sub(chunk);
        file.seek(SeekFrom::Start(start))?;
        let mut buf = Vec::with_capacity((len - start) as usize);
        Read::by_ref(file).take(len - start).read_to_end(&mut buf)?;
        let mut lines: Vec<&[u8]> = buf.split(|b| *b == b'\n').collect();
        if start > 0 && !lines.is_empty() {
            // The first piece may be the end of a longer line.
            lines.remove(0);
        }
        for line in lines.iter().rev() {
            if let Ok(serde_json::Value::Object(_)) = serde_json::from_slice(line) {
                return Ok(Some(String::from_utf8_lossy(line).into_owned()));
            }
        }
        if start == 0 {
            return Ok(None);
        }
        chunk = chunk.saturating_mul(4);
    }
}
