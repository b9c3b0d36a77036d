//! The read-before-write check and undo_edit's "changed since" check must
//! notice a file that changed while every field of the old stamp (device,
//! inode, size, mtime) stayed equal (a reviewer's finding on issue #18):
//! a same-size rewrite with its mtime put back by `utimensat` (futimens),
//! and a file deleted and recreated on the same inode number with its mtime
//! set back (`touch -d`). One MCP stdio session (the guard is per session)
//! against the real filesystem cdylib; the test changes the file between
//! calls the way another program would.

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Stdio;
use std::time::SystemTime;

use common::serve::{all_text, toolhost_meta};
use common::Env;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

async fn connect(env: &Env) -> RunningService<RoleClient, ()> {
    common::module_file("toolhost_filesystem");
    let (transport, _) = common::serve::transport(env.command(), Stdio::null());
    ().serve(transport).await.expect("initialize")
}

async fn call(client: &RunningService<RoleClient, ()>, name: &str, input: Value) -> CallToolResult {
    let params = CallToolRequestParams::new(name.to_string()).with_arguments(common::serve::args(input));
    client.call_tool(params).await.expect("tools/call")
}

fn assert_ok(result: &CallToolResult) {
    assert_eq!(result.is_error, Some(false), "{}", toolhost_meta(result));
}

/// Device, inode, size and mtime (ns): every field the old stamp had.
fn old_stamp(path: &Path) -> (u64, u64, u64, i64, i64) {
    let m = std::fs::metadata(path).expect("stat");
    (m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec())
}

fn mtime(path: &Path) -> SystemTime {
    std::fs::metadata(path).and_then(|m| m.modified()).expect("mtime")
}

/// Sets the mtime back (futimens, i.e. utimensat on the open file).
fn set_mtime(path: &Path, to: SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(to))
        .expect("set mtime");
}

fn plan() -> String {
    "[host]\nworking_dir = \"project\"\n\n[[tools]]\nmodule = \"filesystem\"\n".to_string()
}

fn project(env: &Env) -> std::path::PathBuf {
    let dir = env.path().join("project");
    std::fs::create_dir_all(&dir).expect("project folder");
    dir
}

fn assert_changed_since_read(result: &CallToolResult) {
    let info = toolhost_meta(result);
    assert_eq!(result.is_error, Some(true), "the write must be refused: {info}");
    assert_eq!(info["code"], "read_before_write", "{info}");
    let message = all_text(result);
    assert!(
        message.contains("changed on disk since you last read it"),
        "{message}"
    );
}

#[tokio::test]
async fn a_same_size_rewrite_with_mtime_restored_is_refused_as_changed_since_read() {
    let env = Env::new(&plan());
    let file = project(&env).join("a.txt");
    std::fs::write(&file, "aaaa\n").expect("write");
    let client = connect(&env).await;
    assert_ok(&call(&client, "read_file", json!({"file_path": "a.txt"})).await);

    // Another program rewrites it in place, same size, and puts mtime back.
    let before = old_stamp(&file);
    let was = mtime(&file);
    std::fs::write(&file, "bbbb\n").expect("rewrite");
    set_mtime(&file, was);
    assert_eq!(old_stamp(&file), before, "every field of the old stamp is equal");

    let refused = call(
        &client,
        "write_file",
        json!({"file_path": "a.txt", "content": "cccc\n"}),
    )
    .await;
    assert_changed_since_read(&refused);
    assert_eq!(
        std::fs::read_to_string(&file).expect("read"),
        "bbbb\n",
        "nothing written"
    );

    // After reading it again the write goes through.
    assert_ok(&call(&client, "read_file", json!({"file_path": "a.txt"})).await);
    assert_ok(
        &call(
            &client,
            "write_file",
            json!({"file_path": "a.txt", "content": "cccc\n"}),
        )
        .await,
    );

    // undo_edit's check is the same: the session's write, then a same-size
    // rewrite with mtime put back, and the undo is refused.
    let written = old_stamp(&file);
    let was = mtime(&file);
    std::fs::write(&file, "dddd\n").expect("rewrite");
    set_mtime(&file, was);
    assert_eq!(old_stamp(&file), written);
    let undo = call(&client, "undo_edit", json!({"file_path": "a.txt"})).await;
    assert_eq!(
        undo.is_error,
        Some(true),
        "the undo must be refused: {}",
        toolhost_meta(&undo)
    );
    assert_eq!(
        toolhost_meta(&undo)["code"],
        "changed_since_edit",
        "{}",
        toolhost_meta(&undo)
    );
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "dddd\n");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn a_file_deleted_and_recreated_on_its_inode_with_mtime_set_back_is_refused() {
    let env = Env::new(&plan());
    let dir = project(&env);
    let file = dir.join("b.txt");
    std::fs::write(&file, "one\n").expect("write");
    let client = connect(&env).await;
    assert_ok(&call(&client, "read_file", json!({"file_path": "b.txt"})).await);

    let before = old_stamp(&file);
    let was = mtime(&file);
    std::fs::remove_file(&file).expect("delete");
    // Recreate until the filesystem hands out the freed inode number again
    // (ext4 does at once), then put it in place.
    let mut reused = None;
    for i in 0..500 {
        let candidate = dir.join(format!(".new{i}"));
        std::fs::write(&candidate, "two\n").expect("recreate");
        if std::fs::metadata(&candidate).expect("stat").ino() == before.1 {
            reused = Some(candidate);
            break;
        }
    }
    let reused = reused.expect("the filesystem reused the deleted file's inode number within 500 creates");
    std::fs::rename(&reused, &file).expect("into place");
    for i in 0..500 {
        let _ = std::fs::remove_file(dir.join(format!(".new{i}")));
    }
    set_mtime(&file, was);
    assert_eq!(old_stamp(&file), before, "every field of the old stamp is equal");

    let refused = call(
        &client,
        "write_file",
        json!({"file_path": "b.txt", "content": "three\n"}),
    )
    .await;
    assert_changed_since_read(&refused);
    let edit = call(
        &client,
        "edit_file",
        json!({"file_path": "b.txt", "old_string": "two", "new_string": "2"}),
    )
    .await;
    assert_changed_since_read(&edit);
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "two\n");
    client.cancel().await.expect("close");
}
