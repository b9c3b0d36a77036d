//! The watch over this host's running tasks, one beat a second while any
//! runs: renew their leases (so no other host fails them as lost), cancel
//! those whose owner asked through any host (or that expired), and write
//! each one's latest progress message.

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::Tasks;

/// Time between beats; well inside [`crate::state::tasks::LEASE`].
const BEAT: Duration = Duration::from_secs(1);

/// Fails what this host id left running in an earlier run: those calls
/// died with it.
pub async fn fail_earlier(tasks: &Tasks) {
    let Some(store) = tasks.opened() else { return };
    match store.fail_host(&tasks.host_id).await {
        Ok(0) => {}
        Ok(n) => {
            tracing::warn!(n, host_id = %tasks.host_id, "tasks left running by this host's previous run are failed")
        }
        Err(e) => tracing::warn!("cannot fail the tasks of this host's previous run: {e}"),
    }
}

/// Beats until `tasks` is dropped, on the caller's runtime.
pub fn start(tasks: &Arc<Tasks>) {
    let weak: Weak<Tasks> = Arc::downgrade(tasks);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(BEAT);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(tasks) = weak.upgrade() else { return };
            beat(&tasks).await;
        }
    });
}

async fn beat(tasks: &Tasks) {
    let Some(store) = tasks.opened() else { return };
    let messages: Vec<(String, String)> = tasks
        .running()
        .iter()
        .filter_map(|(id, r)| {
            let message = r.message.lock().unwrap_or_else(|p| p.into_inner()).take()?;
            Some((id.clone(), message))
        })
        .collect();
    if tasks.running().is_empty() {
        return;
    }
    for (id, message) in messages {
        if let Err(e) = store.progress(&id, &message).await {
            tracing::debug!(task_id = %id, "cannot write a task's progress: {e}");
        }
    }
    match store.heartbeat(&tasks.host_id).await {
        Ok(stop) => {
            for id in stop {
                tasks.stop(&id);
            }
        }
        Err(e) => tracing::warn!("cannot renew this host's task leases: {e}"),
    }
}
