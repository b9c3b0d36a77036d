//! The embedded task table: SQLite at `<state_dir>/tasks.sqlite3`, a file
//! of its own beside the idempotency store (its own schema version, and a
//! task's result never waits behind a claim's transaction). Opened as the
//! idempotency store is (WAL, `synchronous = FULL`, a busy timeout), so
//! every process on the machine shares it.

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use super::embedded::{now_ms, open_versioned, Schema};
use super::tasks::{record, restarted_error, Created, NewTask, TaskRecord, TaskState, LEASE, RESTARTED};
use super::StateError;

const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS tasks (
    task_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    host_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('working', 'completed', 'failed', 'cancelled')),
    status_message TEXT,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    payload TEXT,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    lease_until_ms INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_owner ON tasks (owner, created_ms);
CREATE INDEX IF NOT EXISTS tasks_host ON tasks (host_id, status);
CREATE INDEX IF NOT EXISTS tasks_expiry ON tasks (expires_ms);
";

const COLUMNS: &str =
    "task_id, owner, tool, status, status_message, payload, created_ms, updated_ms, expires_ms";

/// One connection per process, used under a mutex.
pub struct EmbeddedTasks {
    conn: Mutex<Connection>,
}

fn unavailable(e: rusqlite::Error) -> StateError {
    StateError::Unavailable(e.to_string())
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 4)
}

/// A selected row ([`COLUMNS`]) as a record; the outer error is SQLite's,
/// the inner one a row this host cannot read.
fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Result<TaskRecord, StateError>> {
    let state: String = r.get(3)?;
    Ok(record(
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        &state,
        r.get(4)?,
        r.get(5)?,
        (r.get(6)?, r.get(7)?, r.get(8)?),
    ))
}

