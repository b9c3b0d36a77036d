//! The default audit sink: a local JSONL file, one record per line, that
//! follows log rotation.
//!
//! logrotate (and most rotation tools) rename the file and expect the writer
//! to start a new one. Before every append the sink compares the path's
//! device and inode with the file it holds open and reopens (creating) the
//! path when they differ or the path is gone, so no record goes to a renamed
//! or deleted file; SIGHUP ([`request_reopen`]) forces a reopen as well,
//! for rotation schemes that copy and truncate.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use super::audit_sink::{AuditSink, AuditSinkError};

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
    /// A write failed part-way: the file may end in a fragment, so the next
    /// record must start on a line of its own.
    maybe_torn: bool,
}

impl FileSink {
    /// Opens (creating it and its folder) the log for appending. The path
    /// must be a regular file or not exist: a folder, `/dev/full` or a FIFO
    /// is refused, so a plan naming one fails `check` and the mount.
    ///
    /// A process killed inside a write (`kill -9`, power loss) can leave the
    /// log ending in a torn record with no newline. That fragment is kept
    /// (an audit log is never rewritten) but closed with a newline, so it
    /// stays one line that is not JSON and every later record is a whole
    /// line of its own; a warning says so. `toolhost audit verify` reports
    /// such lines and checks that the chain skips them intact.
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

    /// The open file, reopened first when the path now names another file
    /// (rotated), is gone, or SIGHUP asked for it.
    fn current<'a>(&self, open: &'a mut Open) -> Result<&'a mut Open, AuditSinkError> {
        let forced = REOPEN.swap(false, Ordering::SeqCst);
        let moved = match std::fs::metadata(&self.path) {
            Ok(meta) => (meta.dev(), meta.ino()) != open.id,
            Err(_) => true,
        };
        if forced || moved {
            *open = open_path(&self.path)?;
            tracing::info!(log = %self.path.display(), "audit log reopened (rotated or SIGHUP)");
        }
        Ok(open)
    }
}

impl AuditSink for FileSink {
    fn append(&self, line: &str) -> Result<(), AuditSinkError> {
        let mut guard = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let open = self.current(&mut guard)?;
        let mut bytes = Vec::with_capacity(line.len() + 2);
        if open.maybe_torn && ends_torn(&open.file).map_err(|e| self.io(e))? {
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        // One write on an O_APPEND file: concurrent writers never interleave
        // inside a line.
        match open.file.write_all(&bytes) {
            Ok(()) => {
                open.maybe_torn = false;
                Ok(())
            }
            Err(e) => {
                open.maybe_torn = true;
                Err(self.io(e))
            }
        }
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

/// Opens `path` for appending after checking it is (or will be) a regular
/// file, and closes a torn last line.
fn open_path(path: &Path) -> Result<Open, AuditSinkError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| io(path, e))?;
    }
    if let Ok(meta) = std::fs::metadata(path) {
        if !meta.is_file() {
            let what = if meta.is_dir() {
                "a folder"
            } else {
                "not a regular file"
            };
            return Err(io(
                path,
                std::io::Error::other(format!(
                    "it is {what}; an audit log must be a regular file so records can be appended and rotated"
                )),
            ));
        }
    }
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(path)
        .map_err(|e| io(path, e))?;
    if ends_torn(&file).map_err(|e| io(path, e))? {
        tracing::warn!(
            log = %path.display(),
            "the audit log ended in a torn record (a process was killed while writing it); it is closed with a newline and later records start on their own line"
        );
        file.write_all(b"\n").map_err(|e| io(path, e))?;
    }
    let meta = file.metadata().map_err(|e| io(path, e))?;
    Ok(Open {
        file,
        id: (meta.dev(), meta.ino()),
        maybe_torn: false,
    })
}

/// Whether a non-empty file's last byte is not a newline.
fn ends_torn(file: &File) -> std::io::Result<bool> {
    use std::os::unix::fs::FileExt;
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(false);
    }
    let mut last = [0u8; 1];
    file.read_exact_at(&mut last, len - 1)?;
    Ok(last[0] != b'\n')
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
