//! Running one task: create its row, answer the handle, run the call in
//! the background through the pipeline, and record how it ended.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolResponse, CreateTaskResult};
use rmcp::ErrorData;
use serde_json::Value;
use toolhost_core::{Status, ToolResult};

use super::{store_error, wire, Running, Tasks};
use crate::cancel::CancelToken;
use crate::pipeline::Call;
use crate::state::tasks::{Created, NewTask, TaskState};

/// The largest result a task keeps, in bytes of JSON. A result is already
/// bounded by `[host] max_output_bytes`; this bounds what content blocks
/// (images) add, so one task cannot fill the store.
pub const MAX_RESULT_BYTES: usize = 8 * 1024 * 1024;

/// The longest status message kept from a progress report, in bytes.
const MAX_MESSAGE_BYTES: usize = 1024;

/// See [`Tasks::start`].
pub async fn start(tasks: &Arc<Tasks>, mut call: Call, owner: String) -> Result<CallToolResponse, ErrorData> {
    let store = tasks.store()?.clone();
    let task_id = new_id()?;
    let ttl = Duration::from_secs(tasks.settings.ttl_secs);
    let created = store
        .create(&NewTask {
            task_id: task_id.clone(),
            owner: owner.clone(),
            host_id: tasks.host_id.clone(),
            tool: call.name.clone(),
            ttl,
            max_per_owner: tasks.settings.max_per_principal,
        })
        .await
        .map_err(store_error)?;
    let record = match created {
        Created::Created(record) => record,
        Created::Full => {
            return Err(ErrorData::invalid_request(
                format!(
                "principal '{owner}' has {} tasks running, the most [host.tasks] max_per_principal allows: \
                     wait for one to finish, or cancel one with tasks/cancel",
                tasks.settings.max_per_principal
            ),
                Some(serde_json::json!({ "code": "rate_limited", "retryable": true })),
            ))
        }
    };
    let cancel = CancelToken::new();
    let requested = Arc::new(AtomicBool::new(false));
    let message = Arc::new(Mutex::new(None::<String>));
    call.cancel = Some(cancel.clone());
    call.progress = Some(progress_sink(message.clone()));
    tasks.running().insert(
        task_id.clone(),
        Running {
            cancel: cancel.clone(),
            requested: requested.clone(),
            message,
        },
    );
    let runner = tasks.clone();
    let id = task_id.clone();
    tokio::spawn(async move {
        let mut running = Box::pin(runner.pipeline.call(call));
        let result = tokio::select! {
            result = &mut running => result,
            // Past its ttl the task is deleted: its call stops too.
            _ = tokio::time::sleep(ttl) => {
                cancel.cancel();
                running.await
            }
        };
        runner.running().remove(&id);
        finish(&runner, &id, result, requested.load(Ordering::SeqCst)).await;
    });
    Ok(CallToolResponse::Task(CreateTaskResult::new(wire::task(&record))))
}

/// Records how the call ended: `cancelled` when its owner cancelled it and
/// it stopped, else `completed` with its result (a tool error included,
/// as the extension says: `failed` is for protocol errors).
async fn finish(tasks: &Tasks, task_id: &str, result: ToolResult, cancel_requested: bool) {
    let Ok(store) = tasks.store() else { return };
    let (state, message, payload) = if cancel_requested && result.status == Status::Cancelled {
        (
            TaskState::Cancelled,
            Some("cancelled by its owner".to_string()),
            None,
        )
    } else {
        let answer = crate::surface::convert::call_result(result);
        let mut text = serde_json::to_string(&answer).unwrap_or_else(|_| "{}".into());
        if text.len() > MAX_RESULT_BYTES {
            text = too_large(text.len());
        }
        let summary = if answer.is_error == Some(true) {
            "the tool reported an error"
        } else {
            "done"
        };
        (TaskState::Completed, Some(summary.to_string()), Some(text))
    };
    match store
        .finish(task_id, state, message.as_deref(), payload.as_deref())
        .await
    {
        Ok(true) => {}
        Ok(false) => tracing::info!(task_id, "a task ended after it expired or was failed"),
        Err(e) => tracing::warn!(task_id, "cannot record how a task ended: {e}"),
    }
}

/// What a task keeps instead of a result over [`MAX_RESULT_BYTES`].
fn too_large(bytes: usize) -> String {
    serde_json::json!({
        "content": [{
            "type": "text",
            "text": format!(
                "the result ({bytes} bytes) is larger than a task keeps ({MAX_RESULT_BYTES} bytes); \
                 call the tool directly, or ask for less output"
            )
        }],
        "isError": true
    })
    .to_string()
}

/// Progress reports become the task's status message: the report's
/// message, else its numbers. The watch writes the latest one.
fn progress_sink(slot: Arc<Mutex<Option<String>>>) -> crate::context::ProgressSink {
    Arc::new(move |report: Value| {
        let text = match report.get("message").and_then(Value::as_str) {
            Some(message) => message.to_string(),
            None => match (report.get("progress"), report.get("total")) {
                (Some(p), Some(t)) if !t.is_null() => format!("progress {p}/{t}"),
                (Some(p), _) => format!("progress {p}"),
                _ => return,
            },
        };
        let mut text = text;
        if text.len() > MAX_MESSAGE_BYTES {
            let mut cut = MAX_MESSAGE_BYTES;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
        }
        *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(text);
    })
}

/// A fresh task id: 128 random bits, shaped as a UUID.
fn new_id() -> Result<String, ErrorData> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| ErrorData::internal_error(format!("no randomness for a task id: {e}"), None))?;
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    ))
}
