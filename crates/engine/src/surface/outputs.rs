//! Large results by reference. A result over `[host] max_output_bytes` is
//! still cut to its head and tail for the answer, but its whole output is
//! first kept in the state folder (`outputs/<principal>/`), and the answer
//! carries a `resource_link` (`toolhost://output/<id>`) that the same
//! principal reads in ranges with MCP `resources/read`
//! (`toolhost://output/<id>?offset=N&length=M`) or the `read_output` tool.
//!
//! Kept outputs are bounded per principal in bytes
//! (`[host] output_store_bytes`, the oldest removed first) and in time
//! (`[host] output_store_secs`); a handle that is gone, or that belongs to
//! another principal, answers `expired_handle`. An output larger than the
//! whole per-principal budget is not kept, and the answer says so.
//! The files are written mode 0600; they hold what the tool returned, after
//! redaction.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use toolhost_core::{Status, ToolResult};

use crate::plan::Plan;

/// The error code for a handle that is gone.
pub const EXPIRED_HANDLE: &str = "expired_handle";
/// The URI scheme and path of kept outputs.
pub const URI_PREFIX: &str = "toolhost://output/";
/// `metadata` key of the link in a ToolResult.
pub const LINK_KEY: &str = "resource_link";

/// Where over-limit outputs are kept, and for how long.
pub struct OutputStore {
    dir: PathBuf,
    max_bytes: u64,
    ttl: Duration,
    /// The largest range one read returns (under `max_output_bytes`, so a
    /// read's own answer is never cut).
    max_read: usize,
    next: AtomicU64,
}

/// A range of a kept output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The handle's URI.
    pub uri: String,
    /// Where the range starts, in bytes.
    pub offset: usize,
    /// The text of the range (whole characters).
    pub text: String,
    /// The whole output's size in bytes.
    pub total: usize,
    /// Where the next range starts, when there is more.
    pub next_offset: Option<usize>,
}

/// Why a kept output cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// Gone (expired, evicted), never kept, or another principal's.
    #[error("output {uri} is no longer kept (outputs are kept for {secs} s and within a per-principal budget); run the tool again")]
    Expired {
        /// The handle.
        uri: String,
        /// The store's time bound.
        secs: u64,
    },
    /// Not a `toolhost://output/` URI.
    #[error("'{0}' is not an output handle; handles look like toolhost://output/<id>")]
    NotAHandle(String),
    /// The file could not be read.
    #[error("cannot read output {uri}: {error}")]
    Io {
        /// The handle.
        uri: String,
        /// Why.
        error: std::io::Error,
    },
}

impl OutputError {
    /// The error code a caller branches on.
    pub fn code(&self) -> &'static str {
        match self {
            OutputError::Expired { .. } => EXPIRED_HANDLE,
            OutputError::NotAHandle(_) => "invalid_input",
            OutputError::Io { .. } => "internal",
        }
    }

    /// As a failed ToolResult.
    pub fn into_result(self, id: &str) -> ToolResult {
        let status = match self {
            OutputError::NotAHandle(_) => Status::ValidationError,
            _ => Status::Error,
        };
        ToolResult::failure(id, status, self.code(), self.to_string())
    }
}

/// A principal's folder name: a hash, so any principal name is a safe path.
fn folder_of(principal: &str) -> String {
    let hash = Sha256::digest(principal.as_bytes());
    hash.iter().take(12).map(|b| format!("{b:02x}")).collect()
}

/// The id part of a handle, checked to be a plain file name.
fn id_of(uri: &str) -> Result<&str, OutputError> {
    let rest = uri
        .strip_prefix(URI_PREFIX)
        .ok_or_else(|| OutputError::NotAHandle(uri.to_string()))?;
    let id = rest.split('?').next().unwrap_or_default();
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(OutputError::NotAHandle(uri.to_string()));
    }
    Ok(id)
}

/// `offset` and `length` from a handle's query (`?offset=N&length=M`).
pub fn range_of(uri: &str) -> (Option<usize>, Option<usize>) {
    let Some((_, query)) = uri.split_once('?') else {
        return (None, None);
    };
    let mut range = (None, None);
    for pair in query.split('&') {
        match pair.split_once('=') {
            Some(("offset", v)) => range.0 = v.parse().ok(),
            Some(("length", v)) => range.1 = v.parse().ok(),
            _ => {}
        }
    }
    range
}

