//! `toolhost audit verify`: walks the hash chain of one or more audit files
//! (given in order: rotated files first) and names the first broken link.
//!
//! What it detects: a record edited after it was written (the next record's
//! `prev_sha256` no longer matches), records deleted (a gap in `seq`),
//! records reordered or inserted (`seq` going back or a link to the wrong
//! record), a record without a link after the chain started. What it cannot
//! detect on its own: the last records cut off the end of the newest file
//! (nothing links to them), or an edit of the very last record; keep the
//! printed head (`seq` and SHA-256) somewhere else and compare to catch
//! those.
//!
//! Torn lines: a host killed inside a write leaves a fragment that is not
//! JSON. The next host to append closes it with a newline and, in the same
//! write, a restart record (`event` = `restart_after_torn_line`) that links
//! to the last whole record and names the fragment's SHA-256 and length. So
//! a line that is not a record is accepted in exactly two places: as the
//! last line of a file (a crash nobody has appended after yet), or right
//! before the restart record naming it. Anywhere else it is reported as
//! tampering with its line number: inserted garbage cannot hide behind the
//! torn-write excuse. (Logs written before the restart record existed, whose
//! torn lines are followed by an ordinary record, fail here.)
//!
//! The start: a chain's first record (seq 0) carries `genesis`, naming the
//! host that began the log and when. A first record that links to the
//! genesis hash starts the log, so any line before it was prepended (a
//! forged record there would otherwise pass with the same head) and is
//! reported. Only a chain continuing records an older toolhost wrote
//! without links may follow other lines, and then its first record links to
//! the last of them. A `genesis` anywhere but on seq 0 is reported too.
//!
//! The PostgreSQL sink stores each record as one row in one committed
//! statement: its lines are whole or absent, never torn, so an export of
//! its rows in `seq` order must verify with no torn line at all.

use std::path::Path;

use serde_json::Value;

use super::{sha256_hex, GENESIS, RESTART_EVENT};

/// Where the chain stands after a verified prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// `seq` of the last record.
    pub seq: u64,
    /// SHA-256 of its line.
    pub sha256: String,
}

/// What a verification found.
#[derive(Debug, Default)]
pub struct Report {
    /// Chained records checked.
    pub records: u64,
    /// Lines that are not JSON (torn writes), as `file:line`.
    pub torn: Vec<String>,
    /// JSON records without a link before the chain started (written by a
    /// toolhost without the chain), counted.
    pub unchained: u64,
    /// The last record.
    pub head: Option<Head>,
    /// The first record's `seq` when the first file continues an earlier
    /// one (rotation) that was not given.
    pub continues_from: Option<u64>,
    /// The first broken link: `file:line: what`.
    pub broken: Option<String>,
    /// The genesis the chain's first record carries: (host, started ms
    /// since the epoch); `None` when the first record carries none (a log
    /// an older toolhost began, or a file continuing a rotated one).
    pub genesis: Option<(String, u64)>,
    /// SHA-256 of the last unchained record: a log an older toolhost began
    /// is continued with seq 0 linking to it.
    last_unchained: Option<String>,
}

/// A log file that could not be read. A single struct: a broken chain is
/// not an error but the [`Report`]'s finding, so reading is all that fails.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {}: {error}", file.display())]
pub struct VerifyError {
    /// The file.
    pub file: std::path::PathBuf,
    /// The I/O error.
    pub error: std::io::Error,
}

/// A line that is not a record, waiting for the restart record naming it.
struct Fragment {
    at: String,
    sha256: String,
    bytes: u64,
}

/// Verifies `files` in order as one chain.
pub fn verify(files: &[&Path]) -> Result<Report, VerifyError> {
    let mut report = Report::default();
    for file in files {
        let text = std::fs::read(file).map_err(|error| VerifyError {
            file: file.to_path_buf(),
            error,
        })?;
        verify_text(&file.display().to_string(), &text, &mut report);
        if report.broken.is_some() {
            break;
        }
    }
    Ok(report)
}

