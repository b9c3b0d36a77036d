//! Foundation: plans, loading, mounting, the CLI contract and cleanup,
//! through the real `toolhost` binary and real cdylibs.

mod common;

use std::time::{Duration, Instant};

use common::{fixture_plan, module_file, target_dir, Called, Env};
use serde_json::{json, Value};

#[test]
fn list_describe_and_call_through_the_real_module() {
    let env = Env::new(&fixture_plan(""));
    let out = env.run(&["list"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    for tool in ["echo", "panic", "sleep", "stubborn_sleep", "huge", "write_key"] {
        assert!(
            text.lines().any(|l| l.starts_with(tool)),
            "{tool} missing from:\n{text}"
        );
    }

    let out = env.run(&["list", "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("list --json is JSON");
    let echo = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "echo")
        .unwrap();
    assert_eq!(echo["effect"], "compute");
    assert_eq!(echo["module"], "fixture");

    let out = env.run(&["describe", "echo"]);
    let spec: serde_json::Value = serde_json::from_slice(&out.stdout).expect("describe is JSON");
    assert_eq!(spec["input_schema"]["type"], "object");
    assert_eq!(spec["input_schema"]["required"], json!(["message"]));
    assert_eq!(
        spec["input_schema"]["properties"]["message"]["description"],
        "Text to echo back."
    );
    assert_eq!(spec["version"], "0.1.0");

    let called = env.call("echo", json!({"message": "hi", "data": [1, 2]}));
    let output = called.assert_success();
    assert_eq!(output, &json!({"message": "hi", "data": [1, 2]}));
    assert_eq!(called.result["success"], true);
    assert!(called.result["metadata"]["duration_ms"].as_f64().unwrap() >= 0.0);
}

#[test]
fn call_reads_input_from_stdin_and_echoes_the_call_id() {
    let env = Env::new(&fixture_plan(""));
    let called = Called::from_output(env.run_with_stdin(
        &["call", "echo", "-", "--id", "abc-1"],
        br#"{"message":"from stdin"}"#,
    ));
    assert_eq!(called.assert_success()["message"], "from stdin");
    assert_eq!(called.result["tool_call_id"], "abc-1");
}

#[test]
fn exit_codes_follow_the_cli_contract() {
    let env = Env::new(&fixture_plan(""));
    // 1: the call failed.
    assert_eq!(env.call("echo", json!({"message": 5})).code, 1);
    // 2: usage errors (bad JSON, unknown subcommand, unknown tool for describe).
    assert_eq!(env.run(&["call", "echo", "{not json"]).status.code(), Some(2));
    assert_eq!(env.run(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(env.run(&["describe", "ech"]).status.code(), Some(2));
    // 2: a plan error.
    env.set_plan("[host]\nbogus = 1\n");
    assert_eq!(env.run(&["list"]).status.code(), Some(2));
    // check: 0/1.
    env.set_plan(&fixture_plan(""));
    assert_eq!(env.run(&["check"]).status.code(), Some(0));
    env.set_plan("[[tools]]\nmodule = \"no_such_module\"\n");
    assert_eq!(env.run(&["check"]).status.code(), Some(1));
}

#[test]
fn unknown_tool_suggests_close_names() {
    let env = Env::new(&fixture_plan(""));
    let called = env.call("ecko", json!({"message": "x"}));
    assert_eq!(called.status(), "error");
    assert_eq!(called.result["error"]["code"], "unknown_tool");
    called.assert_says("did you mean echo");
}

#[test]
fn bad_input_is_a_validation_error_listing_every_violation() {
    let env = Env::new(&fixture_plan(""));
    let called = env.call("sleep", json!({"ms": "long", "extra": true}));
    assert_eq!(called.status(), "validation_error");
    let violations = called.result["error"]["details"]["violations"]
        .as_array()
        .unwrap();
    let pointers: Vec<&str> = violations
        .iter()
        .map(|v| v["pointer"].as_str().unwrap())
        .collect();
    assert!(pointers.contains(&"/ms"), "{violations:?}");
    assert!(
        pointers.contains(&""),
        "additional property reported at the root: {violations:?}"
    );
    assert!(called.message().contains("/ms"));
}

#[test]
fn a_panic_becomes_an_error_result_not_an_abort() {
    let env = Env::new(&fixture_plan(""));
    let called = env.call("panic", json!({"message": "kaboom"}));
    assert_eq!(called.status(), "error");
    assert_eq!(called.result["error"]["code"], "panicked");
    assert!(called.message().contains("kaboom"));
    assert!(!called.message().contains("stack backtrace"));
    assert_eq!(called.code, 1);
    // The module's panic hook routes the panic into the host's log, one line.
    assert!(called.stderr.contains("kaboom"), "{}", called.stderr);
    assert!(!called.stderr.contains("stack backtrace"), "{}", called.stderr);
}

#[test]
fn after_a_panic_the_same_host_answers_the_next_call() {
    // In-process: one host, the real cdylib, several calls.
    let host = common::InProcess::new("[[tools]]\nmodule = \"fixture\"\n");
    for _ in 0..3 {
        let panicked = host.call("panic", json!({"message": "again"}));
        assert_eq!(panicked.error.as_ref().unwrap().code, "panicked");
        let echoed = host.call("echo", json!({"message": "still alive"}));
        assert!(echoed.success);
        assert_eq!(echoed.output["message"], "still alive");
    }
}

#[test]
fn a_timeout_cancels_the_tool_and_it_stops() {
    let env = Env::new(&fixture_plan("[policy.tools.sleep]\ntimeout_secs = 1\n"));
    let started = Instant::now();
    let called = env.call("sleep", json!({"ms": 60_000}));
    let took = started.elapsed();
    assert_eq!(called.status(), "timeout", "{}", called.result);
    assert_eq!(called.result["error"]["retryable"], true);
    // The tool saw the token and returned its partial output.
    let slept = called.result["output"]["slept_ms"]
        .as_u64()
        .expect("partial output kept");
    assert!((900..5_000).contains(&slept), "slept {slept} ms");
    assert!(called.result["metadata"].get("abandoned").is_none());
    assert!(took < Duration::from_secs(30), "took {took:?}");
}

#[test]
fn a_tool_that_ignores_cancel_is_abandoned_after_the_grace() {
    let env = Env::new(&fixture_plan("[policy.tools.stubborn_sleep]\ntimeout_secs = 1\n"));
    let started = Instant::now();
    let called = env.call("stubborn_sleep", json!({"ms": 60_000}));
    assert_eq!(called.status(), "timeout");
    assert_eq!(called.result["metadata"]["abandoned"], true);
    called.assert_says("did not stop");
    // Deadline (1 s) + grace (1.5 s), not the tool's 60 s.
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn huge_output_is_bounded_with_head_and_tail() {
    let env = Env::new("[host]\nmax_output_bytes = 4096\n[[tools]]\nmodule = \"fixture\"\n");
    let called = env.call("huge", json!({"bytes": 1_000_000}));
    let output = called.assert_success().as_str().unwrap().to_string();
    assert!(output.len() < 4096, "{}", output.len());
    assert!(output.starts_with("0123456789"));
    assert!(output.contains("bytes cut from the middle"));
    let truncated = &called.result["metadata"]["truncated"];
    // The serialized size: quotes and escaped newlines included.
    assert!(
        truncated["original_bytes"].as_u64().unwrap() > 1_000_000,
        "{truncated}"
    );
    assert!(truncated["kept_bytes"].as_u64().unwrap() <= 4096);
}

#[test]
fn plan_errors_name_file_line_and_column() {
    let env = Env::new("[host]\ndefault_timeout_secs = 10\nmodule_pth = []\n");
    let out = env.run(&["list"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr.contains("plan.toml:3:1:"), "{stderr}");
    assert!(stderr.contains("module_pth"), "{stderr}");

    env.set_plan("[[tools]]\nmodule = \"fixture\"\nmax_concurrent = \"four\"\n");
    let out = env.run(&["list"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("plan.toml:3:18:"), "{stderr}");

    env.set_plan(
        "[[tools]]\nmodule = \"fixture\"\n[tools.config]\nlabel = \"${TOOLHOST_SURELY_UNSET_VAR}\"\n",
    );
    let out = env.run(&["list"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("TOOLHOST_SURELY_UNSET_VAR is not set"),
        "{stderr}"
    );
}

#[test]
fn module_config_errors_and_env_expansion_reach_the_module() {
    let env =
        Env::new("[[tools]]\nmodule = \"fixture\"\n[tools.config]\nlabel = \"${TOOLHOST_TEST_LABEL}-x\"\n");
    let out = env
        .command()
        .env("TOOLHOST_TEST_LABEL", "expanded")
        .args(["list"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("fixture mounted: expanded-x"));

    env.set_plan("[[tools]]\nmodule = \"fixture\"\n[tools.config]\nlabel = 5\n");
    let out = env.run(&["list"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr.contains("invalid config at `label`"), "{stderr}");

    env.set_plan("[[tools]]\nmodule = \"fixture\"\n[tools.config]\nfail_mount = \"no database\"\n");
    let stderr = String::from_utf8_lossy(&env.run(&["list"]).stderr).to_string();
    assert!(
        stderr.contains("module 'fixture': mount failed: no database"),
        "{stderr}"
    );

    env.set_plan("[[tools]]\nmodule = \"fixture\"\n[tools.config]\npanic_mount = true\n");
    let out = env.run(&["list"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("mount panicked: fixture mount panicked on purpose"),
        "{stderr}"
    );
}

#[test]
fn missing_and_foreign_libraries_are_refused_clearly() {
    let env = Env::new("[[tools]]\nmodule = \"nonexistent\"\n");
    let out = env.run(&["list"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr.contains("module 'nonexistent' not found"), "{stderr}");
    assert!(stderr.contains("libtoolhost_nonexistent.so"), "{stderr}");

    env.set_plan("[[tools]]\npath = \"missing/libx.so\"\n");
    let stderr = String::from_utf8_lossy(&env.run(&["list"]).stderr).to_string();
    assert!(stderr.contains("cannot be read"), "{stderr}");

    std::fs::write(env.path().join("garbage.so"), b"this is not an ELF file at all").unwrap();
    env.set_plan("[[tools]]\npath = \"garbage.so\"\n");
    let stderr = String::from_utf8_lossy(&env.run(&["list"]).stderr).to_string();
    assert!(stderr.contains("cannot load"), "{stderr}");

    // A real shared library that is not a toolhost module.
    let foreign = [
        "/lib/x86_64-linux-gnu/libm.so.6",
        "/usr/lib/x86_64-linux-gnu/libm.so.6",
        "/lib64/libm.so.6",
    ]
    .into_iter()
    .find(|p| std::path::Path::new(p).exists())
    .expect("libm exists");
    env.set_plan(&format!("[[tools]]\npath = \"{foreign}\"\n"));
    let stderr = String::from_utf8_lossy(&env.run(&["list"]).stderr).to_string();
    assert!(stderr.contains("is not a toolhost module"), "{stderr}");
}

#[test]
fn abi_mismatches_get_one_short_paragraph() {
    let env = Env::new(&format!(
        "[[tools]]\npath = \"{}\"\n",
        module_file("toolhost_fixture_abi_old").display()
    ));
    let out = env.run(&["list"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("was built against toolhost ABI 0.0.7, but this host speaks toolhost ABI 0.3.0"),
        "{stderr}"
    );
    assert!(
        stderr.contains("Rebuild the module against a toolhost-core release that speaks ABI 0.3"),
        "{stderr}"
    );

    env.set_plan(&format!(
        "[[tools]]\npath = \"{}\"\n",
        module_file("toolhost_fixture_abi_mismatch").display()
    ));
    let out = env.run(&["list"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr.contains("do not match this host's layout"), "{stderr}");
    assert!(
        stderr.lines().count() < 5,
        "the layout report must stay out of the default output:\n{stderr}"
    );

    // The full report is there at debug level.
    let out = env
        .command()
        .env("RUST_LOG", "debug")
        .args(["list"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("abi_stable layout report"));
}

#[test]
fn semver_requirements_are_checked() {
    let env = Env::new("[[tools]]\nmodule = \"fixture\"\nversion = \"^0.1\"\n");
    assert!(env.run(&["list"]).status.success());
    env.set_plan("[[tools]]\nmodule = \"fixture\"\nversion = \">=2.0\"\n");
    let out = env.run(&["list"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("is version 0.1.0, which does not satisfy the plan's requirement \">=2.0\""),
        "{stderr}"
    );
    env.set_plan("[[tools]]\nmodule = \"fixture\"\nversion = \"not a version\"\n");
    let stderr = String::from_utf8_lossy(&env.run(&["list"]).stderr).to_string();
    assert!(stderr.contains("is not semver"), "{stderr}");
}

#[test]
fn duplicate_tool_names_name_both_modules_and_prefixes_fix_them() {
    let env = Env::new("[[tools]]\nmodule = \"fixture\"\n[[tools]]\nmodule = \"fixture\"\n");
    let out = env.run(&["list"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("tool name 'echo' is registered by both module 'fixture' and module 'fixture'"),
        "{stderr}"
    );
    assert!(stderr.contains("prefix"), "{stderr}");

    env.set_plan("[[tools]]\nmodule = \"fixture\"\n[[tools]]\nmodule = \"fixture\"\nprefix = \"two_\"\n");
    let out = env.run(&["list"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("two_echo") && text.lines().any(|l| l.starts_with("echo ")));
    env.call("two_echo", json!({"message": "x"})).assert_success();
}

#[test]
fn cleanup_runs_in_reverse_mount_order() {
    let env = Env::new(
        "[[tools]]\nmodule = \"fixture\"\nconfig = { label = \"first\" }\n\
         [[tools]]\nmodule = \"fixture\"\nprefix = \"b_\"\nconfig = { label = \"second\" }\n",
    );
    let out = env.run(&["list"]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let pos = |needle: &str| {
        stderr
            .find(needle)
            .unwrap_or_else(|| panic!("{needle} missing:\n{stderr}"))
    };
    assert!(pos("fixture mounted: first") < pos("fixture mounted: second"));
    assert!(pos("fixture mounted: second") < pos("fixture cleanup: second"));
    assert!(pos("fixture cleanup: second") < pos("fixture cleanup: first"));

    // A module that fails to mount unloads the ones mounted before it.
    env.set_plan(
        "[[tools]]\nmodule = \"fixture\"\nconfig = { label = \"ok\" }\n\
         [[tools]]\nmodule = \"fixture\"\nprefix = \"b_\"\nconfig = { fail_mount = \"nope\" }\n",
    );
    let out = env.run(&["list"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("fixture cleanup: ok"));
}

#[test]
fn sigint_cancels_the_call_in_flight_then_cleans_up() {
    use std::io::BufRead;
    let env = Env::new(&fixture_plan("[tools.config]\nlabel = \"sig\"\n"));
    let mut child = env
        .command()
        // The `tool:pre` event is logged when the call is about to run,
        // after the host installed its signal handlers: the readiness
        // signal for the SIGINT below.
        .env("RUST_LOG", "info,toolhost::events=debug")
        .args(["call", "sleep", r#"{"ms": 60000}"#])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("tool:pre") {
                let _ = started_tx.send(());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    if started_rx.recv_timeout(Duration::from_secs(60)).is_err() {
        let _ = child.kill();
        panic!("the call never started:\n{}", reader.join().unwrap_or_default());
    }
    let started = Instant::now();
    // SAFETY: plain kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let mut out = child.wait_with_output().unwrap();
    out.stderr = reader.join().unwrap().into_bytes();
    assert!(started.elapsed() < Duration::from_secs(10));
    let called = Called::from_output(out);
    assert_eq!(called.status(), "cancelled", "{}", called.result);
    assert_eq!(called.code, 130);
    assert!(
        called.stderr.contains("fixture cleanup: sig"),
        "{}",
        called.stderr
    );
}

#[test]
fn modules_are_found_on_the_plan_module_path_relative_to_the_plan() {
    let env = Env::new("");
    let dir = env.path().join("plans");
    std::fs::create_dir_all(&dir).unwrap();
    let rel = pathdiff(&target_dir(), &dir);
    std::fs::write(
        dir.join("p.toml"),
        format!("[host]\nmodule_path = [\"{rel}\"]\n[[tools]]\nmodule = \"fixture\"\n"),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["--plan", "plans/p.toml", "list"])
        .current_dir(env.path())
        .env_remove("TOOLHOST_MODULE_PATH")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // TOOLHOST_PLAN is the fallback for --plan.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["list"])
        .current_dir(env.path())
        .env("TOOLHOST_PLAN", "plans/p.toml")
        .env_remove("TOOLHOST_MODULE_PATH")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `to` relative to `from` (both absolute), for a relative module_path.
fn pathdiff(to: &std::path::Path, from: &std::path::Path) -> String {
    let to: Vec<_> = to.components().collect();
    let from: Vec<_> = from.components().collect();
    let common = to.iter().zip(&from).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".into(); from.len() - common];
    parts.extend(
        to[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

#[test]
fn a_module_panic_is_logged_with_its_call_id() {
    let env = Env::new(&fixture_plan(""));
    let out = env
        .command()
        .args(["--log-format", "json", "call", "panic", r#"{"message":"boom"}"#])
        .output()
        .expect("run toolhost");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let panic_line: Value = stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| {
            l["fields"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("panic at") && m.ends_with("boom"))
        })
        .unwrap_or_else(|| panic!("no panic log line:\n{stderr}"));
    let call = panic_line["fields"]["call"].as_str().unwrap_or("");
    assert!(
        call.starts_with("call-"),
        "the panic line names no call: {panic_line}"
    );
}
