//! `[tools.mcp]`: real MCP servers mounted as tool sources, every call
//! through the whole pipeline. The reference filesystem server (npm, pinned
//! in tests/node) over stdio, and toolhost's own `serve` mounted into a
//! second toolhost over stdio and over streamable HTTP.

mod common;
mod mcp_peer;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{module_file, target_dir, Env};
use rmcp::model::{CallToolRequestParams, ProgressNotificationParam};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// Records progress notifications.
#[derive(Clone, Default)]
struct Progress(Arc<Mutex<Vec<f64>>>);

impl ClientHandler for Progress {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Ok(mut seen) = self.0.lock() {
            seen.push(params.progress);
        }
    }
}

/// The outer host served over stdio to rmcp's client (so the session to
/// the inner server stays open): progress from the inner tool reaches the
/// client, and the outer deadline reaches the inner tool as
/// `notifications/cancelled` (the inner host records it cancelled while
/// the session still lives).
fn progress_and_cancel_through(env: &Env) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let seen = Progress::default();
        let (client, _) = common::serve::client(env.command(), seen.clone()).await;
        let args = common::serve::args;
        let quick = client
            .call_tool(CallToolRequestParams::new("in__sleep").with_arguments(args(json!({"ms": 500}))))
            .await
            .expect("tools/call");
        assert_eq!(quick.is_error, Some(false), "{quick:?}");
        assert!(
            !seen.0.lock().map(|p| p.is_empty()).unwrap_or(true),
            "no progress passed through"
        );
        let slow = client
            .call_tool(CallToolRequestParams::new("in__sleep").with_arguments(args(json!({"ms": 60_000}))))
            .await
            .expect("tools/call");
        let meta = slow
            .meta
            .as_ref()
            .map(|m| m.0["toolhost"].clone())
            .unwrap_or_default();
        assert_eq!(meta["status"], json!("timeout"), "{slow:?}");
        let audit_file = env.path().join("inner-audit.jsonl");
        let record = tokio::task::spawn_blocking(move || {
            wait_for_audit(&audit_file, |r| {
                r["tool"] == json!("sleep") && r["status"] != json!("success")
            })
        })
        .await
        .expect("audit wait");
        assert_eq!(record["status"], json!("cancelled"), "{record}");
        assert!(
            !client.is_closed(),
            "the session must still be open, so the cancel came from notifications/cancelled"
        );
        client.cancel().await.expect("close");
    });
}

/// The reference filesystem server; the test fails (never skips) without it.
fn filesystem_server() -> PathBuf {
    let bin =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/node/node_modules/.bin/mcp-server-filesystem");
    assert!(
        bin.exists(),
        "{} is missing: run `npm ci --prefix tests/node --no-audit --no-fund` (the README's test command does)",
        bin.display()
    );
    bin
}