/// Verifies one file's bytes, continuing `report`.
pub fn verify_text(name: &str, text: &[u8], report: &mut Report) {
    let ends_with_newline = text.last().is_none_or(|b| *b == b'\n');
    let mut lines: Vec<&[u8]> = text.split(|b| *b == b'\n').collect();
    if ends_with_newline {
        lines.pop();
    }
    let mut fragment: Option<Fragment> = None;
    for (i, line) in lines.iter().enumerate() {
        let at = format!("{name}:{}", i + 1);
        let record = match serde_json::from_slice::<Value>(line) {
            Ok(Value::Object(map)) => map,
            _ => {
                if let Some(earlier) = fragment {
                    report.broken = Some(not_torn(&earlier.at));
                    return;
                }
                fragment = Some(Fragment {
                    at,
                    sha256: sha256_hex(line),
                    bytes: line.len() as u64,
                });
                continue;
            }
        };
        let restart = record.get("event").and_then(Value::as_str) == Some(RESTART_EVENT);
        match fragment.take() {
            Some(torn) => {
                let names_it = restart
                    && record.get("torn_sha256").and_then(Value::as_str) == Some(torn.sha256.as_str())
                    && record.get("torn_bytes").and_then(Value::as_u64) == Some(torn.bytes);
                if !names_it {
                    report.broken = Some(not_torn(&torn.at));
                    return;
                }
                report.torn.push(torn.at);
            }
            None if restart => {
                report.broken = Some(format!(
                    "{at}: a restart record, but the line before it is not the torn line it names \
                     (that line was removed or replaced)"
                ));
                return;
            }
            None => {}
        }
        let (Some(seq), Some(prev)) = (
            record.get("seq").and_then(Value::as_u64),
            record.get("prev_sha256").and_then(Value::as_str),
        ) else {
            if report.head.is_some() {
                report.broken = Some(format!(
                    "{at}: a record without a chain link (seq, prev_sha256) after the chain started: \
                     inserted by hand or by another writer"
                ));
                return;
            }
            report.unchained += 1;
            report.last_unchained = Some(sha256_hex(line));
            continue;
        };
        let sha = sha256_hex(line);
        let genesis = record.get("genesis");
        if genesis.is_some() && (seq != 0 || report.head.is_some()) {
            report.broken = Some(format!(
                "{at}: a genesis record (a chain's start) in the middle of the chain: inserted by hand"
            ));
            return;
        }
        match &report.head {
            None => {
                let after_unchained = report.last_unchained.as_deref() == Some(prev);
                if seq == 0 && prev != GENESIS && !after_unchained {
                    report.broken = Some(format!(
                        "{at}: the first record (seq 0) must link to the genesis hash or to the unchained \
                         record before it; it links to {prev}"
                    ));
                    return;
                }
                // Lines of this file before it, and unchained records of
                // earlier files.
                let before = i;
                if seq == 0 && prev == GENESIS && (before > 0 || report.unchained > 0) {
                    report.broken = Some(format!(
                        "{at}: {} line(s) before the genesis record (seq 0, which starts the log{}): \
                         records before the start were prepended by someone else",
                        before.max(report.unchained as usize),
                        genesis_note(genesis)
                    ));
                    return;
                }
                if seq == 0 {
                    report.genesis = genesis.map(|g| {
                        (
                            g["host"].as_str().unwrap_or("?").to_string(),
                            g["started_unix_ms"].as_u64().unwrap_or(0),
                        )
                    });
                }
                if seq > 0 {
                    report.continues_from = Some(seq);
                }
            }
            Some(head) => {
                if let Some(problem) = link_problem(head, seq, prev) {
                    report.broken = Some(format!("{at}: {problem}"));
                    return;
                }
            }
        }
        report.records += 1;
        report.head = Some(Head { seq, sha256: sha });
    }
    // A fragment left over is the file's last line: a crash nobody has
    // appended after yet.
    if let Some(torn) = fragment {
        report.torn.push(torn.at);
    }
}

/// `, begun by HOST` for a genesis that names its host.
fn genesis_note(genesis: Option<&Value>) -> String {
    genesis
        .and_then(|g| g["host"].as_str())
        .map(|h| format!(", begun by host {h}"))
        .unwrap_or_default()
}

/// The finding for a line that is not a record where no crash leaves one.
fn not_torn(at: &str) -> String {
    format!(
        "{at}: not a record, and not where a crash leaves a torn line (the last line of a file, or \
         right before the restart record naming it): inserted or altered by hand"
    )
}

