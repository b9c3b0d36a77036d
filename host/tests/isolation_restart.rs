//! A restarting isolated module does not hold its callers hostage: while
//! one call restarts the crashed worker (here, into a mount that hangs),
//! other calls to the module wait only as long as their own deadline, and
//! the pipeline's kill of a stuck call does not queue behind the start.

mod common;

use std::time::{Duration, Instant};

use common::serve::toolhost_meta;
use common::{module_file, Env};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::{json, Value};

fn code(result: &CallToolResult) -> Value {
    toolhost_meta(result)["code"].clone()
}

/// Whether `parent` has a child process running `toolhost __worker`.
fn has_worker_child(parent: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // pid (comm) state ppid …: the comm may hold spaces, so split after ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        ppid == Some(parent)
            && std::fs::read(entry.path().join("cmdline"))
                .map(|c| c.split(|b| *b == 0).any(|arg| arg == b"__worker"))
                .unwrap_or(false)
    })
}

#[tokio::test]
async fn callers_of_a_restarting_module_wait_only_until_their_own_deadline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("hang-mount");
    let env = Env::new(&format!(
        "[host]\ndefault_timeout_secs = 1\ncancel_grace_ms = 300\n\n\
         [[tools]]\npath = \"{}\"\nprefix = \"c_\"\nisolation = \"process\"\n\
         [tools.config]\nhang_mount_if = \"{}\"\n",
        module_file("toolhost_fixture_crashy").display(),
        marker.display()
    ));
    let mut cmd = env.command();
    // The hung start lasts until the marker goes (or 60 s).
    cmd.env("TOOLHOST_WORKER_START_TIMEOUT_MS", "60000");
    let (client, host) = common::serve::client(cmd, ()).await;
    let call = |tool: &'static str, input: Value| {
        let Value::Object(args) = input else {
            unreachable!()
        };
        let client = client.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let result = client
                .call_tool(CallToolRequestParams::new(tool).with_arguments(args))
                .await
                .expect("tools/call");
            (result, started.elapsed())
        })
    };

    let (crashed, _) = call("c_abort", json!({})).await.expect("task");
    assert_eq!(code(&crashed), json!("module_crashed"), "{crashed:?}");
    assert!(!has_worker_child(host), "the crashed worker is gone");

    std::fs::write(&marker, "").expect("marker");
    // The first caller restarts the worker, whose mount hangs.
    let starter = call("c_echo", json!({"message": "a"}));
    let deadline = Instant::now() + Duration::from_secs(20);
    while !has_worker_child(host) {
        assert!(Instant::now() < deadline, "no restart began within 20s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // A second caller arrives during the start.
    let waiter = call("c_echo", json!({"message": "b"}));

    // Both are answered at their own 1 s deadline (plus the grace), not
    // when the hung start ends: 15 s leaves room for a busy machine and is
    // far short of the start's 60 s.
    for (what, task) in [("the waiting caller", waiter), ("the starting caller", starter)] {
        let (result, took) = tokio::time::timeout(Duration::from_secs(15), task)
            .await
            .unwrap_or_else(|_| panic!("{what} was not answered within 15s of a 1s deadline"))
            .expect("task");
        assert_eq!(code(&result), json!("timeout"), "{what}: {result:?}");
        assert!(took < Duration::from_secs(15), "{what} took {took:?}");
    }

    // The start finishes once the mount can; the module then answers.
    std::fs::remove_file(&marker).expect("remove marker");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (result, _) = call("c_echo", json!({"message": "after"})).await.expect("task");
        if result.is_error == Some(false) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the module never came back: {result:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    client.cancel().await.expect("close");
}
