//! The append-only audit log: one record per call, denial and approval,
//! plus an intent record before every side-effecting call runs. Inputs are
//! recorded as a SHA-256 hash and a size unless the plan opts into raw
//! inputs (`host.audit_inputs`).
//!
//! Records form a hash chain: each carries `seq` (one more than the
//! previous record's) and `prev_sha256`, the SHA-256 of the previous
//! record's line exactly as stored. `toolhost audit verify` walks the chain
//! ([`verify`]). The log computes the link and serializes the
//! record once, under its lock, then hands the line to its sink
//! ([`AuditSink`]): the JSONL file by default ([`FileSink`]), chosen in one
//! place, [`sink_for`].

pub mod file;
pub mod verify;

use std::sync::{Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;
use toolhost_core::RequestContext;

use crate::plan::schema::HostSection;
use crate::state::audit_sink::{AuditSink, AuditSinkError};
use file::FileSink;

/// The `prev_sha256` of the first record of a chain.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The sink the plan's `[host]` section asks for: with `state_url`, this
/// host's chain in PostgreSQL (a fleet's records live beside its shared
/// idempotency keys, whatever `audit_log` says); else the JSONL file at
/// `audit_log`, or none. The one place a sink is chosen.
pub fn sink_for(host: &HostSection) -> Result<Option<Box<dyn AuditSink>>, AuditSinkError> {
    if let Some(url) = &host.state_url {
        let host_id = crate::state::config::host_id(host);
        return Ok(Some(Box::new(crate::state::postgres::open_audit_sink(
            url, &host_id,
        )?)));
    }
    match &host.audit_log {
        Some(path) => Ok(Some(Box::new(FileSink::open(std::path::Path::new(path))?))),
        None => Ok(None),
    }
}

/// The open log.
pub struct AuditLog {
    chain: Mutex<Chain>,
    raw_inputs: bool,
}

/// The sink and where the chain stands.
struct Chain {
    sink: Box<dyn AuditSink>,
    /// Carried by the chain's first record (seq 0).
    genesis: Genesis,
    /// SHA-256 of the last stored line.
    prev: String,
    /// `seq` of the next record.
    next_seq: u64,
}

/// One line of the log.
#[derive(Serialize)]
pub struct AuditRecord<'a> {
    /// Milliseconds since the Unix epoch.
    pub ts_unix_ms: u128,
    /// The call id.
    pub call_id: &'a str,
    /// `intent` for the record written before a side-effecting call runs;
    /// absent on the record of a finished (or refused) call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<&'a str>,
    /// The tool's public name (or the unknown name asked for).
    pub tool: &'a str,
    /// The module, when resolved.
    pub module: Option<&'a str>,
    /// The module's version, when resolved.
    pub version: Option<&'a str>,
    /// The tool's effect, when resolved.
    pub effect: Option<&'a str>,
    /// allow, approved, deny, approval_required, hook_denied, invalid,
    /// unknown, grant_denied, audit_failed.
    pub decision: &'a str,
    /// How an `ask` was approved (flag, approver, operator_page).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<&'a str>,
    /// The principal who approved it: the caller's own (its client
    /// answered) or the operator's who answered on the page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approver: Option<&'a str>,
    /// Who the call ran for.
    pub principal: &'a str,
    /// The grant that let it through (`grants[N]` or its name), when the
    /// plan has grants.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grant: Option<&'a str>,
    /// `[policy] version` when the decision was made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy_version: Option<&'a str>,
    /// The caller's run/thread/tenant/agent/correlation ids.
    #[serde(skip_serializing_if = "RequestContext::is_empty")]
    pub context: &'a RequestContext,
    /// The result's status (`started` on an intent record).
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
    /// Secrets replaced in the output, by kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redactions: Option<&'a Value>,
    /// The raw input, only when the plan opts in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<&'a Value>,
    /// Which time bound ended a timed-out call, its length and after how
    /// long (`{bound, limit_ms, after_ms}`; see `pipeline::deadline`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<&'a Value>,
    /// The rate limit that refused the call (`{limit, retry_after_ms, …}`;
    /// see `pipeline::rate_limit`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<&'a Value>,
}

/// A record with its chain link, as stored.
#[derive(Serialize)]
struct Linked<'a, R: Serialize> {
    seq: u64,
    prev_sha256: &'a str,
    /// On the first record of a chain only.
    #[serde(skip_serializing_if = "Option::is_none")]
    genesis: Option<&'a Genesis>,
    #[serde(flatten)]
    record: &'a R,
}

/// What the first record of a chain (seq 0) carries: which host began the
/// log and when. `audit verify` treats that record as the start: anything
/// before it was put there by someone else.
#[derive(Serialize, Debug, Clone)]
pub struct Genesis {
    /// The host's id (`[host] host_id`, default the machine's name).
    pub host: String,
    /// When this host process started, ms since the Unix epoch.
    pub started_unix_ms: u128,
    /// Its process id.
    pub pid: u32,
    /// The toolhost version that began the chain.
    pub toolhost_version: &'static str,
}