fn audit(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Waits (bounded) for an audit record matching `pred` to appear.
fn wait_for_audit(path: &Path, pred: impl Fn(&Value) -> bool) -> Value {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(found) = audit(path).into_iter().find(|r| pred(r)) {
            return found;
        }
        assert!(
            Instant::now() < end,
            "no matching audit record in {}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_reference_filesystem_server_gets_the_whole_pipeline() {
    let server = filesystem_server();
    let env = Env::new("");
    let root = env.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("a.txt"), "hello from the filesystem server\n").unwrap();
    env.set_plan(&format!(
        "[host]\naudit_log = \"audit.jsonl\"\n\n\
         [[tools]]\nprefix = \"fs__\"\n[tools.mcp]\ncommand = [\"{}\", \"{}\"]\n\n\
         [policy.tools.fs__write_file]\ndecision = \"deny\"\n\
         [policy.tools.fs__create_directory]\ndecision = \"ask\"\n\
         [policy.tools.fs__list_allowed_directories]\neffect = \"meta\"\n",
        server.display(),
        root.display()
    ));

    // list: source and effects from the annotations (and the plan's override).
    let out = env.run(&["list", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let listed: Value = serde_json::from_slice(&out.stdout).expect("list --json");
    let tool = |name: &str| {
        listed
            .as_array()
            .and_then(|a| a.iter().find(|t| t["name"] == json!(name)).cloned())
            .unwrap_or_else(|| panic!("{name} not listed: {listed}"))
    };
    assert_eq!(tool("fs__read_text_file")["source"], json!("mcp"));
    assert_eq!(tool("fs__read_text_file")["effect"], json!("read_only"));
    assert_eq!(tool("fs__write_file")["effect"], json!("irreversible"));
    assert_eq!(tool("fs__create_directory")["effect"], json!("internal_mutation"));
    assert_eq!(tool("fs__list_allowed_directories")["effect"], json!("meta"));

    // A read: the server's structured content comes back as the output.
    let file = root.join("a.txt").display().to_string();
    let read = env.call("fs__read_text_file", json!({"path": file}));
    let output = read.assert_success();
    assert!(
        output.to_string().contains("hello from the filesystem server"),
        "{output}"
    );

    // Validation happens before the server sees anything.
    let invalid = env.call("fs__read_text_file", json!({"nope": 1}));
    assert_eq!(invalid.status(), "validation_error", "{:?}", invalid.result);

    // Policy: deny and ask, decided by the host.
    let target = root.join("new.txt").display().to_string();
    let denied = env.call("fs__write_file", json!({"path": target, "content": "x"}));
    assert_eq!(
        denied.result["error"]["code"],
        json!("denied"),
        "{:?}",
        denied.result
    );
    assert!(
        !root.join("new.txt").exists(),
        "a denied write reached the server"
    );
    let asked = env.call(
        "fs__create_directory",
        json!({"path": root.join("d").display().to_string()}),
    );
    assert_eq!(
        asked.result["error"]["code"],
        json!("approval_required"),
        "{:?}",
        asked.result
    );
    assert!(!root.join("d").exists());

    // A server-side error is a failed result, not a crash.
    let missing = env.call(
        "fs__read_text_file",
        json!({"path": root.join("missing.txt").display().to_string()}),
    );
    assert_eq!(missing.status(), "error");
    assert_eq!(
        missing.result["error"]["code"],
        json!("tool_error"),
        "{:?}",
        missing.result
    );

    // Audit: every call recorded, with the foreign tool's name and effect.
    let records = audit(&env.path().join("audit.jsonl"));
    let read_record = records
        .iter()
        .find(|r| r["tool"] == json!("fs__read_text_file") && r["status"] == json!("success"))
        .unwrap_or_else(|| panic!("no audit record of the read: {records:?}"));
    assert_eq!(read_record["effect"], json!("read_only"));
    assert!(records
        .iter()
        .any(|r| r["tool"] == json!("fs__write_file") && r["decision"] == json!("deny")));

    // check names the source.
    let check = env.run(&["check"]);
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(text.contains("source: mcp"), "{text}");
}

/// The inner toolhost's plan: the fixture module, and the crashy fixture
/// in-process (so `abort` ends the whole inner server).
fn inner_plan(env: &Env) -> PathBuf {
    let path = env.path().join("inner.toml");
    std::fs::write(
        &path,
        format!(
            "[host]\nmodule_path = [\"{}\"]\naudit_log = \"inner-audit.jsonl\"\n\n\
             [[tools]]\nmodule = \"fixture\"\n\n\
             [[tools]]\npath = \"{}\"\nprefix = \"c_\"\nisolation = \"in-process\"\n",
            target_dir().display(),
            module_file("toolhost_fixture_crashy").display()
        ),
    )
    .unwrap();
    path
}

fn outer_plan(source: &str) -> String {
    format!(
        "[host]\ncancel_grace_ms = 1000\n\n[[tools]]\nprefix = \"in__\"\n[tools.mcp]\n{source}\n\n\
         [policy.tools.in__write_key]\ndecision = \"deny\"\n\
         [policy.tools.in__sleep]\ntimeout_secs = 1\n"
    )
}

#[test]
fn toolhost_mounted_into_toolhost_over_stdio() {
    let env = Env::new("");
    let inner = inner_plan(&env);
    env.set_plan(&outer_plan(&format!(
        "command = [\"{}\", \"--plan\", \"{}\", \"serve\"]",
        env!("CARGO_BIN_EXE_toolhost"),
        inner.display()
    )));

    let echoed = env.call("in__echo", json!({"message": "through two hosts"}));
    assert_eq!(echoed.assert_success()["message"], json!("through two hosts"));
    let denied = env.call("in__write_key", json!({"key": "k"}));
    assert_eq!(
        denied.result["error"]["code"],
        json!("denied"),
        "{:?}",
        denied.result
    );

    progress_and_cancel_through(&env);

    // The inner server dying mid-call is a module crash, named.
    let crashed = env.call("in__c_abort", json!({}));
    assert_eq!(
        crashed.result["error"]["code"],
        json!("module_crashed"),
        "{:?}",
        crashed.result
    );
    assert_eq!(crashed.result["error"]["details"]["signal"], json!("SIGABRT"));
    assert_eq!(crashed.result["error"]["retryable"], json!(true));
}

#[test]
fn toolhost_mounted_into_toolhost_over_streamable_http() {
    let env = Env::new("");
    let inner = inner_plan(&env);
    let (server, url) = mcp_peer::http_server(&env, &inner, "127.0.0.1:0", "http-source-test-token");

    env.set_plan(&outer_plan(&format!(
        "url = \"{url}\"\nheaders = {{ Authorization = \"Bearer http-source-test-token\" }}"
    )));
    let echoed = env.call("in__echo", json!({"message": "over http"}));
    assert_eq!(echoed.assert_success()["message"], json!("over http"));
    let denied = env.call("in__write_key", json!({"key": "k"}));
    assert_eq!(denied.result["error"]["code"], json!("denied"));
    progress_and_cancel_through(&env);
    drop(server);
}

#[test]
fn mcp_entries_are_checked() {
    let env = Env::new("[[tools]]\nmodule = \"fixture\"\n[tools.mcp]\ncommand = [\"x\"]\n");
    let out = env.run(&["list"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("exactly one of `module`, `path` or `[tools.mcp]`"),
        "{stderr}"
    );

    env.set_plan("[[tools]]\n[tools.mcp]\ncommand = [\"x\"]\nurl = \"http://127.0.0.1:1/mcp\"\n");
    let stderr = String::from_utf8_lossy(&env.run(&["list"]).stderr).to_string();
    assert!(stderr.contains("not both"), "{stderr}");

    env.set_plan("[[tools]]\n[tools.mcp]\ncommand = [\"/nonexistent/mcp-server\"]\n");
    let out = env.run(&["list"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot start MCP server '/nonexistent/mcp-server'"),
        "{stderr}"
    );

    // A program that is no MCP server: the handshake fails, naming how it ended.
    env.set_plan("[[tools]]\n[tools.mcp]\ncommand = [\"sh\", \"-c\", \"echo not-json-rpc; exit 3\"]\n");
    let out = env.run(&["list"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("MCP server 'sh' (exited with status 3)"),
        "{stderr}"
    );
}

/// A stdio server gets a cleared environment: the host's secrets stay
/// behind, PATH and the locale pass, and the plan's `env` is added.
#[test]
fn a_stdio_server_gets_only_the_passed_environment_and_the_plans_env() {
    let env = Env::new("");
    let inner = inner_plan(&env);
    let seen = env.path().join("server-env.txt");
    env.set_plan(&outer_plan(&format!(
        "command = [\"/bin/sh\", \"-c\", \"env > \\\"$0\\\"; exec \\\"$1\\\" --plan \\\"$2\\\" serve\", \"{}\", \"{}\", \"{}\"]\n\
         env = {{ PLAN_VAR = \"from-plan\" }}",
        seen.display(),
        env!("CARGO_BIN_EXE_toolhost"),
        inner.display()
    )));
    let out = env
        .command()
        .args(["call", "in__echo", r#"{"message": "env"}"#])
        .env("TOOLHOST_TOKEN", "secret-token-value")
        .env("MCP_TEST_SECRET", "s3cret-value")
        .env("LC_ALL", "C")
        .output()
        .expect("run toolhost");
    let called = common::Called::from_output(out);
    assert_eq!(called.assert_success()["message"], json!("env"));
    let vars = std::fs::read_to_string(&seen).expect("the server wrote its environment");
    assert!(!vars.contains("secret-token-value"), "{vars}");
    assert!(!vars.contains("s3cret-value"), "{vars}");
    assert!(!vars.contains("TOOLHOST_MODULE_PATH="), "{vars}");
    for wanted in ["PLAN_VAR=from-plan\n", "LC_ALL=C\n", "PATH="] {
        assert!(vars.contains(wanted), "{wanted:?} missing: {vars}");
    }
}

/// Calls in flight when a server's connection is lost cost one crash, not
/// one each: here the stdio server (a shell running an inner toolhost)
/// keeps living after its pipe closes, so every lost call reports the loss
/// itself. Six such calls counted one by one would disable the source
/// (`module_failed`); counted once, the next call reconnects.
#[test]
fn one_lost_connection_counts_one_crash_however_many_calls_were_in_flight() {
    let env = Env::new("");
    let inner = inner_plan(&env);
    env.set_plan(&format!(
        "[host]\ndefault_timeout_secs = 60\n\n[[tools]]\nprefix = \"in__\"\n[tools.mcp]\n\
         command = [\"/bin/sh\", \"-c\", \"\\\"$0\\\" --plan \\\"$1\\\" serve; exec >&-; sleep 5\", \"{}\", \"{}\"]\n",
        env!("CARGO_BIN_EXE_toolhost"),
        inner.display()
    ));

    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let started = common::serve::ProgressTokens::default();
        let (client, _) = common::serve::client(env.command(), started.clone()).await;
        let args = common::serve::args;
        let calls: Vec<_> = (0..5)
            .map(|_| {
                let client = client.clone();
                tokio::spawn(async move {
                    client
                        .call_tool(
                            CallToolRequestParams::new("in__sleep")
                                .with_arguments(args(json!({"ms": 60_000}))),
                        )
                        .await
                        .expect("tools/call")
                })
            })
            .collect();
        assert!(
            started.wait_for(5, Duration::from_secs(30)).await,
            "the five calls did not all start"
        );
        // Ends the inner toolhost (in-process abort) under all six calls.
        let aborted = client
            .call_tool(CallToolRequestParams::new("in__c_abort").with_arguments(args(json!({}))))
            .await
            .expect("tools/call");
        let meta = aborted
            .meta
            .as_ref()
            .map(|m| m.0["toolhost"].clone())
            .unwrap_or_default();
        assert_eq!(meta["code"], json!("module_crashed"), "{aborted:?}");
        for call in calls {
            let result = call.await.expect("call task");
            let meta = result
                .meta
                .as_ref()
                .map(|m| m.0["toolhost"].clone())
                .unwrap_or_default();
            assert_eq!(meta["code"], json!("module_crashed"), "{result:?}");
        }
        let next = client
            .call_tool(CallToolRequestParams::new("in__echo").with_arguments(args(json!({"message": "x"}))))
            .await
            .expect("tools/call");
        assert_eq!(next.is_error, Some(false), "{next:?}");
        client.cancel().await.expect("close");
    });
}

/// Threads of process `pid`, from /proc.
fn threads_of(pid: u32) -> usize {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .expect("status")
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("Threads")
}

/// A server flooding `notifications/tools/list_changed` (2000, with a slow
/// tools/list) gets one refresher thread, not one thread per notification.
#[test]
fn a_list_changed_flood_costs_one_refresher_not_a_thread_each() {
    let env = Env::new(&format!(
        "[[tools]]\nprefix = \"fl__\"\n[tools.mcp]\ncommand = [\"node\", \"{}\"]\n",
        mcp_peer::node_peer("list_changed_flood.mjs")
    ));
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let (client, host_pid) = common::serve::client(env.command(), ()).await;
        let before = threads_of(host_pid);
        let flooded = client
            .call_tool(CallToolRequestParams::new("fl__flood"))
            .await
            .expect("tools/call");
        assert_eq!(flooded.is_error, Some(false), "{flooded:?}");
        // The notifications precede the answer on the server's pipe; give
        // the host the time to handle the last of them (bounded sampling,
        // not a wait for a state).
        let mut peak = 0;
        for _ in 0..50 {
            peak = peak.max(threads_of(host_pid));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            peak < before + 20,
            "{peak} threads after the flood (from {before})"
        );
        let lists = client
            .call_tool(CallToolRequestParams::new("fl__lists"))
            .await
            .expect("tools/call");
        assert_eq!(lists.is_error, Some(false), "{lists:?}");
        client.cancel().await.expect("close");
    });
}
