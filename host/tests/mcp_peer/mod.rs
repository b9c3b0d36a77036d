//! Helpers shared by the tests that mount MCP servers: the pinned node
//! peers and an inner `toolhost serve --http`. Driving the host itself as
//! an MCP client is [`crate::common::serve`]'s.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::serve::HttpServer;
use crate::common::Env;

/// The path of a node peer script in `tests/node`, whose packages must be
/// installed (the test fails, naming the command, when they are not).
pub fn node_peer(script: &str) -> String {
    let node = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/node");
    assert!(
        node.join("node_modules/@modelcontextprotocol/sdk").is_dir(),
        "run `npm ci --prefix tests/node --no-audit --no-fund` first (the README's test command does)"
    );
    node.join(script).display().to_string()
}

/// Starts `toolhost --plan PLAN serve --http ADDRESS` with the bearer
/// `token`, and returns it with its URL (read from its listening line).
pub fn http_server(env: &Env, plan: &Path, address: &str, token: &str) -> (HttpServer, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    cmd.arg("--plan")
        .arg(plan)
        .args(["serve", "--http", address])
        .current_dir(env.path())
        .env("TOOLHOST_TOKEN", token)
        .stdin(Stdio::null());
    let server = HttpServer::start(cmd);
    let url = server.url.clone();
    (server, url)
}
