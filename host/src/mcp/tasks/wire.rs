//! Stored tasks as the extension's wire shapes.

use rmcp::model::{DetailedTask, ErrorData, JsonObject, Task, TaskPayload, TaskStatus};

use crate::state::tasks::{TaskRecord, TaskState};

/// How often a client should poll `tasks/get`, in milliseconds: the watch
/// writes progress and notices cancellations about this often.
pub const POLL_INTERVAL_MS: u64 = 1000;

fn timestamp(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The task's base fields.
pub fn task(record: &TaskRecord) -> Task {
    let status = match record.state {
        TaskState::Working => TaskStatus::Working,
        TaskState::Completed => TaskStatus::Completed,
        TaskState::Failed => TaskStatus::Failed,
        TaskState::Cancelled => TaskStatus::Cancelled,
    };
    let mut task = Task::new(
        record.task_id.clone(),
        status,
        timestamp(record.created_ms),
        timestamp(record.updated_ms),
    )
    .with_ttl_ms(u64::try_from(record.ttl_ms).unwrap_or(0))
    .with_poll_interval_ms(POLL_INTERVAL_MS);
    task.status_message = record.status_message.clone();
    task
}

/// The task with its status's payload (`tasks/get`).
pub fn to_detailed(record: &TaskRecord) -> DetailedTask {
    let object = |text: &Option<String>| -> JsonObject {
        text.as_deref()
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_default()
    };
    let payload = match record.state {
        TaskState::Working => TaskPayload::Working,
        TaskState::Completed => TaskPayload::Completed {
            result: object(&record.payload),
        },
        TaskState::Failed => TaskPayload::Failed {
            error: object(&record.payload),
        },
        TaskState::Cancelled => TaskPayload::Cancelled,
    };
    DetailedTask::new(task(record), payload)
}

/// The answer for a task that is not there for this principal: expired
/// (and deleted), another principal's, or never made. One answer for all
/// three, so a task id reveals nothing about other principals' tasks.
pub fn not_found(task_id: &str, ttl_secs: u64) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "no task '{task_id}' for this principal: it expired (tasks are kept {ttl_secs} s from their start), \
             or it never existed; call the tool again"
        ),
        Some(serde_json::json!({ "code": "expired_handle", "taskId": task_id })),
    )
}
