//! Audit records in PostgreSQL: an [`AuditSink`] that stores each host's
//! lines in `toolhost_audit`, keyed by (host id, sequence), so every host of
//! a fleet keeps its own hash chain and a restarted host continues it from
//! [`AuditSink::last`].

use std::sync::Arc;

use crate::pipeline::audit_sink::{AuditSink, AuditSinkError};

use super::super::StateError;
use super::{db_error, wait, Connector};

/// The PostgreSQL sink of one host.
pub struct PgAuditSink {
    db: Arc<Connector>,
    host_id: String,
}

fn sink_error(e: StateError) -> AuditSinkError {
    AuditSinkError::Unavailable(e.to_string())
}

/// Opens the sink for `host_id` at `url` (a `postgres://` URL, as in
/// `[host] state_url`), connecting and migrating now: a host whose audit
/// store is unreachable at start learns it here, as
/// [`AuditSinkError::Unavailable`]. Later outages surface per call the same
/// way, and the sink reconnects by itself.
pub fn open_audit_sink(url: &str, host_id: &str) -> Result<PgAuditSink, AuditSinkError> {
    let db = Arc::new(Connector::new(url).map_err(sink_error)?);
    let probe = db.clone();
    wait(async move { probe.client().await.map(|_| ()) }).map_err(sink_error)?;
    Ok(PgAuditSink {
        db,
        host_id: host_id.to_string(),
    })
}

impl AuditSink for PgAuditSink {
    fn append(&self, line: &str) -> Result<(), AuditSinkError> {
        let (db, host, line) = (self.db.clone(), self.host_id.clone(), line.to_string());
        wait(async move {
            let client = db.client().await?;
            // One statement: the next sequence number of this host and the
            // row. Two processes sharing a host id would race here and one
            // would hit the primary key; that is a configuration error.
            client
                .execute(
                    "INSERT INTO toolhost_audit (host_id, seq, line)
                     SELECT $1, COALESCE(MAX(seq), 0) + 1, $2 FROM toolhost_audit WHERE host_id = $1",
                    &[&host, &line],
                )
                .await
                .map_err(|e| match db_error(e) {
                    StateError::Broken(m) if m.contains("toolhost_audit_pkey") => StateError::Broken(format!(
                        "two processes append audit records as host '{host}' at once; give each host its own [host] host_id ({m})"
                    )),
                    other => other,
                })
                .map(|_| ())
        })
        .map_err(sink_error)
    }

    fn last(&self) -> Result<Option<String>, AuditSinkError> {
        let (db, host) = (self.db.clone(), self.host_id.clone());
        wait(async move {
            let client = db.client().await?;
            let row = client
                .query_opt(
                    "SELECT line FROM toolhost_audit WHERE host_id = $1 ORDER BY seq DESC LIMIT 1",
                    &[&host],
                )
                .await
                .map_err(db_error)?;
            Ok(row.map(|r| r.get::<_, String>(0)))
        })
        .map_err(sink_error)
    }
}
