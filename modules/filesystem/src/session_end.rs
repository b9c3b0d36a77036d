//! When the host says a session ended (an MCP session closed or expired, a
//! CLI process exiting), the files that session read stop counting as read
//! and its undo history goes: its read-before-write records and the content
//! `undo_edit` would restore are dropped, so they neither grow for the life
//! of the server nor serve a later session that reuses the id.

use toolhost_core::{Coordinator, Level};

use crate::state::State;

/// Drops `session`'s read records when the host says the session ended.
pub fn register(coordinator: &Coordinator, state: State) {
    let log = coordinator.clone();
    coordinator.on_session_end(move |session| {
        let dropped = state.reads.forget_session(session);
        state.history.forget_session(session);
        if dropped > 0 {
            log.log(
                Level::Debug,
                format!("filesystem: session ended: forgot {dropped} file(s) it read"),
            );
        }
    });
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::guard::{ReadTracker, Stale};

    #[test]
    fn forgetting_a_session_drops_only_its_reads() {
        let reads = ReadTracker::default();
        let file = Path::new(env!("CARGO_MANIFEST_DIR"));
        let stat = rustix::fs::stat(file).expect("stat");
        reads.record(Some("a"), file, &stat);
        reads.record(Some("b"), file, &stat);
        assert_eq!(reads.forget_session("a"), 1);
        assert!(matches!(reads.check(Some("a"), file, &stat), Err(Stale::NotRead)));
        assert!(reads.check(Some("b"), file, &stat).is_ok());
    }
}
