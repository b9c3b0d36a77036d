//! `toolhost serve` on stdio spoken to line by line, without an MCP client
//! library: for tests that must control exactly when the host's output is
//! read (a client that stops reading) or send what a library would not.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

use serde_json::{json, Value};

use super::Env;

/// A running `toolhost serve`, initialized; killed when dropped.
pub struct RawServe {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl RawServe {
    /// Starts `toolhost serve` in `env` and completes the 2025-06-18
    /// handshake as `client`.
    pub fn start(env: &Env, client: &str) -> RawServe {
        let mut child = env
            .command()
            .env("RUST_LOG", "warn")
            .arg("serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start toolhost serve");
        let input = child.stdin.take().expect("stdin");
        let output = BufReader::new(child.stdout.take().expect("stdout"));
        let mut served = RawServe { child, input, output };
        served.send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": client, "version": "0"}}}),
        );
        served.answer(0);
        served.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        served
    }

    /// The host's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes one message.
    pub fn send(&mut self, message: Value) {
        writeln!(self.input, "{message}").expect("write to the host");
        self.input.flush().expect("flush");
    }

    /// The next message the host wrote; fails the test at end of output.
    pub fn next(&mut self) -> Value {
        let mut line = String::new();
        let n = self.output.read_line(&mut line).expect("read");
        assert!(n > 0, "the host closed its output");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not a JSON-RPC line ({e}): {line:?}"))
    }

    /// Reads until the answer to request `id` (skipping notifications).
    pub fn answer(&mut self, id: u64) -> Value {
        loop {
            let message = self.next();
            if message["id"] == json!(id) {
                return message;
            }
        }
    }
}

impl Drop for RawServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
