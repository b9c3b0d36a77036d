//! When the host says a session ended (an MCP session closed or expired, a
//! CLI process exiting), that session's background jobs end with it: their
//! process trees are stopped (SIGTERM, then SIGKILL) and the jobs forgotten.
//! Output is kept only in memory (no command writes a spill file), so there
//! is nothing else of the session's to remove.

use std::sync::Arc;

use toolhost_core::{Coordinator, Level};

use crate::state::Module;

/// Ends `session`'s jobs when the host says the session ended.
pub fn register(coordinator: &Coordinator, module: Arc<Module>) {
    let log = coordinator.clone();
    coordinator.on_session_end(move |session| {
        let jobs = module.jobs.of_session(session);
        if jobs.is_empty() {
            return;
        }
        log.log(
            Level::Info,
            format!("bash: session ended: ending its {} background job(s)", jobs.len()),
        );
        for job in &jobs {
            job.kill();
            module.jobs.remove(&job.id);
        }
    });
}
