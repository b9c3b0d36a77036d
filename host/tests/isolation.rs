//! `isolation = "process"`: the crash fixtures (segfault, abort, stack
//! overflow, failed allocation, exit(0), a thread panicking after the
//! reply, a module printing to stdout, a tool ignoring cancellation) run in
//! a worker process under `toolhost serve`, driven by rmcp's client. The
//! host survives each; the crashing call gets `module_crashed`; the next
//! call to another module and to the restarted one succeeds. The same
//! fixtures in-process have the outcomes the README documents.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::serve::toolhost_meta;
use common::{module_file, Env};
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::ChildStderr;

/// The crashy fixture isolated (256 MiB cap) beside the fixture module in-process.
fn isolated_plan(extra: &str) -> String {
    format!(
        "[host]\ndefault_timeout_secs = 30\ncancel_grace_ms = 500\n\n\
         [[tools]]\npath = \"{}\"\nprefix = \"c_\"\nmemory_limit_mb = 256\n\n\
         [[tools]]\nmodule = \"fixture\"\n\n{extra}",
        module_file("toolhost_fixture_crashy").display()
    )
}

struct Served {
    client: RunningService<RoleClient, ()>,
    stderr: Lines<BufReader<ChildStderr>>,
}

async fn serve(env: &Env) -> Served {
    let (transport, stderr) = common::serve::transport(env.command(), Stdio::piped());
    let client = ().serve(transport).await.expect("initialize");
    Served {
        client,
        stderr: BufReader::new(stderr.expect("stderr piped")).lines(),
    }
}

impl Served {
    async fn call(&self, tool: &str, input: Value) -> CallToolResult {
        let Value::Object(map) = input else {
            panic!("input must be an object")
        };
        let map: JsonObject = map;
        self.client
            .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(map))
            .await
            .unwrap_or_else(|e| {
                panic!("tools/call {tool} failed at the protocol level (did the host die?): {e}")
            })
    }

    /// Waits for a stderr line containing `needle` (the readiness signal
    /// for a crash that happens after its call was answered).
    async fn stderr_line(&mut self, needle: &str) -> String {
        let wait = async {
            while let Ok(Some(line)) = self.stderr.next_line().await {
                if line.contains(needle) {
                    return line;
                }
            }
            panic!("stderr ended before a line with {needle:?}")
        };
        tokio::time::timeout(Duration::from_secs(20), wait)
            .await
            .unwrap_or_else(|_| panic!("no stderr line with {needle:?} within 20s"))
    }
}

fn assert_ok(result: &CallToolResult, what: &str) {
    assert_eq!(result.is_error, Some(false), "{what}: {result:?}");
}

fn assert_crashed(result: &CallToolResult, signal: Option<&str>) {
    let meta = toolhost_meta(result);
    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert_eq!(meta["code"], json!("module_crashed"), "{meta}");
    assert_eq!(meta["retryable"], json!(true), "{meta}");
    if let Some(signal) = signal {
        assert_eq!(meta["details"]["signal"], json!(signal), "{meta}");
    }
}

/// Each crash kind in a host of its own (five crashes in a minute would
/// disable the module, which has its own test).
#[tokio::test]
async fn every_crash_costs_one_call_and_the_module_restarts() {
    let cases: [(&str, Value, Option<&str>); 5] = [
        ("c_segfault", json!({}), Some("SIGSEGV")),
        ("c_abort", json!({}), Some("SIGABRT")),
        ("c_stack_overflow", json!({}), Some("SIGABRT")),
        // 1 GiB under a 256 MiB address-space cap: the allocation fails.
        ("c_alloc", json!({"mb": 1024}), Some("SIGABRT")),
        ("c_exit", json!({}), None),
    ];
    let env = Env::new(&isolated_plan(""));
    for (tool, input, signal) in cases {
        let served = serve(&env).await;
        let crashed = served.call(tool, input).await;
        assert_crashed(&crashed, signal);
        if tool == "c_exit" {
            assert_eq!(toolhost_meta(&crashed)["details"]["exit_code"], json!(0));
        }
        assert_ok(
            &served.call("echo", json!({"message": "other module"})).await,
            tool,
        );
        let again = served.call("c_echo", json!({"message": "restarted"})).await;
        assert_ok(&again, tool);
        assert_eq!(again.structured_content, Some(json!({"message": "restarted"})));
        served.client.cancel().await.expect("close");
    }
}

