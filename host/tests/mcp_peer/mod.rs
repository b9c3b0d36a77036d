//! Helpers shared by the tests that mount MCP servers: the pinned node
//! peers and an inner `toolhost serve --http`. Driving the host itself as
//! an MCP client is [`crate::common::serve`]'s.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

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

/// Kills the child on drop.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `toolhost --plan PLAN serve --http ADDRESS` with the bearer
/// `token`, and returns it with its URL (read from its listening line).
pub fn http_server(env: &Env, plan: &Path, address: &str, token: &str) -> (Running, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--plan")
        .arg(plan)
        .args(["serve", "--http", address])
        .current_dir(env.path())
        .env("TOOLHOST_TOKEN", token)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the inner toolhost");
    let stderr = child.stderr.take().expect("stderr");
    let server = Running(child);
    let mut lines = BufReader::new(stderr).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("the inner server ended before listening")
            .expect("read stderr");
        if let Some(rest) = line.split("streamable HTTP at ").nth(1) {
            break rest.split_whitespace().next().unwrap_or("").to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (server, url)
}
