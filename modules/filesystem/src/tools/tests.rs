//! In-process tests of the write tools: the guard across calls of one
//! process, and concurrent edits of one file.

use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use toolhost_core::testing::TestContext;
use toolhost_core::ToolResult;

use super::edit_file::EditFile;
use super::read_file::ReadFile;
use super::write_file::WriteFile;
use crate::config::Config;
use crate::state::State;

fn state(dir: &Path) -> State {
    crate::build_state(dir, Config::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn ok(r: &ToolResult) -> String {
    assert!(r.success, "{:?}", r.error);
    r.output.as_str().unwrap_or_default().to_string()
}

#[test]
fn guard_requires_a_read_and_notices_changes() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let st = state(dir.path());
    let (read, write, edit) = (
        ReadFile { state: st.clone() },
        WriteFile { state: st.clone() },
        EditFile { state: st },
    );
    let ctx = TestContext::new();
    let wd = dir.path();
    std::fs::write(wd.join("a.txt"), "one\n").unwrap_or_else(|e| panic!("{e}"));
    let r = ctx.call(&write, json!({"file_path": "a.txt", "content": "two\n"}), wd);
    assert_eq!(r.status.as_str(), "policy_denied");
    assert!(r.error.as_ref().is_some_and(|e| e.message.contains("read_file")));
    let r = ctx.call(
        &edit,
        json!({"file_path": "a.txt", "old_string": "one", "new_string": "1"}),
        wd,
    );
    assert_eq!(r.status.as_str(), "policy_denied");
    ok(&ctx.call(&read, json!({"file_path": "a.txt"}), wd));
    ok(&ctx.call(
        &edit,
        json!({"file_path": "a.txt", "old_string": "one", "new_string": "1"}),
        wd,
    ));
    // Our own write keeps the record fresh: a second edit needs no re-read.
    ok(&ctx.call(
        &edit,
        json!({"file_path": "a.txt", "old_string": "1", "new_string": "uno"}),
        wd,
    ));
    // A change behind our back is noticed.
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(wd.join("a.txt"), "changed elsewhere\n").unwrap_or_else(|e| panic!("{e}"));
    let r = ctx.call(&write, json!({"file_path": "a.txt", "content": "x"}), wd);
    assert!(
        r.error
            .as_ref()
            .is_some_and(|e| e.message.contains("changed on disk")),
        "{:?}",
        r.error
    );
    // New files need no read.
    ok(&ctx.call(&write, json!({"file_path": "new/deep/b.txt", "content": "b"}), wd));
    assert_eq!(
        std::fs::read_to_string(wd.join("new/deep/b.txt")).unwrap_or_default(),
        "b"
    );
}

#[test]
fn concurrent_edits_of_one_file_lose_no_update() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let st = state(dir.path());
    let wd = dir.path().to_path_buf();
    let n = 16;
    let body: String = (0..n).map(|i| format!("slot{i}=old\n")).collect();
    std::fs::write(wd.join("shared.txt"), body).unwrap_or_else(|e| panic!("{e}"));
    ok(&TestContext::new().call(
        &ReadFile { state: st.clone() },
        json!({"file_path": "shared.txt"}),
        &wd,
    ));
    let edit = Arc::new(EditFile { state: st });
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let edit = edit.clone();
            let wd = wd.clone();
            std::thread::spawn(move || {
                let input = json!({"file_path": "shared.txt", "old_string": format!("slot{i}=old"), "new_string": format!("slot{i}=new")});
                TestContext::new().call(&*edit, input, &wd)
            })
        })
        .collect();
    for h in handles {
        let r = h.join().unwrap_or_else(|_| panic!("thread panicked"));
        ok(&r);
    }
    let after = std::fs::read_to_string(wd.join("shared.txt")).unwrap_or_default();
    for i in 0..n {
        assert!(
            after.contains(&format!("slot{i}=new\n")),
            "lost update {i}:\n{after}"
        );
    }
    assert!(!after.contains("old"));
}
