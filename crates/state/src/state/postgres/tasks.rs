//! The fleet's task table, `toolhost_tasks`: the same operations as the
//! embedded one (see [`crate::state::tasks`]), each one statement on the
//! database's clock so the hosts' clocks do not matter.

use std::sync::Arc;

use tokio_postgres::Row;

use super::super::tasks::{
    record, restarted_error, Created, NewTask, TaskRecord, TaskState, LEASE, RESTARTED,
};
use super::super::StateError;
use super::{db_error, detach, on_runtime, Connector};

/// The database's clock in milliseconds since the epoch.
macro_rules! now_ms {
    () => {
        "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
    };
}

const COLUMNS: &str =
    "task_id, owner, tool, status, status_message, payload, created_ms, updated_ms, expires_ms";

/// Deletes the owner's expired tasks, makes room among its finished ones
/// and inserts the new one, unless its running tasks fill its limit. One statement: the
/// sub-statements share a snapshot, so the running count is the one before
/// the deletion (which removes finished tasks only). Two hosts creating
/// for one owner at the same instant may each admit one past the limit.
const CREATE: &str = concat!(
    "WITH held AS (SELECT count(*) AS n FROM toolhost_tasks WHERE owner = $2 AND expires_ms > ", now_ms!(), "),
     running AS (SELECT count(*) AS n FROM toolhost_tasks WHERE owner = $2 AND status = 'working' AND expires_ms > ", now_ms!(), "),
     gone AS (DELETE FROM toolhost_tasks WHERE owner = $2 AND (expires_ms <= ", now_ms!(), " OR task_id IN (
         SELECT task_id FROM toolhost_tasks WHERE owner = $2 AND status <> 'working' AND expires_ms > ", now_ms!(), "
         ORDER BY created_ms LIMIT GREATEST(0, (SELECT n FROM held) - $6 + 1))) RETURNING 1)
     INSERT INTO toolhost_tasks (task_id, owner, host_id, tool, status, created_ms, updated_ms, lease_until_ms, expires_ms)
     SELECT $1, $2, $3, $4, 'working', ", now_ms!(), ", ", now_ms!(), ", ", now_ms!(), " + $7, ", now_ms!(), " + $5
     WHERE (SELECT n FROM running) < $6 AND (SELECT count(*) FROM gone) >= 0
     RETURNING created_ms, updated_ms, expires_ms"
);

const FAIL_LAPSED: &str = concat!(
    "UPDATE toolhost_tasks SET status = 'failed', status_message = $1, payload = $2, updated_ms = ",
    now_ms!(),
    " WHERE status = 'working' AND lease_until_ms < ",
    now_ms!(),
    " AND ($3::text IS NULL OR task_id = $3)"
);

/// The fleet's task store.
pub struct PgTasks {
    db: Arc<Connector>,
}

fn from_row(r: &Row) -> Result<TaskRecord, StateError> {
    record(
        r.get(0),
        r.get(1),
        r.get(2),
        r.get::<_, String>(3).as_str(),
        r.get(4),
        r.get(5),
        (r.get(6), r.get(7), r.get(8)),
    )
}

fn ms(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 4)
}

impl PgTasks {
    /// The store at `url`; connects (and migrates) in the background now
    /// and again at each use until it has.
    pub fn open(url: &str) -> Result<PgTasks, StateError> {
        let db = Arc::new(Connector::new(url)?);
        let warm = db.clone();
        detach(async move {
            if let Err(e) = warm.client().await {
                tracing::warn!("the state database is not reachable yet: {e}");
            }
        });
        Ok(PgTasks { db })
    }

    /// See [`crate::state::tasks::TaskStore::create`].
    pub async fn create(&self, task: &NewTask) -> Result<Created, StateError> {
        let client = self.db.client().await?;
        let task = task.clone();
        on_runtime(async move {
            let row = client
                .query_opt(
                    CREATE,
                    &[
                        &task.task_id,
                        &task.owner,
                        &task.host_id,
                        &task.tool,
                        &ms(task.ttl),
                        &i64::from(task.max_per_owner),
                        &ms(LEASE),
                    ],
                )
                .await
                .map_err(db_error)?;
            let Some(row) = row else { return Ok(Created::Full) };
            Ok(Created::Created(record(
                task.task_id,
                task.owner,
                task.tool,
                "working",
                None,
                None,
                (row.get(0), row.get(1), row.get(2)),
            )?))
        })
        .await
    }

    /// See [`crate::state::tasks::TaskStore::get`].
    pub async fn get(&self, task_id: &str, owner: &str) -> Result<Option<TaskRecord>, StateError> {
        let client = self.db.client().await?;
        let (task_id, owner) = (task_id.to_string(), owner.to_string());
        on_runtime(async move {
            client
                .execute(
                    concat!(
                        "DELETE FROM toolhost_tasks WHERE task_id = $1 AND expires_ms <= ",
                        now_ms!()
                    ),
                    &[&task_id],
                )
                .await
                .map_err(db_error)?;
            client
                .execute(
                    FAIL_LAPSED,
                    &[&RESTARTED, &restarted_error(), &Some(task_id.as_str())],
                )
                .await
                .map_err(db_error)?;
            let row = client
                .query_opt(
                    &format!("SELECT {COLUMNS} FROM toolhost_tasks WHERE task_id = $1 AND owner = $2"),
                    &[&task_id, &owner],
                )
                .await
                .map_err(db_error)?;
            row.as_ref().map(from_row).transpose()
        })
        .await
    }

