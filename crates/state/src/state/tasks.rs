//! MCP tasks (the Tasks extension): a call that answered with a task handle
//! runs on, and its state and result live here so that any host of a fleet
//! can answer `tasks/get` and take `tasks/cancel` for it.
//!
//! One row per task: its owner (the principal that started it; nobody else
//! sees it), the host running it, its status, the result when done, and
//! three times. `expires` is its creation plus its ttl: past it the row is
//! deleted (a running call is cancelled by its host first). `lease_until`
//! is renewed by the running host every second or so ([`LEASE`]): a
//! `working` task whose lease ran out belongs to a host that stopped
//! without finishing it, and whichever host sees that marks it failed
//! ([`RESTARTED`]) instead of leaving it `working` for ever. A host also
//! marks its own unfinished tasks failed when it starts, so a restarted
//! host with a fixed `[host] host_id` says so at once.
//!
//! Cancellation crosses hosts through the row: `tasks/cancel` sets
//! `cancel_requested`, and the running host, polling its rows, cancels
//! the call through the pipeline's own cancel path.

pub use super::postgres::tasks::PgTasks;
pub use super::tasks_embedded::EmbeddedTasks;

use std::sync::Arc;
use std::time::Duration;

use super::StateError;

/// How long a running host's claim on its tasks lasts without renewal.
pub const LEASE: Duration = Duration::from_secs(6);

/// What a task failed by a lost host says (its status message and error).
pub const RESTARTED: &str = "host restarted: the host running this task stopped before it finished";

/// JSON-RPC's internal error, which a failed task carries.
const INTERNAL_ERROR: i64 = -32603;

/// A task's status, as stored and as the protocol names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    /// Running.
    Working,
    /// Finished with a result (which may be a tool error).
    Completed,
    /// Ended by a protocol-level failure (its host lost).
    Failed,
    /// Cancelled by its owner.
    Cancelled,
}

impl TaskState {
    /// The stored (and wire) name.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Working => "working",
            TaskState::Completed => "completed",
            TaskState::Failed => "failed",
            TaskState::Cancelled => "cancelled",
        }
    }

    fn parse(text: &str) -> Result<TaskState, StateError> {
        Ok(match text {
            "working" => TaskState::Working,
            "completed" => TaskState::Completed,
            "failed" => TaskState::Failed,
            "cancelled" => TaskState::Cancelled,
            other => return Err(StateError::Broken(format!("a task with status '{other}'"))),
        })
    }
}

/// One task as stored.
#[derive(Debug, Clone)]
pub struct TaskRecord {
    /// Its id (a UUID the host made).
    pub task_id: String,
    /// The principal that started it.
    pub owner: String,
    /// The tool it calls.
    pub tool: String,
    /// Where it is.
    pub state: TaskState,
    /// The last progress message, or why it ended.
    pub status_message: Option<String>,
    /// Completed: the `CallToolResult` JSON; failed: the JSON-RPC error.
    pub payload: Option<String>,
    /// Milliseconds since the epoch.
    pub created_ms: i64,
    /// Milliseconds since the epoch.
    pub updated_ms: i64,
    /// How long it is kept from its creation.
    pub ttl_ms: i64,
}

/// A task to create.
#[derive(Debug, Clone)]
pub struct NewTask {
    /// Its id.
    pub task_id: String,
    /// The principal starting it.
    pub owner: String,
    /// The host that runs it.
    pub host_id: String,
    /// The tool it calls.
    pub tool: String,
    /// How long it is kept.
    pub ttl: Duration,
    /// Tasks the owner may hold (its oldest finished ones make room).
    pub max_per_owner: u32,
}

/// What creating a task did.
#[derive(Debug)]
pub enum Created {
    /// The task exists now (a `tasks/get` for it resolves).
    Created(TaskRecord),
    /// The owner holds its limit of running tasks.
    Full,
}

/// The error a task failed by a lost host carries.
pub fn restarted_error() -> String {
    serde_json::json!({ "code": INTERNAL_ERROR, "message": RESTARTED }).to_string()
}

