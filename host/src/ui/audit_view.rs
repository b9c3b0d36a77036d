//! The audit log as the page searches it: the newest records of the JSONL
//! file (`[host] audit_log`) that match the tool, principal and status
//! (each exact, when given) and the time range, at most [`MAX_LIMIT`] per
//! page. Only the last [`TAIL_BYTES`] of the file are read, so a search
//! costs the same however long the log has grown.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::Value;

/// Records shown when the query names no limit.
pub const DEFAULT_LIMIT: usize = 50;
/// The most records one page shows.
pub const MAX_LIMIT: usize = 200;
/// How much of the end of the file a search reads.
pub const TAIL_BYTES: u64 = 8 * 1024 * 1024;

/// What the search form asks (as typed; empty means any).
#[derive(Debug, Default, Clone)]
pub struct Query {
    /// The tool's name, exactly.
    pub tool: String,
    /// The caller's principal, exactly.
    pub principal: String,
    /// The record's status (`success`, `policy_denied`, `started`, …).
    pub status: String,
    /// The earliest time, `YYYY-MM-DDTHH:MM[:SS]`, UTC.
    pub from: String,
    /// The latest time, alike.
    pub to: String,
    /// Records shown at most (1 to [`MAX_LIMIT`]).
    pub limit: usize,
}

impl Query {
    /// From a URL's query string.
    pub fn parse(query: Option<&str>) -> Query {
        let mut q = Query {
            limit: DEFAULT_LIMIT,
            ..Query::default()
        };
        for (key, value) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            let value = value.trim().to_string();
            match key.as_ref() {
                "tool" => q.tool = value,
                "principal" => q.principal = value,
                "status" => q.status = value,
                "from" => q.from = value,
                "to" => q.to = value,
                "limit" => q.limit = value.parse().unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT),
                _ => {}
            }
        }
        q
    }
}

/// A search's answer.
pub struct Found {
    /// What was asked.
    pub query: Query,
    /// Newest first.
    pub records: Vec<Value>,
    /// Why fewer records may show than exist (no log, a bad time, …).
    pub note: Option<String>,
}

/// `YYYY-MM-DDTHH:MM[:SS]` (UTC) as ms since the epoch.
fn parse_time(text: &str, name: &str) -> Result<Option<i64>, String> {
    if text.is_empty() {
        return Ok(None);
    }
    let format = if text.len() == 16 {
        "%Y-%m-%dT%H:%M"
    } else {
        "%Y-%m-%dT%H:%M:%S"
    };
    chrono::NaiveDateTime::parse_from_str(text, format)
        .map(|t| Some(t.and_utc().timestamp_millis()))
        .map_err(|e| format!("'{name}' is not a time like 2026-01-31T13:45 ({e}); it was ignored"))
}

/// Searches the log at `path` (`None`: the plan keeps none here).
pub fn search(path: Option<&Path>, query: Query) -> Found {
    let mut notes = Vec::new();
    let from = parse_time(&query.from, "from").unwrap_or_else(|e| {
        notes.push(e);
        None
    });
    let to = parse_time(&query.to, "to").unwrap_or_else(|e| {
        notes.push(e);
        None
    });
    let mut records = Vec::new();
    match path {
        None => notes.push(
            "no audit log file: set [host] audit_log (with [host] state_url the records are in \
             PostgreSQL, which this page does not read)"
                .into(),
        ),
        Some(path) => match tail(path) {
            Ok((text, cut)) => {
                if cut {
                    notes.push(format!(
                        "only the last {} MiB of the log are searched",
                        TAIL_BYTES / 1024 / 1024
                    ));
                }
                let wanted = |r: &Value, key: &str, want: &str| {
                    want.is_empty() || r.get(key).and_then(Value::as_str) == Some(want)
                };
                for line in text.lines().rev() {
                    let Ok(record) = serde_json::from_str::<Value>(line) else {
                        continue;
                    };
                    let Some(ts) = record.get("ts_unix_ms").and_then(Value::as_i64) else {
                        continue;
                    };
                    let in_range = from.is_none_or(|f| ts >= f) && to.is_none_or(|t| ts <= t);
                    if record.get("tool").is_some()
                        && in_range
                        && wanted(&record, "tool", &query.tool)
                        && wanted(&record, "principal", &query.principal)
                        && wanted(&record, "status", &query.status)
                    {
                        records.push(record);
                        if records.len() == query.limit {
                            break;
                        }
                    }
                }
            }
            Err(e) => notes.push(format!("cannot read the audit log {}: {e}", path.display())),
        },
    }
    Found {
        query,
        records,
        note: (!notes.is_empty()).then(|| notes.join("; ")),
    }
}

/// The last [`TAIL_BYTES`] of the file, from a line's start; and whether
/// anything before was left out.
fn tail(path: &Path) -> std::io::Result<(String, bool)> {
    let mut file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    let start = len.saturating_sub(TAIL_BYTES);
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    file.take(TAIL_BYTES).read_to_end(&mut bytes)?;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if start > 0 {
        let first = text.find('\n').map_or(text.len(), |i| i + 1);
        text.drain(..first);
    }
    Ok((text, start > 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_is_bounded_and_times_are_checked() {
        let q = Query::parse(Some("tool=a%20b&limit=100000&from=2026-01-31T13:45"));
        assert_eq!((q.tool.as_str(), q.limit), ("a b", MAX_LIMIT));
        assert_eq!(parse_time(&q.from, "from").unwrap(), Some(1_769_867_100_000));
        assert!(parse_time("yesterday", "from").is_err());
    }
}