    /// See [`crate::state::tasks::TaskStore::request_cancel`].
    pub async fn request_cancel(&self, task_id: &str, owner: &str) -> Result<bool, StateError> {
        let client = self.db.client().await?;
        let (task_id, owner) = (task_id.to_string(), owner.to_string());
        on_runtime(async move {
            client
                .execute(
                    "UPDATE toolhost_tasks SET cancel_requested = true
                     WHERE task_id = $1 AND owner = $2 AND status = 'working'",
                    &[&task_id, &owner],
                )
                .await
                .map_err(db_error)?;
            let found = client
                .query_opt(
                    concat!(
                        "SELECT 1 FROM toolhost_tasks WHERE task_id = $1 AND owner = $2 AND expires_ms > ",
                        now_ms!()
                    ),
                    &[&task_id, &owner],
                )
                .await
                .map_err(db_error)?;
            Ok(found.is_some())
        })
        .await
    }

    /// See [`crate::state::tasks::TaskStore::progress`].
    pub async fn progress(&self, task_id: &str, message: &str) -> Result<(), StateError> {
        let client = self.db.client().await?;
        let (task_id, message) = (task_id.to_string(), message.to_string());
        on_runtime(async move {
            client
                .execute(
                    concat!(
                        "UPDATE toolhost_tasks SET status_message = $2, updated_ms = ",
                        now_ms!(),
                        " WHERE task_id = $1 AND status = 'working'"
                    ),
                    &[&task_id, &message],
                )
                .await
                .map_err(db_error)?;
            Ok(())
        })
        .await
    }

    /// See [`crate::state::tasks::TaskStore::finish`].
    pub async fn finish(
        &self,
        task_id: &str,
        state: TaskState,
        message: Option<&str>,
        payload: Option<&str>,
    ) -> Result<bool, StateError> {
        let client = self.db.client().await?;
        let (task_id, message, payload) = (
            task_id.to_string(),
            message.map(str::to_string),
            payload.map(str::to_string),
        );
        on_runtime(async move {
            let n = client
                .execute(
                    concat!(
                        "UPDATE toolhost_tasks SET status = $2, status_message = coalesce($3, status_message),
                             payload = $4, updated_ms = ",
                        now_ms!(),
                        " WHERE task_id = $1 AND status = 'working'"
                    ),
                    &[&task_id, &state.as_str(), &message, &payload],
                )
                .await
                .map_err(db_error)?;
            Ok(n == 1)
        })
        .await
    }

    /// See [`crate::state::tasks::TaskStore::heartbeat`].
    pub async fn heartbeat(&self, host_id: &str) -> Result<Vec<String>, StateError> {
        let client = self.db.client().await?;
        let host_id = host_id.to_string();
        on_runtime(async move {
            client
                .execute(
                    concat!(
                        "UPDATE toolhost_tasks SET lease_until_ms = ",
                        now_ms!(),
                        " + $2 WHERE host_id = $1 AND status = 'working'"
                    ),
                    &[&host_id, &ms(LEASE)],
                )
                .await
                .map_err(db_error)?;
            client
                .execute(FAIL_LAPSED, &[&RESTARTED, &restarted_error(), &None::<&str>])
                .await
                .map_err(db_error)?;
            let stop = client
                .query(
                    concat!(
                        "SELECT task_id FROM toolhost_tasks WHERE host_id = $1 AND status = 'working'
                           AND (cancel_requested OR expires_ms <= ",
                        now_ms!(),
                        ")"
                    ),
                    &[&host_id],
                )
                .await
                .map_err(db_error)?;
            client
                .execute(
                    concat!(
                        "DELETE FROM toolhost_tasks WHERE expires_ms <= ",
                        now_ms!(),
                        " AND NOT (host_id = $1 AND status = 'working')"
                    ),
                    &[&host_id],
                )
                .await
                .map_err(db_error)?;
            Ok(stop.iter().map(|r| r.get(0)).collect())
        })
        .await
    }

    /// See [`crate::state::tasks::TaskStore::fail_host`].
    pub async fn fail_host(&self, host_id: &str) -> Result<u64, StateError> {
        let client = self.db.client().await?;
        let host_id = host_id.to_string();
        on_runtime(async move {
            client
                .execute(
                    concat!(
                        "UPDATE toolhost_tasks SET status = 'failed', status_message = $2, payload = $3, updated_ms = ",
                        now_ms!(),
                        " WHERE host_id = $1 AND status = 'working'"
                    ),
                    &[&host_id, &RESTARTED, &restarted_error()],
                )
                .await
                .map_err(db_error)
        })
        .await
    }
}