/// The configured backend's task table.
pub enum TaskStore {
    /// `tasks.sqlite3` under the state folder.
    Embedded(EmbeddedTasks),
    /// `toolhost_tasks` at `[host] state_url`.
    Postgres(PgTasks),
}

impl TaskStore {
    /// The store the plan asks for (as [`super::Store::open`]).
    pub fn open(plan: &crate::plan::Plan) -> Result<Arc<TaskStore>, StateError> {
        Ok(Arc::new(match &plan.host.state_url {
            None => TaskStore::Embedded(EmbeddedTasks::open(&plan.state_dir())?),
            Some(url) => TaskStore::Postgres(PgTasks::open(url)?),
        }))
    }

    /// Creates a task, making room among its owner's finished ones.
    pub async fn create(&self, task: &NewTask) -> Result<Created, StateError> {
        match self {
            TaskStore::Embedded(s) => s.create(task),
            TaskStore::Postgres(s) => s.create(task).await,
        }
    }

    /// The task `task_id` if `owner` owns it and it has not expired. A
    /// `working` task whose host's lease ran out is failed first.
    pub async fn get(&self, task_id: &str, owner: &str) -> Result<Option<TaskRecord>, StateError> {
        match self {
            TaskStore::Embedded(s) => s.get(task_id, owner),
            TaskStore::Postgres(s) => s.get(task_id, owner).await,
        }
    }

    /// Asks the running host to cancel the task; `false` when `owner` has
    /// no such task.
    pub async fn request_cancel(&self, task_id: &str, owner: &str) -> Result<bool, StateError> {
        match self {
            TaskStore::Embedded(s) => s.request_cancel(task_id, owner),
            TaskStore::Postgres(s) => s.request_cancel(task_id, owner).await,
        }
    }

    /// Sets a running task's status message (its last progress report).
    pub async fn progress(&self, task_id: &str, message: &str) -> Result<(), StateError> {
        match self {
            TaskStore::Embedded(s) => s.progress(task_id, message),
            TaskStore::Postgres(s) => s.progress(task_id, message).await,
        }
    }

    /// Ends a running task; `false` when it was no longer running (failed
    /// by another host, or expired).
    pub async fn finish(
        &self,
        task_id: &str,
        state: TaskState,
        message: Option<&str>,
        payload: Option<&str>,
    ) -> Result<bool, StateError> {
        match self {
            TaskStore::Embedded(s) => s.finish(task_id, state, message, payload),
            TaskStore::Postgres(s) => s.finish(task_id, state, message, payload).await,
        }
    }

    /// One beat of `host_id`'s watch: renews its running tasks' leases,
    /// fails other hosts' tasks whose lease ran out, deletes expired
    /// tasks, and answers which of its own running tasks must stop
    /// (cancel requested, or expired).
    pub async fn heartbeat(&self, host_id: &str) -> Result<Vec<String>, StateError> {
        match self {
            TaskStore::Embedded(s) => s.heartbeat(host_id),
            TaskStore::Postgres(s) => s.heartbeat(host_id).await,
        }
    }

    /// Fails every task `host_id` left running (called as it starts: a
    /// task of its former life cannot finish any more).
    pub async fn fail_host(&self, host_id: &str) -> Result<u64, StateError> {
        match self {
            TaskStore::Embedded(s) => s.fail_host(host_id),
            TaskStore::Postgres(s) => s.fail_host(host_id).await,
        }
    }
}

/// A row's columns in the order both backends select them.
pub(super) fn record(
    task_id: String,
    owner: String,
    tool: String,
    state: &str,
    status_message: Option<String>,
    payload: Option<String>,
    times: (i64, i64, i64),
) -> Result<TaskRecord, StateError> {
    let (created_ms, updated_ms, expires_ms) = times;
    Ok(TaskRecord {
        task_id,
        owner,
        tool,
        state: TaskState::parse(state)?,
        status_message,
        payload,
        created_ms,
        updated_ms,
        ttl_ms: expires_ms - created_ms,
    })
}
