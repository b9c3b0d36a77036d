//! When the host says a session ended (an MCP session closed or expired, a
//! CLI process exiting), the files that session read stop counting as read
//! and its undo history goes: its read-before-write records and the content
//! `undo_edit` would restore are dropped, so they neither grow for the life
//! of the server nor serve a later session that reuses the id.

use toolhost_core::{Coordinator, Level};

use crate::state::State;

/// Drops `session`'s read records and undo history when the host says the
/// session ended.
pub fn register(coordinator: &Coordinator, state: State) {
    let log = coordinator.clone();
    coordinator.on_session_end(move |session| {
        let dropped = state.reads.forget_session(session);
        let undo = state.history.forget_session(session);
        if dropped > 0 || undo > 0 {
            log.log(
                Level::Debug,
                format!(
                    "filesystem: session {session} ended: forgot {dropped} file(s) it read and {undo} undo entr(ies)"
                ),
            );
        }
    });
}

#[cfg(test)]
mod tests {
    use crate::guard::{ReadTracker, Stale};

    #[test]
    fn forgetting_a_session_drops_only_its_reads() {
        let reads = ReadTracker::default();
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("f");
        std::fs::write(&path, "x").expect("write");
        let file = path.as_path();
        let stat = rustix::fs::stat(file).expect("stat");
        let open = std::fs::File::open(file).expect("open");
        reads.record_read(Some("a"), file, &stat, &open);
        reads.record_read(Some("b"), file, &stat, &open);
        assert_eq!(reads.forget_session("a"), 1);
        let content = || Ok(b"x".to_vec());
        assert!(matches!(
            reads.check(Some("a"), file, &stat, content),
            Err(Stale::NotRead)
        ));
        assert!(reads.check(Some("b"), file, &stat, content).is_ok());
    }
}
