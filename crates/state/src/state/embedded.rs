//! The embedded store: SQLite (bundled, through rusqlite) in WAL mode at
//! `<state_dir>/idempotency.sqlite3`.
//!
//! Why SQLite: its locks are taken per transaction, not per open handle, so
//! any number of processes on the machine (CLI calls, a server, a batch) can
//! hold the file open at once and each claim is one short `BEGIN IMMEDIATE`
//! transaction; WAL lets readers run beside the one writer, and
//! `synchronous = FULL` makes a committed record survive a power cut. The
//! previous engine, redb, holds an exclusive lock for as long as a process
//! has the file open, so a second process could not even read it.

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use super::{parse_result, Claim, Intent, StateError};

/// The schema version this host writes (`PRAGMA user_version`).
const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS idempotency (
    key TEXT PRIMARY KEY,
    tool TEXT NOT NULL,
    input_digest TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'done')),
    owner TEXT NOT NULL,
    lease_until_ms INTEGER NOT NULL,
    expires_at_ms INTEGER NOT NULL,
    result TEXT
);
CREATE INDEX IF NOT EXISTS idempotency_expiry ON idempotency (expires_at_ms);
";

/// One connection per process, used under a mutex; other processes have
/// their own and SQLite's file locks order them.
pub struct Store {
    conn: Mutex<Connection>,
}

fn unavailable(e: rusqlite::Error) -> StateError {
    StateError::Unavailable(e.to_string())
}

pub(super) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 2)
}

impl Store {
    /// Opens or creates the store in `state_dir`, creates its schema and
    /// drops expired records.
    pub fn open(state_dir: &Path) -> Result<Store, StateError> {
        let schema = Schema {
            file: "idempotency.sqlite3",
            what: "idempotency store",
            sql: SCHEMA,
            version: SCHEMA_VERSION,
        };
        let conn = open_versioned(state_dir, &schema, |txn| {
            txn.execute(
                "DELETE FROM idempotency WHERE expires_at_ms <= ?1",
                params![now_ms()],
            )
            .map(drop)
        })?;
        Ok(Store {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave a half transaction
        // behind (rusqlite rolls back on drop), so a poisoned lock is usable.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One claim, in one `BEGIN IMMEDIATE` transaction.
    pub fn claim(&self, intent: &Intent) -> Result<Claim, StateError> {
        let mut conn = self.conn();
        let txn = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(unavailable)?;
        let now = now_ms();
        let row = txn
            .query_row(
                "SELECT tool, input_digest, state, lease_until_ms, expires_at_ms, result FROM idempotency WHERE key = ?1",
                params![intent.key],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, i64>(3)?,
                        r.get::<_, i64>(4)?,
                        r.get::<_, Option<String>>(5)?,
                    ))
                },
            )
            .optional()
            .map_err(unavailable)?;
        let claim = match row {
            Some((_, _, _, _, expires, _)) if expires <= now => None,
            Some((tool, digest, _, _, _, _)) if tool != intent.tool || digest != intent.digest => {
                Some(Claim::Conflict { tool })
            }
            Some((_, _, state, _, _, Some(result))) if state == "done" => {
                Some(Claim::Replay(Box::new(parse_result(&intent.key, &result)?)))
            }
            Some((_, _, _, lease, _, _)) if lease > now => Some(Claim::Pending),
            Some(_) => Some(Claim::Abandoned),
            None => None,
        };
        if let Some(claim) = claim {
            return Ok(claim);
        }
        txn.execute(
            "INSERT OR REPLACE INTO idempotency (key, tool, input_digest, state, owner, lease_until_ms, expires_at_ms, result)
             VALUES (?1, ?2, ?3, 'pending', ?4, ?5, ?6, NULL)",
            params![
                intent.key,
                intent.tool,
                intent.digest,
                intent.owner,
                now.saturating_add(ms(intent.lease)),
                now.saturating_add(ms(intent.lease)).saturating_add(ms(intent.ttl)),
            ],
        )
        .map_err(unavailable)?;
        txn.commit().map_err(unavailable)?;
        Ok(Claim::Owned)
    }

