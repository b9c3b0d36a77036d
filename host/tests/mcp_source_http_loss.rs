//! An MCP server reached by URL (streamable HTTP) that dies mid-call: the
//! calls in flight on it are answered `module_crashed` promptly (the host
//! notices the loss), not at their timeout; the next call reconnects to
//! the server once it is back. The server is toolhost's own `serve --http`,
//! killed with SIGKILL under a running call.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{target_dir, Env};
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject, ProgressNotificationParam};
use rmcp::service::NotificationContext;
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{json, Value};

/// Counts progress notifications (the readiness signal: the inner tool runs).
#[derive(Clone, Default)]
struct Progress(Arc<Mutex<usize>>);

impl ClientHandler for Progress {
    async fn on_progress(&self, _: ProgressNotificationParam, _: NotificationContext<RoleClient>) {
        if let Ok(mut seen) = self.0.lock() {
            *seen += 1;
        }
    }
}

/// Kills the child on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the inner `toolhost serve --http` on `address` and returns it
/// with its URL (read from its "listening" line).
fn inner_server(env: &Env, plan: &Path, address: &str) -> (Running, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--plan")
        .arg(plan)
        .args(["serve", "--http", address])
        .current_dir(env.path())
        .env("TOOLHOST_TOKEN", "http-loss-test-token")
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

fn code(result: &CallToolResult) -> Value {
    result
        .meta
        .as_ref()
        .and_then(|m| m.0.get("toolhost"))
        .map(|t| t["code"].clone())
        .unwrap_or(Value::Null)
}

fn args(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

#[test]
fn an_http_server_dying_mid_call_answers_module_crashed_and_the_next_call_reconnects() {
    let env = Env::new("");
    let inner = env.path().join("inner.toml");
    std::fs::write(
        &inner,
        format!(
            "[host]\nmodule_path = [\"{}\"]\n\n[[tools]]\nmodule = \"fixture\"\n",
            target_dir().display()
        ),
    )
    .expect("inner plan");
    let (server, url) = inner_server(&env, &inner, "127.0.0.1:0");
    let address = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .expect("host:port")
        .to_string();
    env.set_plan(&format!(
        "[host]\ndefault_timeout_secs = 120\n\n[[tools]]\nprefix = \"in__\"\n[tools.mcp]\n\
         url = \"{url}\"\nheaders = {{ Authorization = \"Bearer http-loss-test-token\" }}\n"
    ));

    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let mut cmd = tokio::process::Command::from(env.command());
        cmd.arg("serve");
        let (transport, _) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the outer toolhost serve");
        let progress = Progress::default();
        let client = progress.clone().serve(transport).await.expect("initialize");

        let calls: Vec<_> = (0..2)
            .map(|_| {
                let client = client.clone();
                tokio::spawn(async move {
                    let started = Instant::now();
                    let result = client
                        .call_tool(
                            CallToolRequestParams::new("in__sleep")
                                .with_arguments(args(json!({"ms": 100_000}))),
                        )
                        .await
                        .expect("tools/call");
                    (result, started.elapsed())
                })
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(30);
        while progress.0.lock().map(|n| *n).unwrap_or(0) < 2 {
            assert!(Instant::now() < deadline, "the inner calls did not start");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let killed_at = Instant::now();
        drop(server); // SIGKILL, mid-call
        for call in calls {
            let (result, _) = tokio::time::timeout(Duration::from_secs(30), call)
                .await
                .expect(
                    "a call in flight on the dead server was not answered within 30s (its timeout is 120s)",
                )
                .expect("task");
            assert_eq!(code(&result), json!("module_crashed"), "{result:?}");
            let meta = &result.meta.as_ref().expect("meta").0["toolhost"];
            assert_eq!(meta["retryable"], json!(true), "{meta}");
        }
        eprintln!(
            "in-flight calls answered {:?} after the kill",
            killed_at.elapsed()
        );

        // The server comes back on the same address; the next call reconnects.
        let (_server, _) = inner_server(&env, &inner, &address);
        let echoed = client
            .call_tool(
                CallToolRequestParams::new("in__echo").with_arguments(args(json!({"message": "back"}))),
            )
            .await
            .expect("tools/call");
        assert_eq!(echoed.is_error, Some(false), "{echoed:?}");
        client.cancel().await.expect("close");
    });
}
