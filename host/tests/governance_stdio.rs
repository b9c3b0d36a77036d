//! Issue #16 over stdio: calls run for `[host] principal`, `_meta` request
//! context reaches the audit record, and `serve` survives SIGHUP and
//! reopens its audit log (logrotate's rename, then `kill -HUP`).

mod common;

use std::process::Stdio;

use common::{fixture_plan, Env};
use rmcp::model::{CallToolRequestParams, JsonObject, RequestMetaObject};
use serde_json::{json, Value};

fn records(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_principal_meta_context_and_sighup_rotation() {
    let plan = fixture_plan("").replacen(
        "[host]\n",
        "[host]\naudit_log = \"audit.jsonl\"\nprincipal = \"ops\"\n",
        1,
    );
    let env = Env::new(&plan);
    let (client, pid) = common::serve::client(env.command(), ()).await;

    let echo = |message: &str, run: &str| {
        let mut params = CallToolRequestParams::new("echo");
        let mut args = JsonObject::new();
        args.insert("message".into(), json!(message));
        params.arguments = Some(args);
        let mut meta = RequestMetaObject::new();
        meta.0.insert("run_id".into(), json!(run));
        meta.0
            .insert("toolhost/correlation_id".into(), json!(format!("corr-{run}")));
        params.meta = Some(meta);
        params
    };
    let first = client.call_tool(echo("one", "s1")).await.expect("call");
    assert_eq!(first.is_error, Some(false));
    let log = env.path().join("audit.jsonl");
    let before = records(&log);
    assert_eq!(before.len(), 1);
    assert_eq!(before[0]["principal"], "ops");
    assert_eq!(
        before[0]["context"],
        json!({"run_id": "s1", "correlation_id": "corr-s1"})
    );

    // logrotate: rename, then SIGHUP. The server must live on and write the
    // next record to a new file at the same path.
    let rotated = env.path().join("audit.jsonl.1");
    std::fs::rename(&log, &rotated).expect("rotate");
    // SAFETY: kill(2) with a pid this test spawned and still holds.
    let sent = unsafe { libc::kill(pid as i32, libc::SIGHUP) };
    assert_eq!(sent, 0, "SIGHUP could not be sent");
    let second = client
        .call_tool(echo("two", "s2"))
        .await
        .expect("the server survived SIGHUP");
    assert_eq!(second.is_error, Some(false));
    let after = records(&log);
    assert_eq!(after.len(), 1, "the record after rotation is in the new file");
    assert_eq!(after[0]["seq"], 1);
    assert_eq!(records(&rotated).len(), 1);
    client.cancel().await.expect("close");

    let out = env.run(&["audit", "verify", "audit.jsonl.1", "audit.jsonl"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// The stdio fast path (a plain `tools/call` after the handshake, answered
/// without rmcp) reads `_meta` too: driven with raw JSON-RPC lines.
#[test]
fn the_direct_stdio_path_reads_the_request_context() {
    use std::io::{BufRead, BufReader, Write};
    let plan = fixture_plan("").replacen("[host]\n", "[host]\naudit_log = \"audit.jsonl\"\n", 1);
    let env = Env::new(&plan);
    let mut child = env
        .command()
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn toolhost serve");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut send = |line: Value| writeln!(stdin, "{line}").expect("write a request");
    let mut answer = |id: u64| loop {
        let line = lines.next().expect("the server answered").expect("read");
        let message: Value = serde_json::from_str(&line).expect("JSON-RPC");
        if message["id"] == id {
            return message;
        }
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "gov-test", "version": "1"}}}),
    );
    answer(1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    // rmcp handles lines in order: once the ping is answered, the handshake
    // is done and the next plain call goes the direct way.
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}));
    answer(2);
    send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"message": "direct"},
        "_meta": {"toolhost/run_id": "d1", "thread_id": "t1"}}}),
    );
    let result = answer(3);
    assert_eq!(result["result"]["isError"], false, "{result}");
    // EOF on stdin ends the server; its records are then all written.
    drop(stdin);
    let _ = child.wait();
    let record = &records(&env.path().join("audit.jsonl"))[0];
    assert_eq!(record["principal"], "local");
    assert_eq!(
        record["context"],
        json!({"run_id": "d1", "thread_id": "t1"}),
        "{record}"
    );
}
