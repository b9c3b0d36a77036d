//! A stdio MCP server's descendants that leave its process group (here a
//! `sleep` the server starts with `setsid`) are killed when the server is
//! stopped, when it crashes, and when the host itself is killed: the server
//! runs under toolhost's subreaper. The server is a real one on the
//! official TypeScript SDK (`tests/node/orphaning_server.mjs`).

mod common;
mod mcp_peer;

use std::time::Duration;

use common::serve::{client, text, toolhost_meta};
use common::{process_ends, Env};
use mcp_peer::node_peer;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::RoleClient;
use serde_json::json;

fn plan() -> String {
    format!(
        "[[tools]]\nprefix = \"or__\"\n[tools.mcp]\ncommand = [\"node\", \"{}\"]\n",
        node_peer("orphaning_server.mjs")
    )
}

/// The pid of the server's `setsid sleep`, after checking it left the
/// server's session (so a process-group kill would miss it).
fn orphan_pid(text: &str) -> u32 {
    let pid: u32 = text
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("not a pid: {text:?}"));
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("the orphan runs");
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .expect("stat")
        .1
        .split_whitespace()
        .collect();
    // state ppid pgrp session: a session of its own.
    assert_eq!(
        fields[3],
        pid.to_string(),
        "the sleep leads its own session: {stat}"
    );
    pid
}

async fn call(client: &RunningService<RoleClient, ()>, tool: &'static str) -> CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(tool))
        .await
        .expect("tools/call")
}

fn kill_after(pid: u32) {
    // SAFETY: kill(2) on a process the test owns; the pid is reaped by the
    // test's own child handle later, so it is not reused meanwhile.
    unsafe {
        libc::kill(pid as i32, libc::SIGKILL);
    }
}

#[tokio::test]
async fn a_stopped_servers_setsid_child_is_killed() {
    let env = Env::new(&plan());
    let (client, host) = client(env.command(), ()).await;
    let pid = orphan_pid(&text(&call(&client, "or__orphan").await));
    // The client goes: the host shuts down and stops the server.
    client.cancel().await.expect("close");
    assert!(
        process_ends(host, Duration::from_secs(20)),
        "the host did not exit"
    );
    assert!(
        process_ends(pid, Duration::from_secs(10)),
        "the stopped server's setsid child {pid} outlived it"
    );
}

#[tokio::test]
async fn a_crashed_servers_setsid_child_is_killed_and_the_server_restarts() {
    let env = Env::new(&plan());
    let (client, _) = client(env.command(), ()).await;
    let pid = orphan_pid(&text(&call(&client, "or__orphan").await));
    let died = call(&client, "or__die").await;
    let meta = toolhost_meta(&died);
    assert_eq!(meta["code"], json!("module_crashed"), "{died:?}");
    assert_eq!(
        meta["details"]["exit_code"],
        json!(3),
        "the server's own status: {meta}"
    );
    assert!(
        process_ends(pid, Duration::from_secs(10)),
        "the crashed server's setsid child {pid} outlived it"
    );
    // The next call restarts the server (under a new reaper).
    let again = orphan_pid(&text(&call(&client, "or__orphan").await));
    client.cancel().await.expect("close");
    assert!(
        process_ends(again, Duration::from_secs(10)),
        "{again} outlived the host's shutdown"
    );
}

#[tokio::test]
async fn a_killed_hosts_server_and_its_setsid_child_are_killed() {
    let env = Env::new(&plan());
    let (client, host) = client(env.command(), ()).await;
    let pid = orphan_pid(&text(&call(&client, "or__orphan").await));
    kill_after(host);
    assert!(
        process_ends(pid, Duration::from_secs(10)),
        "the setsid child {pid} outlived the killed host"
    );
    drop(client);
}
