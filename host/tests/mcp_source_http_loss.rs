//! An MCP server reached by URL (streamable HTTP) that dies mid-call: the
//! calls in flight on it are answered `module_crashed` promptly (the host
//! notices the loss), not at their timeout; the next call reconnects to
//! the server once it is back. The server is toolhost's own `serve --http`,
//! killed with SIGKILL under a running call.

mod common;
mod mcp_peer;

use std::time::{Duration, Instant};

use common::serve::{args, client, toolhost_meta, ProgressTokens};
use common::{target_dir, Env};
use mcp_peer::http_server;
use rmcp::model::CallToolRequestParams;
use serde_json::json;

const TOKEN: &str = "http-loss-test-token";

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
    let (server, url) = http_server(&env, &inner, "127.0.0.1:0", TOKEN);
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
        let progress = ProgressTokens::default();
        let (client, _) = client(env.command(), progress.clone()).await;

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
        assert!(
            progress.wait_for(2, Duration::from_secs(30)).await,
            "the inner calls did not start"
        );
        let killed_at = Instant::now();
        drop(server); // SIGKILL, mid-call
        for call in calls {
            let (result, _) = tokio::time::timeout(Duration::from_secs(30), call)
                .await
                .expect(
                    "a call in flight on the dead server was not answered within 30s (its timeout is 120s)",
                )
                .expect("task");
            let meta = toolhost_meta(&result);
            assert_eq!(meta["code"], json!("module_crashed"), "{result:?}");
            assert_eq!(meta["retryable"], json!(true), "{meta}");
        }
        eprintln!(
            "in-flight calls answered {:?} after the kill",
            killed_at.elapsed()
        );

        // The server comes back on the same address; the next call reconnects.
        let (_server, _) = http_server(&env, &inner, &address, TOKEN);
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