impl OutputStore {
    /// The store of a plan (nothing is created until something is kept).
    pub fn new(plan: &Plan) -> OutputStore {
        OutputStore {
            dir: plan.state_dir().join("outputs"),
            max_bytes: plan.host.output_store_bytes,
            ttl: Duration::from_secs(plan.host.output_store_secs),
            max_read: (plan.host.max_output_bytes as usize)
                .saturating_sub(1024)
                .max(512)
                / 2,
            next: AtomicU64::new(0),
        }
    }

    /// The largest range one read returns.
    pub fn max_read(&self) -> usize {
        self.max_read
    }

    /// Keeps `result`'s whole output for `principal` and returns the link
    /// to attach, or a note saying why it was not kept.
    pub fn keep(&self, principal: &str, result: &ToolResult) -> Value {
        let (text, mime) = match &result.output {
            Value::String(s) => (s.clone(), "text/plain"),
            other => (
                serde_json::to_string(other).unwrap_or_default(),
                "application/json",
            ),
        };
        if text.len() as u64 > self.max_bytes {
            return json!({ "kept": false, "why": format!(
                "the output ({} bytes) is larger than the per-principal budget ([host] output_store_bytes = {})",
                text.len(), self.max_bytes) });
        }
        let dir = self.dir.join(folder_of(principal));
        let seed = format!(
            "{}:{}:{}:{:?}",
            result.tool_call_id,
            std::process::id(),
            self.next.fetch_add(1, Ordering::Relaxed),
            SystemTime::now()
        );
        let id: String = Sha256::digest(seed.as_bytes())
            .iter()
            .take(16)
            .map(|b| format!("{b:02x}"))
            .collect();
        if let Err(e) = write_private(&dir, &id, text.as_bytes()) {
            return json!({ "kept": false, "why": format!("cannot keep the output: {e}") });
        }
        self.sweep(&dir);
        let expires = chrono::Utc::now() + chrono::Duration::seconds(self.ttl.as_secs() as i64);
        json!({
            "kept": true,
            "uri": format!("{URI_PREFIX}{id}"),
            "name": format!("output of {}", result.tool_call_id),
            "mimeType": mime,
            "size": text.len(),
            "expires_at": expires.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        })
    }

    /// Reads a range of a kept output of `principal`.
    pub fn read(
        &self,
        principal: &str,
        uri: &str,
        offset: Option<usize>,
        length: Option<usize>,
    ) -> Result<Chunk, OutputError> {
        let id = id_of(uri)?;
        let base = format!("{URI_PREFIX}{id}");
        let expired = || OutputError::Expired {
            uri: base.clone(),
            secs: self.ttl.as_secs(),
        };
        let file = self.dir.join(folder_of(principal)).join(id);
        let fresh = std::fs::metadata(&file)
            .and_then(|m| m.modified())
            .map(|t| t.elapsed().unwrap_or_default() < self.ttl);
        match fresh {
            Ok(true) => {}
            Ok(false) => {
                let _ = std::fs::remove_file(&file);
                return Err(expired());
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(expired()),
            Err(error) => return Err(OutputError::Io { uri: base, error }),
        }
        let bytes = match std::fs::read(&file) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(expired()),
            Err(error) => return Err(OutputError::Io { uri: base, error }),
        };
        let text = String::from_utf8_lossy(&bytes);
        let total = text.len();
        let start = floor_char(&text, offset.unwrap_or(0).min(total));
        let want = length.unwrap_or(self.max_read).clamp(1, self.max_read);
        let end = floor_char(&text, start.saturating_add(want).min(total));
        // A range shorter than one character still moves on.
        let end = if end == start && start < total {
            ceil_char(&text, start + 1)
        } else {
            end
        };
        Ok(Chunk {
            uri: base,
            offset: start,
            text: text[start..end].to_string(),
            total,
            next_offset: (end < total).then_some(end),
        })
    }

    /// Removes a principal's expired outputs, then its oldest until the
    /// rest fit the budget.
    fn sweep(&self, dir: &Path) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut files: Vec<(SystemTime, u64, PathBuf)> = entries
            .flatten()
            .filter_map(|e| {
                let meta = e.metadata().ok()?;
                Some((meta.modified().ok()?, meta.len(), e.path()))
            })
            .collect();
        files.sort();
        let mut total: u64 = files.iter().map(|f| f.1).sum();
        for (modified, len, path) in files {
            let old = modified.elapsed().unwrap_or_default() >= self.ttl;
            if (old || total > self.max_bytes) && std::fs::remove_file(&path).is_ok() {
                total = total.saturating_sub(len);
            }
        }
    }
}