impl Genesis {
    /// The genesis of a chain begun now by `host`.
    pub fn now(host: &str) -> Genesis {
        Genesis {
            host: host.to_string(),
            started_unix_ms: now_ms(),
            pid: std::process::id(),
            toolhost_version: env!("CARGO_PKG_VERSION"),
        }
    }
}

/// The record a host writes right after the torn fragment a killed writer
/// left at the end of the log: it links to the last whole record like any
/// other (so it is tamper-evident) and names the fragment, which is how
/// `audit verify` tells a crash's torn line from an inserted one.
#[derive(Serialize)]
pub struct RestartRecord<'a> {
    /// Milliseconds since the Unix epoch.
    pub ts_unix_ms: u128,
    /// Always [`RESTART_EVENT`].
    pub event: &'a str,
    /// SHA-256 of the torn line's bytes (without its newline).
    pub torn_sha256: &'a str,
    /// The torn line's length in bytes.
    pub torn_bytes: u64,
}

/// `event` of a [`RestartRecord`].
pub const RESTART_EVENT: &str = "restart_after_torn_line";

impl AuditLog {
    /// A log over `sink`, continuing the chain from the sink's last record
    /// (a restarted host links to what the previous one wrote); a new chain
    /// begins with a record naming `host` and this start ([`Genesis`]).
    pub fn open(sink: Box<dyn AuditSink>, raw_inputs: bool, host: &str) -> Result<AuditLog, AuditSinkError> {
        let (prev, next_seq) = match sink.last()? {
            Some(line) => {
                let seq = serde_json::from_str::<Value>(&line)
                    .ok()
                    .and_then(|v| v["seq"].as_u64())
                    .map_or(0, |s| s + 1);
                (sha256_hex(line.as_bytes()), seq)
            }
            None => (GENESIS.to_string(), 0),
        };
        Ok(AuditLog {
            chain: Mutex::new(Chain {
                sink,
                genesis: Genesis::now(host),
                prev,
                next_seq,
            }),
            raw_inputs,
        })
    }

    /// Whether raw inputs go into records.
    pub fn raw_inputs(&self) -> bool {
        self.raw_inputs
    }

    /// Links, serializes and stores one record. `Ok` only once the sink
    /// stored it; on error the chain stays where it was, so the next record
    /// that is stored links to the last one that was.
    ///
    /// When the sink says the log ends in a torn fragment (a writer was
    /// killed mid-line), a [`RestartRecord`] naming it goes first, written
    /// with the newline that closes the fragment.
    pub fn append(&self, record: &AuditRecord<'_>) -> Result<(), AuditSinkError> {
        let mut chain = self.chain.lock().unwrap_or_else(PoisonError::into_inner);
        // Bounded: each round closes one fragment; a log torn again at once
        // (another writer killed meanwhile) is retried once more, then the
        // record is refused.
        for _ in 0..3 {
            let line = chain.link(record)?;
            match chain.sink.append(&line) {
                Ok(()) => {
                    chain.advance(&line);
                    return Ok(());
                }
                Err(AuditSinkError::TornTail(torn)) => chain.restart(&torn)?,
                Err(e) => return Err(e),
            }
        }
        Err(AuditSinkError::Unavailable(
            "the audit log keeps ending in torn lines (writers killed mid-write); the record was not written"
                .into(),
        ))
    }
}

impl Chain {
    /// The record's line, linked to the chain's head.
    fn link<R: Serialize>(&self, record: &R) -> Result<String, AuditSinkError> {
        let linked = Linked {
            seq: self.next_seq,
            prev_sha256: &self.prev,
            genesis: (self.next_seq == 0).then_some(&self.genesis),
            record,
        };
        serde_json::to_string(&linked)
            .map_err(|e| AuditSinkError::Unavailable(format!("cannot serialize an audit record: {e}")))
    }

    /// The line was stored: it is the new head.
    fn advance(&mut self, line: &str) {
        self.prev = sha256_hex(line.as_bytes());
        self.next_seq += 1;
    }

    /// Closes a torn fragment with the restart record naming it.
    fn restart(&mut self, torn: &crate::state::audit_sink::Torn) -> Result<(), AuditSinkError> {
        let line = self.link(&RestartRecord {
            ts_unix_ms: now_ms(),
            event: RESTART_EVENT,
            torn_sha256: &torn.sha256,
            torn_bytes: torn.bytes,
        })?;
        if self.sink.close_torn(torn, &line)? {
            tracing::warn!(
                torn_bytes = torn.bytes,
                "the audit log ended in a torn line (a writer was killed mid-write); a restart record naming it follows it"
            );
            self.advance(&line);
        }
        // Otherwise the log was reopened meanwhile: the caller appends again.
        Ok(())
    }
}

pub use crate::state::canonical::sha256_hex;

/// Hex SHA-256 of a value's JSON text, and that text's length.
pub fn input_digest(input: &Value) -> (String, usize) {
    let text = serde_json::to_vec(input).unwrap_or_default();
    (sha256_hex(&text), text.len())
}

/// Now, in milliseconds since the epoch.
pub fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}