#[tokio::test]
async fn a_thread_crashing_after_the_reply_and_stdout_writes_do_not_reach_the_host() {
    let env = Env::new(&isolated_plan(""));
    let mut served = serve(&env).await;
    // Prints a forged JSON-RPC response to its stdout and closes it: the
    // worker's fd 1 is stderr, so the MCP stream never sees it.
    let printed = served.call("c_print_stdout", json!({})).await;
    assert_ok(&printed, "print_stdout");
    assert_eq!(printed.structured_content, Some(json!({"printed": true})));
    assert_ok(
        &served.call("c_echo", json!({"message": "after print"})).await,
        "after print",
    );

    // Answers, then aborts 100 ms later from another thread.
    assert_ok(&served.call("c_late_panic", json!({})).await, "late_panic");
    let line = served.stderr_line("worker killed by SIGABRT").await;
    assert!(
        line.contains("in_flight=0") || line.contains("in_flight\u{1b}"),
        "{line}"
    );
    assert_ok(
        &served.call("echo", json!({"message": "other"})).await,
        "other module",
    );
    assert_ok(&served.call("c_echo", json!({"message": "x"})).await, "restarted");
    served.client.cancel().await.expect("close");
}

#[tokio::test]
async fn five_crashes_in_a_minute_disable_the_module_only() {
    let env = Env::new(&isolated_plan(""));
    let served = serve(&env).await;
    for _ in 0..5 {
        assert_crashed(&served.call("c_abort", json!({})).await, Some("SIGABRT"));
    }
    let failed = served.call("c_echo", json!({"message": "x"})).await;
    assert_eq!(failed.is_error, Some(true));
    assert_eq!(
        toolhost_meta(&failed)["code"],
        json!("module_failed"),
        "{failed:?}"
    );
    assert_ok(
        &served.call("echo", json!({"message": "other"})).await,
        "other module",
    );
    served.client.cancel().await.expect("close");
}

#[tokio::test]
async fn a_tool_ignoring_cancellation_is_ended_by_killing_its_worker() {
    let env = Env::new(&isolated_plan("[policy.tools.c_stubborn]\ntimeout_secs = 1\n"));
    let mut served = serve(&env).await;
    let started = std::time::Instant::now();
    let stuck = served.call("c_stubborn", json!({"ms": 60_000})).await;
    let meta = toolhost_meta(&stuck);
    assert_eq!(meta["status"], json!("timeout"), "{stuck:?}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the call was not ended"
    );
    let text = format!("{:?}", stuck.content);
    assert!(text.contains("worker process was killed"), "{text}");
    served
        .stderr_line("killed by the host because a call ignored cancellation")
        .await;
    assert_ok(&served.call("c_echo", json!({"message": "x"})).await, "restarted");
    served.client.cancel().await.expect("close");
}