/// Writes `bytes` to `dir/name`, mode 0600, through a temporary file.
fn write_private(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let tmp = dir.join(format!(".{name}.tmp"));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    file.write_all(bytes)?;
    std::fs::rename(&tmp, dir.join(name))
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Puts the link (or the note that nothing was kept) in the result's
/// metadata, where the MCP layer turns it into a `resource_link`.
pub fn attach(result: &mut ToolResult, link: Value) {
    result.metadata.extra.insert(LINK_KEY.into(), link);
}

/// The MCP content a result's link adds: a `resource_link` block and a line
/// telling the model how to read the rest. Empty when there is no link.
pub fn mcp_blocks(link: Option<&Value>) -> Vec<rmcp::model::ContentBlock> {
    let Some(link) = link else {
        return Vec::new();
    };
    let Some(uri) = link.get("uri").and_then(Value::as_str) else {
        let why = link.get("why").and_then(Value::as_str).unwrap_or("");
        return vec![rmcp::model::ContentBlock::text(format!(
            "[the output was cut and not kept: {why}]"
        ))];
    };
    let size = link.get("size").and_then(Value::as_u64).unwrap_or(0);
    let mut resource = rmcp::model::Resource::new(uri, link["name"].as_str().unwrap_or("output"));
    resource.mime_type = link["mimeType"].as_str().map(str::to_string);
    resource.size = Some(size);
    vec![
        rmcp::model::ContentBlock::text(format!(
            "[the whole output ({size} bytes) is kept until {}: read it with the read_output tool \
             {{\"uri\": \"{uri}\", \"offset\": 0}} (follow next_offset), or resources/read {uri}?offset=0]",
            link["expires_at"].as_str().unwrap_or("")
        )),
        rmcp::model::ContentBlock::resource_link(resource),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(dir: &Path, max_bytes: u64) -> OutputStore {
        OutputStore {
            dir: dir.to_path_buf(),
            max_bytes,
            ttl: Duration::from_secs(60),
            max_read: 16,
            next: AtomicU64::new(0),
        }
    }

    fn kept(store: &OutputStore, principal: &str, text: &str) -> String {
        let link = store.keep(principal, &ToolResult::success("c", json!(text)));
        link["uri"]
            .as_str()
            .unwrap_or_else(|| panic!("not kept: {link}"))
            .to_string()
    }

    #[test]
    fn the_budget_evicts_the_oldest_and_refuses_what_cannot_fit() {
        let dir = tempfile::tempdir().expect("dir");
        let store = store(dir.path(), 100);
        let first = kept(&store, "p", &"a".repeat(40));
        std::thread::sleep(Duration::from_millis(20));
        let second = kept(&store, "p", &"b".repeat(40));
        std::thread::sleep(Duration::from_millis(20));
        let third = kept(&store, "p", &"c".repeat(40));
        assert!(matches!(
            store.read("p", &first, None, None),
            Err(OutputError::Expired { .. })
        ));
        assert!(store.read("p", &second, None, None).is_ok());
        let chunk = store.read("p", &third, Some(30), None).expect("readable");
        assert_eq!(
            (chunk.offset, chunk.text.len(), chunk.total, chunk.next_offset),
            (30, 10, 40, None)
        );
        // Another principal's handle is not readable.
        assert!(matches!(
            store.read("q", &third, None, None),
            Err(OutputError::Expired { .. })
        ));
        let too_big = store.keep("p", &ToolResult::success("c", json!("x".repeat(200))));
        assert_eq!(too_big["kept"], json!(false), "{too_big}");
    }

    #[test]
    fn ranges_end_on_character_boundaries() {
        let dir = tempfile::tempdir().expect("dir");
        let store = store(dir.path(), 1000);
        let uri = kept(&store, "p", &"é".repeat(20));
        let mut whole = String::new();
        let mut offset = Some(0);
        while let Some(at) = offset {
            let chunk = store.read("p", &uri, Some(at), Some(3)).expect("readable");
            whole.push_str(&chunk.text);
            offset = chunk.next_offset;
        }
        assert_eq!(whole, "é".repeat(20));
    }

    #[test]
    fn handles_and_ranges_parse_strictly() {
        assert_eq!(id_of("toolhost://output/ab12?offset=3").unwrap(), "ab12");
        assert!(id_of("toolhost://output/../x").is_err());
        assert!(id_of("file:///etc/passwd").is_err());
        assert_eq!(
            range_of("toolhost://output/ab?offset=3&length=9"),
            (Some(3), Some(9))
        );
        assert_eq!(range_of("toolhost://output/ab"), (None, None));
    }
}
