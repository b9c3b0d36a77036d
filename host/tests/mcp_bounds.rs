//! A mounted MCP server's tool list is bounded and its tool names checked.
//! The server is `mcp_peer/hostile_server.py`, raw JSON-RPC over stdio:
//! endless `nextCursor` pages, one page of 100,000 tools, pages of large
//! tools, names that are escape sequences, newlines, empty, spaced, a
//! Cyrillic look-alike, and a list that grows past the caps on
//! `list_changed`. At mount the mount fails naming the cap; on a refresh
//! the old list stays; the host's memory stays under budget throughout.

mod common;
mod mcp_peer;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use common::rss::{assert_within_budget, peak_kib, run_measured};
use common::serve::{args, text};
use common::Env;
use rmcp::model::CallToolRequestParams;
use rmcp::ServiceExt;
use tokio::io::{AsyncBufReadExt, BufReader};

/// A plan mounting the hostile server in `mode` (and its other arguments)
/// under the prefix `h_`.
fn hostile_plan(mode: &[&str]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_peer/hostile_server.py");
    assert!(script.is_file(), "{} is missing", script.display());
    let argv: Vec<String> = ["python3".to_string(), script.display().to_string()]
        .into_iter()
        .chain(mode.iter().map(|m| m.to_string()))
        .collect();
    format!(
        "[host]\ndefault_timeout_secs = 30\n\n[[tools]]\nprefix = \"h_\"\n[tools.mcp]\ncommand = {}\n",
        serde_json::to_string(&argv).expect("argv")
    )
}

/// `toolhost check` on `mode`: its stdout, stderr and exit code, with the
/// host's memory held to the budget.
fn check(mode: &[&str]) -> (String, String, Option<i32>) {
    let env = Env::new(&hostile_plan(mode));
    let mut cmd = env.command();
    cmd.env("RUST_LOG", "warn").arg("check");
    let (out, peak) = run_measured(cmd, Duration::from_secs(60));
    assert_within_budget(peak, &format!("check with {mode:?}"));
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code(),
    )
}

#[test]
fn a_tool_list_past_a_cap_fails_the_mount_naming_the_cap() {
    for (mode, key) in [
        ("endless_pages", "max_list_pages"),
        ("many_tools", "max_tools"),
        ("big_pages", "max_list_bytes"),
    ] {
        let (stdout, stderr, code) = check(&[mode]);
        assert_eq!(code, Some(1), "{mode}: {stdout}\n{stderr}");
        let fail = stdout
            .lines()
            .find(|l| l.starts_with("FAIL"))
            .unwrap_or_else(|| panic!("{mode}: no FAIL line:\n{stdout}\n{stderr}"));
        assert!(
            fail.contains(&format!("[host.mcp_limits] {key}")),
            "{mode}: {fail}"
        );
    }
}

#[test]
fn bad_names_are_refused_and_nothing_raw_reaches_the_terminal() {
    let (stdout, stderr, code) = check(&["bad_names"]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("1 tool(s) [h_good_tool]"), "{stdout}");
    for shown in [
        r"'\x1b]0;pwned\x07\x1b[31mevil'",
        r"'two\nlines'",
        "'' (the name is empty)",
        "'has space'",
        "'r\u{435}ad_file'",
        r"'rtl\u{202e}txt.exe'",
        "at most 128 are allowed",
    ] {
        assert!(
            stdout.lines().any(|l| l.contains("refused") && l.contains(shown)),
            "{shown} is not reported as refused:\n{stdout}"
        );
    }
    for output in [&stdout, &stderr] {
        assert!(!output.contains('\x1b'), "a raw escape: {output:?}");
        assert!(!output.contains('\u{202e}'), "a raw BIDI override: {output:?}");
    }
    // The server's stderr: one record per line, escaped.
    let forged: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("FORGED-STDERR-RECORD"))
        .collect();
    assert_eq!(forged.len(), 1, "{stderr}");
    assert!(
        forged[0].contains("WARN") && forged[0].contains(r"\x1b[31mred"),
        "{stderr}"
    );
    assert!(
        !stderr.lines().any(|l| l.starts_with("FORGED-STDERR-RECORD")),
        "{stderr}"
    );

    let env = Env::new(&hostile_plan(&["bad_names"]));
    let listed = env.run(&["list", "--json"]);
    let tools: serde_json::Value = serde_json::from_slice(&listed.stdout).expect("list --json");
    let names: Vec<&str> = tools
        .as_array()
        .expect("an array")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["h_good_tool"]);
}

/// A refresh after `list_changed` that goes past a cap fails with the
/// reason logged, and the tools mounted before stay and answer.
#[test]
fn a_refresh_past_a_cap_keeps_the_old_list() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    for (grow, key) in [("tools", "max_tools"), ("pages", "max_list_pages")] {
        let env = Env::new(&hostile_plan(&["changes_huge", grow]));
        runtime.block_on(async {
            let mut cmd = env.command();
            cmd.env("RUST_LOG", "warn");
            let (transport, stderr) = common::serve::transport(cmd, Stdio::piped());
            let pid = transport.id().expect("host pid");
            let client = ().serve(transport).await.expect("initialize");
            let mut stderr = BufReader::new(stderr.expect("stderr")).lines();

            let grown = client
                .call_tool(CallToolRequestParams::new("h_grow").with_arguments(args(serde_json::json!({}))))
                .await
                .expect("h_grow");
            assert_eq!(text(&grown), "grow");
            let failed = tokio::time::timeout(Duration::from_secs(30), async {
                while let Ok(Some(line)) = stderr.next_line().await {
                    if line.contains("re-reading it failed") {
                        return line;
                    }
                }
                panic!("stderr ended before the refresh failed")
            })
            .await
            .unwrap_or_else(|_| panic!("{grow}: no failed refresh logged within 30s"));
            assert!(failed.contains(&format!("[host.mcp_limits] {key}")), "{failed}");

            let tools = client.list_all_tools().await.expect("tools/list");
            let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
            names.sort();
            assert_eq!(names, ["h_grow", "h_steady"], "{grow}");
            let steady = client
                .call_tool(CallToolRequestParams::new("h_steady").with_arguments(args(serde_json::json!({}))))
                .await
                .expect("h_steady");
            assert_eq!(text(&steady), "steady");
            let peak = peak_kib(pid).expect("the host is running");
            assert_within_budget(peak, &format!("refresh with {grow}"));
            client.cancel().await.expect("close");
        });
    }
}

/// A server writing to stderr in a loop fills the host's log only so fast:
/// past 200 lines a second they are counted, and the count is logged.
#[test]
fn a_stderr_flood_is_logged_only_so_fast() {
    let (stdout, stderr, code) = check(&["stderr_flood"]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let logged = stderr.lines().filter(|l| l.contains("STDERR-FLOOD")).count();
    assert!(
        (1..=200).contains(&logged),
        "{logged} lines of the flood were logged"
    );
    assert!(
        stderr.contains("lines of the server's stderr past 200 a second"),
        "the dropped lines are not counted: {}",
        stderr.lines().last().unwrap_or_default()
    );
}