    /// Stores the owner's result; `false` when the row is not its own.
    pub fn complete(&self, key: &str, owner: &str, result: &str, ttl: Duration) -> Result<bool, StateError> {
        let n = self
            .conn()
            .execute(
                "UPDATE idempotency SET state = 'done', result = ?3, expires_at_ms = ?4
                 WHERE key = ?1 AND owner = ?2 AND state = 'pending'",
                params![key, owner, result, now_ms().saturating_add(ms(ttl))],
            )
            .map_err(unavailable)?;
        Ok(n == 1)
    }

    /// Deletes the owner's pending row.
    pub fn release(&self, key: &str, owner: &str) -> Result<(), StateError> {
        self.conn()
            .execute(
                "DELETE FROM idempotency WHERE key = ?1 AND owner = ?2 AND state = 'pending'",
                params![key, owner],
            )
            .map_err(unavailable)?;
        Ok(())
    }
}

/// A SQLite file of the state folder and the schema this host writes to it.
pub(super) struct Schema {
    /// The file's name in the state folder.
    pub file: &'static str,
    /// What it holds, for errors ("idempotency store").
    pub what: &'static str,
    /// The schema, applied whole (`CREATE … IF NOT EXISTS`).
    pub sql: &'static str,
    /// Its version (`PRAGMA user_version`).
    pub version: i64,
}

/// Opens (creating) `schema.file` in `state_dir` in WAL mode and brings it
/// to `schema.version`, running `tidy` in the same transaction; a file of a
/// newer version is refused, not changed.
pub(super) fn open_versioned(
    state_dir: &Path,
    schema: &Schema,
    tidy: impl Fn(&rusqlite::Transaction<'_>) -> rusqlite::Result<()>,
) -> Result<Connection, StateError> {
    std::fs::create_dir_all(state_dir).map_err(|e| {
        StateError::Unavailable(format!(
            "cannot create the state folder {}: {e}",
            state_dir.display()
        ))
    })?;
    let path = state_dir.join(schema.file);
    let context = |e: rusqlite::Error| {
        StateError::Unavailable(format!("cannot open the {} {}: {e}", schema.what, path.display()))
    };
    let mut conn = Connection::open(&path).map_err(context)?;
    // Waits for another process's transaction instead of failing.
    conn.busy_timeout(Duration::from_secs(10)).map_err(context)?;
    // Switching a new file to WAL, and the first transaction while
    // another process does the same, can answer "database is locked"
    // at once, without the busy handler (two CLI calls opening a fresh
    // store together hit it): retried until the same 10 s.
    let opening = Instant::now() + Duration::from_secs(10);
    while_locked(opening, || conn.pragma_update(None, "journal_mode", "WAL")).map_err(context)?;
    conn.pragma_update(None, "synchronous", "FULL").map_err(context)?;
    // The schema in one immediate transaction, retried whole.
    let set_up = |conn: &mut Connection| -> rusqlite::Result<i64> {
        let txn = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let version: i64 = txn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version > schema.version {
            return Ok(version);
        }
        txn.execute_batch(schema.sql)?;
        txn.pragma_update(None, "user_version", schema.version)?;
        tidy(&txn)?;
        txn.commit()?;
        Ok(version)
    };
    let version = while_locked(opening, || set_up(&mut conn)).map_err(context)?;
    if version > schema.version {
        return Err(StateError::Broken(format!(
            "the {} {} has schema version {version}, newer than this toolhost ({}); upgrade toolhost or use another state_dir",
            schema.what,
            path.display(),
            schema.version
        )));
    }
    Ok(conn)
}

/// Runs `attempt` again while SQLite answers busy or locked, until
/// `deadline` (then its last error).
pub(super) fn while_locked<T>(
    deadline: Instant,
    mut attempt: impl FnMut() -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    loop {
        match attempt() {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(
                    e.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ) && Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            other => return other,
        }
    }
}