impl EmbeddedTasks {
    /// Opens or creates `tasks.sqlite3` in `state_dir`.
    pub fn open(state_dir: &Path) -> Result<EmbeddedTasks, StateError> {
        let schema = Schema {
            file: "tasks.sqlite3",
            what: "task store",
            sql: SCHEMA,
            version: SCHEMA_VERSION,
        };
        let conn = open_versioned(state_dir, &schema, |_| Ok(()))?;
        Ok(EmbeddedTasks {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        // rusqlite rolls a transaction back on drop: a poisoned lock is usable.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// See [`super::tasks::TaskStore::create`].
    pub fn create(&self, task: &NewTask) -> Result<Created, StateError> {
        let mut conn = self.conn();
        let txn = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(unavailable)?;
        let now = now_ms();
        txn.execute("DELETE FROM tasks WHERE expires_ms <= ?1", params![now])
            .map_err(unavailable)?;
        let held: i64 = txn
            .query_row(
                "SELECT count(*) FROM tasks WHERE owner = ?1",
                params![task.owner],
                |r| r.get(0),
            )
            .map_err(unavailable)?;
        let over = held - i64::from(task.max_per_owner) + 1;
        if over > 0 {
            txn.execute(
                "DELETE FROM tasks WHERE task_id IN (SELECT task_id FROM tasks
                     WHERE owner = ?1 AND status <> 'working' ORDER BY created_ms LIMIT ?2)",
                params![task.owner, over],
            )
            .map_err(unavailable)?;
            let running: i64 = txn
                .query_row(
                    "SELECT count(*) FROM tasks WHERE owner = ?1",
                    params![task.owner],
                    |r| r.get(0),
                )
                .map_err(unavailable)?;
            if running >= i64::from(task.max_per_owner) {
                return Ok(Created::Full);
            }
        }
        let expires = now.saturating_add(ms(task.ttl));
        txn.execute(
            "INSERT INTO tasks (task_id, owner, host_id, tool, status, created_ms, updated_ms, lease_until_ms, expires_ms)
             VALUES (?1, ?2, ?3, ?4, 'working', ?5, ?5, ?6, ?7)",
            params![task.task_id, task.owner, task.host_id, task.tool, now, now + ms(LEASE), expires],
        )
        .map_err(unavailable)?;
        txn.commit().map_err(unavailable)?;
        Ok(Created::Created(record(
            task.task_id.clone(),
            task.owner.clone(),
            task.tool.clone(),
            "working",
            None,
            None,
            (now, now, expires),
        )?))
    }

    /// See [`super::tasks::TaskStore::get`].
    pub fn get(&self, task_id: &str, owner: &str) -> Result<Option<TaskRecord>, StateError> {
        let conn = self.conn();
        let now = now_ms();
        conn.execute(
            "DELETE FROM tasks WHERE task_id = ?1 AND expires_ms <= ?2",
            params![task_id, now],
        )
        .map_err(unavailable)?;
        fail_lapsed(&conn, Some(task_id), now)?;
        let found = conn
            .query_row(
                &format!("SELECT {COLUMNS} FROM tasks WHERE task_id = ?1 AND owner = ?2"),
                params![task_id, owner],
                row,
            )
            .optional()
            .map_err(unavailable)?;
        found.transpose()
    }

    /// See [`super::tasks::TaskStore::request_cancel`].
    pub fn request_cancel(&self, task_id: &str, owner: &str) -> Result<bool, StateError> {
        let conn = self.conn();
        let now = now_ms();
        conn.execute(
            "UPDATE tasks SET cancel_requested = 1 WHERE task_id = ?1 AND owner = ?2 AND status = 'working'",
            params![task_id, owner],
        )
        .map_err(unavailable)?;
        let exists: i64 = conn
            .query_row(
                "SELECT count(*) FROM tasks WHERE task_id = ?1 AND owner = ?2 AND expires_ms > ?3",
                params![task_id, owner, now],
                |r| r.get(0),
            )
            .map_err(unavailable)?;
        Ok(exists > 0)
    }

    /// See [`super::tasks::TaskStore::progress`].
    pub fn progress(&self, task_id: &str, message: &str) -> Result<(), StateError> {
        self.conn()
            .execute(
                "UPDATE tasks SET status_message = ?2, updated_ms = ?3 WHERE task_id = ?1 AND status = 'working'",
                params![task_id, message, now_ms()],
            )
            .map_err(unavailable)?;
        Ok(())
    }

    /// See [`super::tasks::TaskStore::finish`].
    pub fn finish(
        &self,
        task_id: &str,
        state: TaskState,
        message: Option<&str>,
        payload: Option<&str>,
    ) -> Result<bool, StateError> {
        let n = self
            .conn()
            .execute(
                "UPDATE tasks SET status = ?2, status_message = coalesce(?3, status_message), payload = ?4, updated_ms = ?5
                 WHERE task_id = ?1 AND status = 'working'",
                params![task_id, state.as_str(), message, payload, now_ms()],
            )
            .map_err(unavailable)?;
        Ok(n == 1)
    }

    /// See [`super::tasks::TaskStore::heartbeat`].
    pub fn heartbeat(&self, host_id: &str) -> Result<Vec<String>, StateError> {
        let conn = self.conn();
        let now = now_ms();
        conn.execute(
            "UPDATE tasks SET lease_until_ms = ?2 WHERE host_id = ?1 AND status = 'working'",
            params![host_id, now + ms(LEASE)],
        )
        .map_err(unavailable)?;
        fail_lapsed(&conn, None, now)?;
        let mut stop = conn
            .prepare(
                "SELECT task_id FROM tasks WHERE host_id = ?1 AND status = 'working'
                   AND (cancel_requested = 1 OR expires_ms <= ?2)",
            )
            .map_err(unavailable)?;
        let ids = stop
            .query_map(params![host_id, now], |r| r.get::<_, String>(0))
            .map_err(unavailable)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(unavailable)?;
        conn.execute(
            "DELETE FROM tasks WHERE expires_ms <= ?1 AND NOT (host_id = ?2 AND status = 'working')",
            params![now, host_id],
        )
        .map_err(unavailable)?;
        Ok(ids)
    }

    /// See [`super::tasks::TaskStore::fail_host`].
    pub fn fail_host(&self, host_id: &str) -> Result<u64, StateError> {
        let n = self
            .conn()
            .execute(
                "UPDATE tasks SET status = 'failed', status_message = ?2, payload = ?3, updated_ms = ?4
                 WHERE host_id = ?1 AND status = 'working'",
                params![host_id, RESTARTED, restarted_error(), now_ms()],
            )
            .map_err(unavailable)?;
        Ok(n as u64)
    }
}

/// Fails running tasks whose host's lease ran out (`task_id`'s alone, or all).
fn fail_lapsed(conn: &Connection, task_id: Option<&str>, now: i64) -> Result<(), StateError> {
    conn.execute(
        "UPDATE tasks SET status = 'failed', status_message = ?1, payload = ?2, updated_ms = ?3
         WHERE status = 'working' AND lease_until_ms < ?3 AND (?4 IS NULL OR task_id = ?4)",
        params![RESTARTED, restarted_error(), now, task_id],
    )
    .map_err(unavailable)?;
    Ok(())
}
