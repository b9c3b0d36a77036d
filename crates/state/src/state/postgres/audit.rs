//! Audit records in PostgreSQL: an [`AuditSink`] that stores each host's
//! lines in `toolhost_audit`, keyed by (host id, sequence), so every host of
//! a fleet keeps its own hash chain and a restarted host continues it from
//! [`AuditSink::last`].

use std::sync::{Arc, Mutex};

use crate::state::audit_sink::{AuditSink, AuditSinkError};

use super::super::StateError;
use super::{db_error, wait, Connector};

/// The PostgreSQL sink of one host.
pub struct PgAuditSink {
    db: Arc<Connector>,
    host_id: String,
    /// The last line this sink saw stored for its host (`None`: not read
    /// yet). An append only lands if the stored last line is still this
    /// one, so a second process appending under the same host id is caught
    /// instead of silently forking the chain.
    seen: Mutex<Option<Option<String>>>,
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
        seen: Mutex::new(None),
    })
}

/// Appends `line` as the host's next record if the host's last stored line
/// is still `expected`; `Ok(false)` when it is not.
const APPEND: &str = "
INSERT INTO toolhost_audit (host_id, seq, line)
SELECT $1, COALESCE(MAX(seq), 0) + 1, $2 FROM toolhost_audit WHERE host_id = $1
HAVING (SELECT line FROM toolhost_audit WHERE host_id = $1 ORDER BY seq DESC LIMIT 1)
       IS NOT DISTINCT FROM $3::text";

const LAST: &str = "SELECT line FROM toolhost_audit WHERE host_id = $1 ORDER BY seq DESC LIMIT 1";

impl PgAuditSink {
    fn seen(&self) -> std::sync::MutexGuard<'_, Option<Option<String>>> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl AuditSink for PgAuditSink {
    fn append(&self, line: &str) -> Result<(), AuditSinkError> {
        // Read before matching: the guard must not live through `last()`.
        let seen = self.seen().clone();
        let expected = match seen {
            Some(seen) => seen,
            None => self.last()?,
        };
        let (db, host, text) = (self.db.clone(), self.host_id.clone(), line.to_string());
        let stored = wait(async move {
            let client = db.client().await?;
            let n = client
                .execute(APPEND, &[&host, &text, &expected])
                .await
                .map_err(|e| {
                    // The driver names the violated constraint itself; a
                    // second writer under this host id collides on the key.
                    let collided = e
                        .as_db_error()
                        .and_then(|db| db.constraint())
                        .is_some_and(|c| c == "toolhost_audit_pkey");
                    match db_error(e) {
                        StateError::Broken(m) if collided => StateError::Broken(format!(
                            "two processes append audit records as host '{host}' at once; give each host its own [host] host_id ({m})"
                        )),
                        other => other,
                    }
                })?;
            Ok(n == 1)
        })
        .map_err(sink_error)?;
        if !stored {
            // Read again next time, so a restarted sink can go on.
            *self.seen() = None;
            return Err(AuditSinkError::Unavailable(format!(
                "another process appended audit records as host '{}' since this one last did, so this record would fork the chain; give each host its own [host] host_id",
                self.host_id
            )));
        }
        *self.seen() = Some(Some(line.to_string()));
        Ok(())
    }

    fn last(&self) -> Result<Option<String>, AuditSinkError> {
        let (db, host) = (self.db.clone(), self.host_id.clone());
        let last = wait(async move {
            let client = db.client().await?;
            let row = client.query_opt(LAST, &[&host]).await.map_err(db_error)?;
            Ok(row.map(|r| r.get::<_, String>(0)))
        })
        .map_err(sink_error)?;
        *self.seen() = Some(last.clone());
        Ok(last)
    }
}
