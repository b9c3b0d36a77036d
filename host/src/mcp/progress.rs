//! A call's progress callbacks as MCP `notifications/progress`, sent only
//! when the client asked for them with a `progressToken`.
//!
//! A tool reports progress from its blocking thread; the reports go through
//! a channel to one task per call that sends them in order, so a slow
//! client never blocks the tool. The channel holds at most [`QUEUE`]
//! reports and a report's message at most [`MAX_MESSAGE_BYTES`]: past
//! either, reports are dropped (progress is advisory), so a tool, a worker
//! or a mounted server reporting faster than the client reads cannot grow
//! the host's memory.
//!
//! The spec says a progress value must increase with every notification;
//! a report whose value does not (a module's bug, or a number that went
//! backwards) is dropped here, so no client ever sees one.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use serde_json::Value;
use tokio::sync::{mpsc, Notify};
use tokio::task::JoinHandle;

use crate::context::ProgressSink;

/// How long a finished call waits for its queued reports to go out.
const DRAIN: Duration = Duration::from_millis(200);

/// Reports waiting for a slow client, at most.
const QUEUE: usize = 256;

/// The longest progress message passed on, in bytes.
const MAX_MESSAGE_BYTES: usize = 16 * 1024;

/// Forwards one call's progress reports to the client.
pub struct Reporter {
    tx: mpsc::Sender<Value>,
    done: Arc<Notify>,
    task: JoinHandle<()>,
}

impl Reporter {
    /// Starts forwarding reports for `token` to `peer`.
    pub fn start(peer: Peer<RoleServer>, token: ProgressToken) -> Reporter {
        let (tx, mut rx) = mpsc::channel::<Value>(QUEUE);
        let done = Arc::new(Notify::new());
        let finished = done.clone();
        let task = tokio::spawn(async move {
            let mut rising = Rising::default();
            loop {
                tokio::select! {
                    biased;
                    report = rx.recv() => match report {
                        Some(report) => send(&peer, &token, &report, &mut rising).await,
                        None => break,
                    },
                    _ = finished.notified() => {
                        while let Ok(report) = rx.try_recv() {
                            send(&peer, &token, &report, &mut rising).await;
                        }
                        break;
                    }
                }
            }
        });
        Reporter { tx, done, task }
    }

    /// The sink handed to the pipeline.
    pub fn sink(&self) -> ProgressSink {
        let tx = self.tx.clone();
        Arc::new(move |report: Value| {
            let long = report
                .get("message")
                .and_then(Value::as_str)
                .is_some_and(|m| m.len() > MAX_MESSAGE_BYTES);
            // Full (a slow client) or closed (the call has finished).
            if long || tx.try_send(report).is_err() {
                tracing::debug!("dropped a progress report");
            }
        })
    }

    /// Sends what is still queued, then stops; called when the call ends so
    /// progress goes out before the result.
    pub async fn finish(self) {
        self.done.notify_one();
        let mut task = self.task;
        if tokio::time::timeout(DRAIN, &mut task).await.is_err() {
            task.abort();
        }
    }
}

/// Turns `{"progress": n, "total"?: n, "message"?: s}` into a notification;
/// a report without a number is dropped.
pub fn param(token: &ProgressToken, report: &Value) -> Option<ProgressNotificationParam> {
    let progress = report.get("progress").and_then(Value::as_f64)?;
    let mut param = ProgressNotificationParam::new(token.clone(), progress);
    if let Some(total) = report.get("total").and_then(Value::as_f64) {
        param = param.with_total(total);
    }
    if let Some(message) = report.get("message").and_then(Value::as_str) {
        param = param.with_message(message);
    }
    Some(param)
}

/// The last progress value sent for one call: only a greater one passes.
#[derive(Default)]
pub struct Rising {
    last: Option<f64>,
}

impl Rising {
    /// Whether `progress` may be sent (it is finite and above the last
    /// value sent); remembers it if so.
    pub fn admit(&mut self, progress: f64) -> bool {
        if !progress.is_finite() || self.last.is_some_and(|last| progress <= last) {
            return false;
        }
        self.last = Some(progress);
        true
    }
}

async fn send(peer: &Peer<RoleServer>, token: &ProgressToken, report: &Value, rising: &mut Rising) {
    let Some(param) = param(token, report) else { return };
    if !rising.admit(param.progress) {
        tracing::debug!(
            progress = param.progress,
            "dropping a progress value that does not increase"
        );
        return;
    }
    if let Err(e) = peer.notify_progress(param).await {
        tracing::debug!("cannot send a progress notification: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_increasing_finite_values_pass() {
        let mut rising = Rising::default();
        let admitted: Vec<f64> = [0.0, 1.0, 1.0, 0.5, 2.0, f64::NAN, f64::INFINITY, 3.0]
            .into_iter()
            .filter(|&p| rising.admit(p))
            .collect();
        assert_eq!(admitted, vec![0.0, 1.0, 2.0, 3.0]);
    }
}