/// Why a record with `seq` and `prev` does not follow `head`, if it does not.
fn link_problem(head: &Head, seq: u64, prev: &str) -> Option<String> {
    let expected = head.seq + 1;
    if seq > expected {
        let gone = seq - expected;
        return Some(format!(
            "seq jumps from {} to {seq}: {gone} record(s) deleted before this line",
            head.seq
        ));
    }
    if seq < expected {
        return Some(format!(
            "seq goes back from {} to {seq}: records reordered, duplicated or inserted",
            head.seq
        ));
    }
    if prev != head.sha256 {
        return Some(format!(
            "prev_sha256 does not match the previous record (seq {}): that record was edited after it was \
             written, or this one was",
            head.seq
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(n: u64) -> Vec<String> {
        let mut prev = GENESIS.to_string();
        (0..n)
            .map(|seq| {
                let line = format!(r#"{{"seq":{seq},"prev_sha256":"{prev}","tool":"t{seq}"}}"#);
                prev = sha256_hex(line.as_bytes());
                line
            })
            .collect()
    }

    fn check(lines: &[String]) -> Report {
        let mut report = Report::default();
        let text = lines.join("\n") + "\n";
        verify_text("log", text.as_bytes(), &mut report);
        report
    }

    #[test]
    fn intact_edited_deleted_and_reordered() {
        let lines = chain(5);
        let ok = check(&lines);
        assert_eq!((ok.records, ok.broken.as_deref()), (5, None));

        let mut edited = lines.clone();
        edited[2] = edited[2].replace("\"t2\"", "\"tX\"");
        let broken = check(&edited).broken.expect("edit found");
        assert!(broken.starts_with("log:4: prev_sha256"), "{broken}");

        let mut deleted = lines.clone();
        deleted.remove(1);
        let broken = check(&deleted).broken.expect("deletion found");
        assert!(broken.starts_with("log:2: seq jumps from 0 to 2"), "{broken}");

        let mut swapped = lines.clone();
        swapped.swap(1, 2);
        let broken = check(&swapped).broken.expect("reorder found");
        assert!(broken.starts_with("log:2: seq jumps"), "{broken}");
    }

    #[test]
    fn a_record_prepended_before_the_genesis_is_found() {
        let mut prev = GENESIS.to_string();
        let mut lines = Vec::new();
        for seq in 0..3u64 {
            let genesis = if seq == 0 {
                r#","genesis":{"host":"h1","started_unix_ms":5}"#
            } else {
                ""
            };
            let line = format!(r#"{{"seq":{seq},"prev_sha256":"{prev}"{genesis},"tool":"t"}}"#);
            prev = sha256_hex(line.as_bytes());
            lines.push(line);
        }
        let ok = check(&lines);
        assert_eq!(ok.broken, None);
        assert_eq!(ok.genesis, Some(("h1".to_string(), 5)));
        // An unchained record put before the start: same head, but found.
        let mut forged = lines.clone();
        forged.insert(
            0,
            r#"{"call_id":"x","tool":"delete_file","status":"success"}"#.into(),
        );
        let broken = check(&forged).broken.expect("prepended record found");
        assert!(
            broken.starts_with("log:2: 1 line(s) before the genesis record"),
            "{broken}"
        );
        // A second genesis inside the chain.
        let mut twice = lines.clone();
        twice[2] = twice[2].replace(r#""tool":"t""#, r#""genesis":{"host":"h2"},"tool":"t""#);
        let broken = check(&twice).broken.expect("inner genesis found");
        assert!(
            broken.contains("genesis record (a chain's start) in the middle"),
            "{broken}"
        );
    }

    #[test]
    fn a_chain_may_start_after_records_an_older_host_wrote() {
        let old = r#"{"call_id":"old","tool":"echo"}"#.to_string();
        let first = format!(
            r#"{{"seq":0,"prev_sha256":"{}","tool":"new"}}"#,
            sha256_hex(old.as_bytes())
        );
        let report = check(&[old.clone(), first]);
        assert_eq!((report.unchained, report.records, report.broken), (1, 1, None));
        let forged = format!(
            r#"{{"seq":0,"prev_sha256":"{}","tool":"new"}}"#,
            sha256_hex(b"other")
        );
        assert!(check(&[old, forged]).broken.is_some());
    }

    /// `chain(n)` with a restart record naming `torn` appended.
    fn restarted(n: u64, torn: &str) -> Vec<String> {
        let mut lines = chain(n);
        let prev = sha256_hex(lines[lines.len() - 1].as_bytes());
        lines.push(torn.to_string());
        lines.push(format!(
            r#"{{"seq":{n},"prev_sha256":"{prev}","event":"{RESTART_EVENT}","torn_sha256":"{}","torn_bytes":{}}}"#,
            sha256_hex(torn.as_bytes()),
            torn.len()
        ));
        let prev = sha256_hex(lines[lines.len() - 1].as_bytes());
        lines.push(format!(
            r#"{{"seq":{},"prev_sha256":"{prev}","tool":"after"}}"#,
            n + 1
        ));
        lines
    }

    #[test]
    fn a_torn_line_passes_only_last_or_before_its_restart_record() {
        let torn = r#"{"seq":2,"prev_sh"#;
        // Followed by the restart record naming it.
        let report = check(&restarted(2, torn));
        assert_eq!(report.broken, None);
        assert_eq!(report.torn, vec!["log:3".to_string()]);
        assert_eq!(report.records, 4);
        // As the last line of the file.
        let mut last = chain(3);
        last.push(torn.into());
        let report = check(&last);
        assert_eq!((report.broken, report.torn.len()), (None, 1));
        // Inserted mid-file, with the chain around it intact.
        let mut inserted = chain(3);
        inserted.insert(2, "garbage".into());
        let broken = check(&inserted).broken.expect("inserted line found");
        assert!(broken.starts_with("log:3: not a record"), "{broken}");
        // Replaced by another fragment: the restart record no longer names it.
        let mut swapped = restarted(2, torn);
        swapped[2] = r#"{"seq":2,"prev_sX"#.into();
        let broken = check(&swapped).broken.expect("swapped fragment found");
        assert!(broken.starts_with("log:3: not a record"), "{broken}");
        // The torn line removed: the restart record names a missing line.
        let mut removed = restarted(2, torn);
        removed.remove(2);
        let broken = check(&removed).broken.expect("removed fragment found");
        assert!(broken.starts_with("log:3: a restart record"), "{broken}");
        // Two fragments in a row: the first is not where a crash leaves one.
        let mut two = restarted(2, torn);
        two.insert(2, "junk".into());
        let broken = check(&two).broken.expect("second fragment found");
        assert!(broken.starts_with("log:3: not a record"), "{broken}");
    }
}