/// `toolhost call` on an isolated module that exits: exit code 1 and a
/// result on stdout (in-process, the same tool ends the host with status 0
/// and no output).
#[test]
fn call_reports_an_isolated_exit_and_in_process_outcomes_are_as_documented() {
    let env = Env::new(&isolated_plan(""));
    let called = env.call("c_exit", json!({}));
    assert_eq!(called.code, 1);
    assert_eq!(called.result["error"]["code"], json!("module_crashed"));

    let in_process = Env::new(&format!(
        "[[tools]]\npath = \"{}\"\nisolation = \"in-process\"\n",
        module_file("toolhost_fixture_crashy").display()
    ));
    use std::os::unix::process::ExitStatusExt;
    for (tool, signal) in [
        ("segfault", Some(libc::SIGSEGV)),
        ("abort", Some(libc::SIGABRT)),
        ("stack_overflow", Some(libc::SIGABRT)),
        ("exit", None),
    ] {
        let out = in_process.run(&["call", tool, "{}"]);
        assert_eq!(out.status.signal(), signal, "{tool}: {:?}", out.status);
        assert!(out.stdout.is_empty(), "{tool}: no result is printed");
        if signal.is_none() {
            assert_eq!(
                out.status.code(),
                Some(0),
                "exit(0) in-process ends the host with 0"
            );
        }
    }
    // A print to stdout lands in the command's output, before the result.
    let out = in_process.run(&["call", "print_stdout", "{}"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("{\"jsonrpc\""), "{stdout}");
    // A thread crashing after its reply takes the host down while it still
    // has work: here a batch whose other call is still sleeping.
    let mut batch = in_process
        .command()
        .args(["batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("batch");
    {
        use std::io::Write;
        let mut stdin = batch.stdin.take().expect("stdin");
        writeln!(stdin, "{}", json!({"name": "late_panic", "input": {}})).unwrap();
        writeln!(stdin, "{}", json!({"name": "stubborn", "input": {"ms": 5000}})).unwrap();
    }
    let status = batch.wait().expect("wait");
    assert_eq!(status.signal(), Some(libc::SIGABRT), "{status:?}");
}

#[test]
fn isolation_keys_are_checked() {
    let env = Env::new("[[tools]]\nmodule = \"fixture\"\nmemory_limit_mb = 64\n");
    let out = env.run(&["list"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("memory_limit_mb needs `isolation = \"process\"`"),
        "{stderr}"
    );

    env.set_plan("[[tools]]\nmodule = \"fixture\"\nisolation = \"sandbox\"\n");
    let stderr = String::from_utf8_lossy(&env.run(&["list"]).stderr).to_string();
    assert!(
        stderr.contains("in-process") && stderr.contains("process"),
        "{stderr}"
    );

    // check and list say where each tool runs.
    env.set_plan(&isolated_plan(""));
    let out = env.run(&["list", "--json"]);
    let listed: Value = serde_json::from_slice(&out.stdout).expect("list --json");
    let source_of = |name: &str| {
        listed
            .as_array()
            .and_then(|a| a.iter().find(|t| t["name"] == json!(name)))
            .map(|t| t["source"].clone())
            .unwrap_or(Value::Null)
    };
    assert_eq!(source_of("c_echo"), json!("isolated_module"));
    assert_eq!(source_of("echo"), json!("module"));
    let check = env.run(&["check"]);
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(text.contains("isolated module"), "{text}");
}

/// Pids whose parent is `parent`, from /proc.
fn children_of(parent: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid …: comm may hold spaces, so split after ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(parent) {
            found.push(pid);
        }
    }
    found
}

#[tokio::test]
async fn the_worker_dies_with_the_host() {
    let env = Env::new(&isolated_plan(""));
    let (client, host_pid) = common::serve::client(env.command(), ()).await;
    let args = common::serve::args(json!({"message": "up"}));
    let up = client
        .call_tool(CallToolRequestParams::new("c_echo").with_arguments(args))
        .await
        .expect("call");
    assert_eq!(up.is_error, Some(false));
    let workers = children_of(host_pid);
    assert_eq!(workers.len(), 1, "one worker under the host: {workers:?}");
    let worker = workers[0];
    // Stopped, the worker cannot notice its input closing: only the
    // parent-death signal can end it.
    // SAFETY: signals to processes this test started.
    unsafe {
        libc::kill(worker as i32, libc::SIGSTOP);
    }
    let stopped = std::time::Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(format!("/proc/{worker}/stat"))
        .map(|s| s.contains(") T "))
        .unwrap_or(false)
    {
        assert!(std::time::Instant::now() < stopped, "worker did not stop");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // SAFETY: as above.
    unsafe {
        libc::kill(host_pid as i32, libc::SIGKILL);
    }
    let end = std::time::Instant::now() + Duration::from_secs(20);
    while std::path::Path::new(&format!("/proc/{worker}")).exists()
        && !std::fs::read_to_string(format!("/proc/{worker}/stat"))
            .map(|s| s.contains(") Z "))
            .unwrap_or(true)
    {
        assert!(
            std::time::Instant::now() < end,
            "worker {worker} outlived its host"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(client);
}

/// Resident memory of `pid` in MiB, from /proc.
fn rss_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("host status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|kb| kb.parse::<u64>().ok())
        .expect("VmRSS")
        / 1024
}

/// A module that writes to the protocol descriptor without a newline: the
/// host stops reading at the frame limit, kills the worker and answers
/// `module_crashed` naming the limit, with its memory bounded meanwhile.
#[tokio::test]
async fn a_worker_flooding_the_protocol_is_killed_at_the_frame_limit() {
    let env = Env::new(&isolated_plan(""));
    let (client, host_pid) = common::serve::client(env.command(), ()).await;
    let args = common::serve::args(json!({}));
    let mut peak = 0;
    let flooded = {
        let call = client.call_tool(CallToolRequestParams::new("c_flood_protocol").with_arguments(args));
        tokio::pin!(call);
        loop {
            tokio::select! {
                result = &mut call => break result.expect("tools/call answered"),
                _ = tokio::time::sleep(Duration::from_millis(20)) => {
                    peak = peak.max(rss_mib(host_pid));
                    assert!(peak < 100, "the host's RSS reached {peak} MiB");
                }
            }
        }
    };
    assert_crashed(&flooded, None);
    let text = format!("{:?}", flooded.content);
    assert!(
        text.contains("longer than the limit of 16777216 bytes ([host.worker_limits] max_frame_bytes)"),
        "{text}"
    );
    assert!(rss_mib(host_pid) < 100);
    let args = common::serve::args(json!({"message": "after the flood"}));
    let again = client
        .call_tool(CallToolRequestParams::new("c_echo").with_arguments(args))
        .await
        .expect("call");
    assert_eq!(again.is_error, Some(false), "{again:?}");
    client.cancel().await.expect("close");
}

/// A line of invalid UTF-8 on the protocol while the call goes on: the
/// host kills the worker (rather than waiting on it) and answers the call.
#[tokio::test]
async fn a_worker_sending_invalid_utf8_is_killed_and_its_call_answered() {
    let env = Env::new(&isolated_plan(""));
    let served = serve(&env).await;
    let broken = tokio::time::timeout(
        Duration::from_secs(20),
        served.call("c_bad_utf8", json!({"ms": 60_000})),
    )
    .await
    .expect("the call was answered within 20s");
    assert_crashed(&broken, Some("SIGKILL"));
    let text = format!("{:?}", broken.content);
    assert!(text.contains("broke the protocol"), "{text}");
    assert_ok(&served.call("c_echo", json!({"message": "x"})).await, "restarted");
    served.client.cancel().await.expect("close");
}

/// A worker restarting into a mount that hangs is killed at the start
/// deadline (`TOOLHOST_WORKER_START_TIMEOUT_MS`, 2 s here): the call gets
/// `module_crashed` instead of blocking, and the host still serves.
#[tokio::test]
async fn a_restart_hanging_in_mount_is_killed_at_the_start_deadline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("hang-mount");
    let env = Env::new(&format!(
        "[host]\ndefault_timeout_secs = 30\n\n\
         [[tools]]\npath = \"{}\"\nprefix = \"c_\"\n[tools.config]\nhang_mount_if = \"{}\"\n\n\
         [[tools]]\nmodule = \"fixture\"\n",
        module_file("toolhost_fixture_crashy").display(),
        marker.display()
    ));
    let mut cmd = env.command();
    cmd.env("TOOLHOST_WORKER_START_TIMEOUT_MS", "2000");
    let (client, _) = common::serve::client(cmd, ()).await;
    let call = |tool: &'static str, input: Value| {
        client.call_tool(CallToolRequestParams::new(tool).with_arguments(common::serve::args(input)))
    };
    assert_crashed(&call("c_abort", json!({})).await.expect("call"), Some("SIGABRT"));
    std::fs::write(&marker, "").expect("marker");
    let hung = tokio::time::timeout(Duration::from_secs(20), call("c_echo", json!({"message": "x"})))
        .await
        .expect("the call was answered within 20s")
        .expect("call");
    assert_crashed(&hung, None);
    let text = format!("{:?}", hung.content);
    assert!(text.contains("within 2000 ms"), "{text}");
    assert_ok(
        &call("echo", json!({"message": "other"})).await.expect("call"),
        "other module",
    );
    std::fs::remove_file(&marker).expect("remove marker");
    assert_ok(
        &call("c_echo", json!({"message": "x"})).await.expect("call"),
        "restarted",
    );
    client.cancel().await.expect("close");
}
