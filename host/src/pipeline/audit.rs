//! The append-only JSONL audit log: one record per call, denial and
//! approval. Inputs are recorded as a SHA-256 hash and a size unless the
//! plan opts into raw inputs (`host.audit_inputs`).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The open log.
pub struct AuditLog {
    file: Mutex<File>,
    raw_inputs: bool,
}

/// One line of the log.
#[derive(Serialize)]
pub struct AuditRecord<'a> {
    /// Milliseconds since the Unix epoch.
    pub ts_unix_ms: u128,
    /// The call id.
    pub call_id: &'a str,
    /// The tool's public name (or the unknown name asked for).
    pub tool: &'a str,
    /// The module, when resolved.
    pub module: Option<&'a str>,
    /// The module's version, when resolved.
    pub version: Option<&'a str>,
    /// The tool's effect, when resolved.
    pub effect: Option<&'a str>,
    /// allow, approved, deny, approval_required, hook_denied, invalid, unknown.
    pub decision: &'a str,
    /// Who approved an `ask` (flag, approver).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<&'a str>,
    /// The result's status.
    pub status: &'a str,
    /// The error code, on failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<&'a str>,
    /// Wall time of the call.
    pub duration_ms: f64,
    /// SHA-256 of the input's JSON text.
    pub input_sha256: String,
    /// Size of the input's JSON text.
    pub input_bytes: usize,
    /// Size of the output's JSON text.
    pub output_bytes: usize,
    /// The idempotency key, if the call had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<&'a str>,
    /// Whether the result was replayed from the idempotency store.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub replayed: bool,
    /// The raw input, only when the plan opts in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<&'a Value>,
}

impl AuditLog {
    /// Opens (creating it and its folder) the log for appending.
    ///
    /// A process killed inside a write (`kill -9`, power loss) can leave the
    /// log ending in a torn record with no newline. That fragment is kept
    /// (an audit log is never rewritten) but closed with a newline, so it
    /// stays one line that is not JSON and every later record is a whole
    /// line of its own; a warning says so. Readers skip lines that do not
    /// parse: only the last line before a restart can be one.
    pub fn open(path: &Path, raw_inputs: bool) -> std::io::Result<AuditLog> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(path)?;
        if ends_torn(&file)? {
            tracing::warn!(
                log = %path.display(),
                "the audit log ended in a torn record (a process was killed while writing it); it is closed with a newline and later records start on their own line"
            );
            file.write_all(b"\n")?;
        }
        Ok(AuditLog {
            file: Mutex::new(file),
            raw_inputs,
        })
    }

    /// Whether raw inputs go into records.
    pub fn raw_inputs(&self) -> bool {
        self.raw_inputs
    }

    /// Appends one record as one line (a single write on an O_APPEND file,
    /// so concurrent writers do not interleave within a line).
    pub fn append(&self, record: &AuditRecord<'_>) {
        let mut line = match serde_json::to_vec(record) {
            Ok(line) => line,
            Err(e) => {
                tracing::error!("cannot serialize an audit record: {e}");
                return;
            }
        };
        line.push(b'\n');
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = file.write_all(&line) {
            tracing::error!("cannot write the audit log: {e}");
        }
    }
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

/// Hex SHA-256 of a value's JSON text, and that text's length.
pub fn input_digest(input: &Value) -> (String, usize) {
    let text = serde_json::to_vec(input).unwrap_or_default();
    let digest = Sha256::digest(&text);
    let hex = digest.iter().map(|b| format!("{b:02x}")).collect();
    (hex, text.len())
}

/// Now, in milliseconds since the epoch.
pub fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}
