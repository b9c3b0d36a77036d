//! The bash module through the real `toolhost` binary and the real cdylib:
//! timeouts that leave no process behind, bounded output, a clean
//! environment, exit codes and signals, background jobs, and the
//! parser-based command policy.

mod common;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{module_file, target_dir, Env};
use serde_json::{json, Value};
use toolhost::cancel::CancelToken;
use toolhost::host::Host;
use toolhost::pipeline::{Call, Pipeline};
use toolhost::plan::Plan;

/// A marker unique to one test, put in the command so its processes can be
/// found in /proc, and killed by [`Marker`]'s Drop even if the test fails.
struct Marker(String);

impl Marker {
    fn new(tag: &str) -> Marker {
        static N: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        Marker(format!(
            "thmark_{tag}_{}_{}_{nanos}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ))
    }

    /// Pids whose command line or environment holds the marker (not ours).
    fn survivors(&self) -> Vec<u32> {
        let me = std::process::id();
        let mut out = Vec::new();
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return out;
        };
        for entry in dir.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if pid == me {
                continue;
            }
            let has = |file: &str| {
                std::fs::read(format!("/proc/{pid}/{file}"))
                    .map(|b| b.windows(self.0.len()).any(|w| w == self.0.as_bytes()))
                    .unwrap_or(false)
            };
            // Zombies have an empty cmdline and are already dead.
            let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| {
                    s.rsplit(')')
                        .next()
                        .is_some_and(|rest| rest.trim_start().starts_with('Z'))
                })
                .unwrap_or(true);
            if !zombie && (has("cmdline") || has("environ")) {
                out.push(pid);
            }
        }
        out
    }

    /// Waits up to `bound` for every marked process to be gone.
    fn assert_none_survive(&self, bound: Duration) {
        let end = Instant::now() + bound;
        loop {
            let left = self.survivors();
            if left.is_empty() {
                return;
            }
            if Instant::now() > end {
                let cmds: Vec<String> = left
                    .iter()
                    .map(|p| {
                        std::fs::read(format!("/proc/{p}/cmdline"))
                            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
                            .unwrap_or_default()
                    })
                    .collect();
                panic!("processes survived: {left:?} {cmds:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Marker {
    fn drop(&mut self) {
        for pid in self.survivors() {
            // SAFETY: kill(2) on a pid we found carrying our marker.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
    }
}

fn bash_plan(config: &str) -> String {
    module_file("toolhost_bash");
    format!(
        "[host]\ndefault_timeout_secs = 60\ncancel_grace_ms = 4000\n\n[[tools]]\nmodule = \"bash\"\n[tools.config]\n{config}\n"
    )
}

fn env(config: &str) -> Env {
    Env::new(&bash_plan(config))
}

fn out_str<'a>(v: &'a Value, key: &str) -> &'a str {
    v["output"][key].as_str().unwrap_or("")
}

/// A command that starts `sleep 1000` copies carrying the marker in their
/// environment (so they survive `setsid`, `nohup` and re-parenting).
fn marked(marker: &Marker, body: &str) -> String {
    format!("export {}=1; {body}", marker.0)
}

#[test]
fn timeout_kills_background_and_foreground_children() {
    let m = Marker::new("bgfg");
    let e = env("timeout_secs = 1\nkill_grace_ms = 300");
    let t = Instant::now();
    let c = e.call(
        "bash",
        json!({"command": marked(&m, "echo before; sleep 1000 & sleep 1000; wait")}),
    );
    assert_eq!(c.status(), "timeout", "{}", c.result);
    assert_eq!(c.code, 1);
    assert!(t.elapsed() < Duration::from_secs(10), "took {:?}", t.elapsed());
    assert_eq!(
        out_str(&c.result, "stdout"),
        "before\n",
        "partial output kept: {}",
        c.result
    );
    m.assert_none_survive(Duration::from_secs(2));
}

#[test]
fn timeout_kills_setsid_and_nohup_escapees() {
    let m = Marker::new("escape");
    let e = env("timeout_secs = 1\nkill_grace_ms = 300");
    let cmd = marked(
        &m,
        "setsid sleep 1000 & nohup sleep 1000 >/dev/null 2>&1 & (setsid bash -c 'sleep 1000 & disown' &); \
         setsid -w sleep 1000",
    );
    let c = e.call("bash", json!({"command": cmd}));
    assert_eq!(c.status(), "timeout", "{}", c.result);
    m.assert_none_survive(Duration::from_secs(2));
}

#[test]
fn processes_left_behind_by_a_finished_command_are_ended() {
    let m = Marker::new("left");
    let e = env("kill_grace_ms = 300");
    let c = e.call(
        "bash",
        json!({"command": marked(&m, "nohup sleep 1000 >/dev/null 2>&1 & setsid sleep 1000 & (sleep 1000 &); echo ok")}),
    );
    let out = c.assert_success();
    assert_eq!(out["stdout"], "ok\n");
    assert!(out["note"].as_str().unwrap_or("").contains("ended"), "{out}");
    m.assert_none_survive(Duration::from_secs(2));
}

#[test]
fn a_background_grandchild_holding_the_pipes_does_not_hang_the_call() {
    let m = Marker::new("pipes");
    let e = env("kill_grace_ms = 300");
    let t = Instant::now();
    // The grandchild keeps stdout and stderr open and ignores SIGTERM.
    let c = e.call(
        "bash",
        json!({"command": marked(&m, "(trap '' TERM; setsid sleep 1000) & echo done")}),
    );
    c.assert_success();
    assert!(t.elapsed() < Duration::from_secs(5), "took {:?}", t.elapsed());
    m.assert_none_survive(Duration::from_secs(2));
}

#[test]
fn host_deadline_kills_the_tree_and_reports_timeout() {
    let m = Marker::new("hostdl");
    let plan = format!(
        "{}\n[policy.tools.bash]\ntimeout_secs = 1\n",
        bash_plan("timeout_secs = 30\nkill_grace_ms = 300")
    );
    let e = Env::new(&plan);
    let c = e.call("bash", json!({"command": marked(&m, "echo partial; sleep 1000")}));
    assert_eq!(c.status(), "timeout", "{}", c.result);
    m.assert_none_survive(Duration::from_secs(3));
}

#[test]
fn output_flood_keeps_head_and_tail() {
    let p = InProc::new("max_output_bytes = 2000");
    let r = p.call(
        "bash",
        json!({"command": "echo FIRST-LINE; yes flood | head -c 3000000; echo; echo LAST-LINE"}),
    );
    assert_eq!(r["status"], "success", "{r}");
    let out = &r["output"];
    let stdout = out["stdout"].as_str().unwrap_or("");
    assert!(stdout.starts_with("FIRST-LINE\n"), "head kept");
    assert!(stdout.ends_with("LAST-LINE\n"), "tail kept");
    assert!(stdout.len() < 2300, "bounded: {} bytes", stdout.len());
    assert_eq!(out["truncated"], true);
    assert!(out["stdout_bytes"].as_u64().unwrap_or(0) > 3_000_000);
    assert!(stdout.contains("bytes cut"), "the cut is marked");
    // No copy of the middle is kept (issue #14): no path to hand out.
    assert!(out.get("stdout_file").is_none(), "{r}");
    assert!(
        out["cut_note"]
            .as_str()
            .unwrap_or("")
            .contains("bytes of the output were dropped"),
        "{r}"
    );
    p.host.shutdown();
}

#[test]
fn secrets_in_the_host_environment_are_invisible() {
    let e = env("env_allow = [\"VISIBLE_*\", \"*_API_KEY\"]");
    let out = e
        .command()
        .env("MY_API_KEY", "sk-secret-123")
        .env("GITHUB_TOKEN", "ghp-secret")
        .env("VISIBLE_THING", "yes")
        .env("RANDOM_HOST_VAR", "no")
        .args(["call", "bash", &json!({"command": "env"}).to_string()])
        .output()
        .expect("run toolhost");
    let c = common::Called::from_output(out);
    let stdout = c.assert_success()["stdout"].as_str().unwrap_or("").to_string();
    assert!(!stdout.contains("sk-secret-123"), "API key leaked:\n{stdout}");
    assert!(!stdout.contains("ghp-secret"), "token leaked");
    assert!(
        !stdout.contains("RANDOM_HOST_VAR"),
        "only allow-listed variables pass"
    );
    assert!(stdout.contains("VISIBLE_THING=yes"), "env_allow patterns pass");
    assert!(stdout.contains("PATH="), "the core set passes");
}

#[test]
fn an_exactly_named_secret_and_env_set_pass() {
    let e = env("env_allow = [\"MY_API_KEY\"]\nenv_set = { FROM_PLAN = \"v1\" }");
    let out = e
        .command()
        .env("MY_API_KEY", "sk-named")
        .args([
            "call",
            "bash",
            &json!({"command": "echo $MY_API_KEY $FROM_PLAN"}).to_string(),
        ])
        .output()
        .expect("run toolhost");
    let c = common::Called::from_output(out);
    // The command saw the value; the host's output guardrail (#16) then
    // replaced it, since MY_API_KEY is a secret-named host variable.
    assert_eq!(c.assert_success()["stdout"], "[REDACTED:env:MY_API_KEY] v1\n");
}

#[test]
fn cat_returns_at_once_because_stdin_is_dev_null() {
    let e = env("timeout_secs = 20");
    let t = Instant::now();
    let c = e.call("bash", json!({"command": "cat; read x; echo read=$?"}));
    assert_eq!(c.assert_success()["stdout"], "read=1\n");
    assert!(t.elapsed() < Duration::from_secs(5), "took {:?}", t.elapsed());
}

#[test]
fn exit_codes_and_signals_are_reported() {
    let e = env("");
    let c = e.call("bash", json!({"command": "echo out; echo err >&2; exit 3"}));
    assert_eq!(c.status(), "error");
    assert_eq!(c.code, 1);
    assert_eq!(c.result["error"]["code"], "exit_status");
    assert!(c.message().contains("code 3"), "{}", c.message());
    assert_eq!(c.result["output"]["exit_code"], 3);
    assert_eq!(out_str(&c.result, "stdout"), "out\n");
    assert_eq!(out_str(&c.result, "stderr"), "err\n");

    let c = e.call("bash", json!({"command": "kill -SEGV $$"}));
    assert_eq!(c.status(), "error");
    assert_eq!(c.result["error"]["code"], "killed_by_signal");
    assert_eq!(c.result["output"]["signal"], "SIGSEGV");
    assert!(c.result["output"]["exit_code"].is_null());

    // A pipeline into `head` must not be broken by an inherited SIGPIPE=ignore.
    let c = e.call("bash", json!({"command": "yes | head -n 2"}));
    assert_eq!(c.assert_success()["stdout"], "y\ny\n");
}

#[test]
fn non_utf8_output_is_replaced_and_flagged() {
    let e = env("");
    let c = e.call("bash", json!({"command": "printf 'ok \\377\\376 end'"}));
    let out = c.assert_success();
    assert_eq!(out["stdout"], "ok \u{fffd}\u{fffd} end");
    assert!(out["encoding"].as_str().unwrap_or("").contains("UTF-8"));
}

#[test]
fn runs_in_the_working_dir_with_aliases() {
    let e = env("");
    std::fs::write(e.path().join("here.txt"), "x").expect("write");
    let c = e.call("Bash", json!({"command": "ls here.txt"}));
    assert_eq!(c.assert_success()["stdout"], "here.txt\n");
    let c = e.call("run_terminal_command", json!({"command": "true"}));
    c.assert_success();
}

#[test]
fn spec_declares_irreversible_and_serial() {
    let e = env("");
    let out = e.run(&["describe", "bash"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("irreversible"), "{text}");
    let spec: Value = serde_json::from_str(text.trim()).unwrap_or(Value::Null);
    if !spec.is_null() {
        assert_eq!(spec["effect"], "irreversible");
        assert_eq!(spec["execution"]["serial"], true);
    }
}

#[test]
fn the_command_policy_refuses_every_listed_bypass() {
    let m = Marker::new("policy");
    let e = env("denied_commands = [\"sudo\", \"rm\"]");
    for cmd in [
        "sudo ls",
        "bash -c 'sudo ls'",
        "true & sudo ls",
        "/usr/bin/sudo ls",
        "env sudo ls",
        "time sudo ls",
        "nohup sudo ls",
        "echo $(sudo ls)",
        "echo `sudo ls`",
        "(sudo ls)",
        "true; sudo ls | cat",
        "true && s\\udo ls",
        "sh -c \"bash -c 'rm -rf x'\"",
        "echo 'unterminated",
        "$CMD ls",
    ] {
        let c = e.call("bash", json!({"command": format!("{cmd} # {}", m.0)}));
        assert_eq!(c.status(), "policy_denied", "{cmd}: {}", c.result);
        assert!(!c.message().is_empty());
    }
    let c = e.call("bash", json!({"command": "echo sudo rm is just text"}));
    c.assert_success();
    let c = e.call("bash", json!({"command": "bash -c 'sudo ls'"}));
    assert!(
        c.message().contains("denied_commands rule `sudo`"),
        "{}",
        c.message()
    );
}

#[test]
fn allowed_commands_is_an_allow_list() {
    let e = env("allowed_commands = [\"ls\", \"git status\"]");
    e.call("bash", json!({"command": "cd . && ls"})).assert_success();
    let c = e.call("bash", json!({"command": "ls; touch nope"}));
    assert_eq!(c.status(), "policy_denied");
    assert!(c.message().contains("touch"), "{}", c.message());
    assert!(!e.path().join("nope").exists(), "nothing ran");
}

#[test]
fn bad_config_fails_the_mount_with_a_message() {
    let e = env("timeout_secs = 900\nmax_timeout_secs = 600");
    let out = e.run(&["check"]);
    assert_ne!(out.status.code(), Some(0));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("max_timeout_secs"), "{text}");
}

// ---------------------------------------------------------------------------
// Several calls in one host process: background jobs and cleanup.

struct InProc {
    runtime: tokio::runtime::Runtime,
    host: Arc<Host>,
    pipeline: Pipeline,
    _dir: tempfile::TempDir,
}

impl InProc {
    fn new(config: &str) -> InProc {
        module_file("toolhost_bash");
        let dir = tempfile::tempdir().expect("tempdir");
        let text = format!(
            "[host]\nworking_dir = \".\"\nmodule_path = [{:?}]\n\n[[tools]]\nmodule = \"bash\"\n[tools.config]\n{config}\n",
            target_dir().display().to_string()
        );
        let file: PathBuf = dir.path().join("plan.toml");
        std::fs::write(&file, &text).expect("write plan");
        let plan = Plan::parse(&text, &file).expect("plan parses");
        let host = Arc::new(Host::open(plan).expect("host opens"));
        let pipeline = Pipeline::new(host.clone(), CancelToken::new());
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime");
        InProc {
            runtime,
            host,
            pipeline,
            _dir: dir,
        }
    }

    fn call(&self, name: &str, input: Value) -> Value {
        let result = self.runtime.block_on(self.pipeline.call(Call {
            name: name.into(),
            input,
            ..Call::default()
        }));
        serde_json::to_value(result).expect("result serializes")
    }
}

fn wait_for_output(p: &InProc, id: &str, want: &str, bound: Duration) -> String {
    let end = Instant::now() + bound;
    let mut seen = String::new();
    while Instant::now() < end {
        let r = p.call("bash_output", json!({"id": id}));
        assert_eq!(r["status"], "success", "{r}");
        seen.push_str(r["output"]["stdout"].as_str().unwrap_or(""));
        if seen.contains(want) {
            return seen;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("never saw {want:?}; saw {seen:?}");
}

#[test]
fn background_job_lifecycle() {
    let m = Marker::new("job");
    let p = InProc::new("kill_grace_ms = 300");
    let r = p.call(
        "bash",
        json!({"command": marked(&m, "echo one; read -t 0.3 < /dev/zero; sleep 0.3; echo two; sleep 1000"), "run_in_background": true}),
    );
    assert_eq!(r["status"], "success", "{r}");
    let id = r["output"]["id"].as_str().expect("job id").to_string();

    // Incremental: "one" first, then only what is new.
    let first = wait_for_output(&p, &id, "one", Duration::from_secs(5));
    assert!(!first.contains("two") || first.find("one") < first.find("two"));
    let rest = wait_for_output(&p, &id, "two", Duration::from_secs(5));
    assert!(!rest.contains("one"), "output since the last read only: {rest:?}");
    let r = p.call("bash_output", json!({"id": id}));
    assert_eq!(r["output"]["running"], true);

    let r = p.call("bash_kill", json!({"id": id}));
    assert_eq!(r["status"], "success", "{r}");
    assert_eq!(r["output"]["killed"], true);
    assert_eq!(r["output"]["running"], false);
    m.assert_none_survive(Duration::from_secs(2));

    let r = p.call("bash_output", json!({"id": id}));
    assert_ne!(r["status"], "success", "a killed job is forgotten: {r}");
    p.host.shutdown();
}

#[test]
fn a_finished_job_reports_its_exit_code() {
    let p = InProc::new("");
    let r = p.call(
        "bash",
        json!({"command": "echo bye; exit 7", "run_in_background": true}),
    );
    let id = r["output"]["id"].as_str().expect("job id").to_string();
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let r = p.call("bash_output", json!({"id": id}));
        if r["output"]["running"] == false {
            assert_eq!(r["output"]["exit_code"], 7, "{r}");
            break;
        }
        assert!(Instant::now() < end, "job never finished");
        std::thread::sleep(Duration::from_millis(30));
    }
    p.host.shutdown();
}

#[test]
fn cleanup_kills_background_jobs() {
    let m = Marker::new("cleanup");
    let p = InProc::new("kill_grace_ms = 300");
    for _ in 0..2 {
        let r = p.call(
            "bash",
            json!({"command": marked(&m, "setsid sleep 1000 & sleep 1000"), "run_in_background": true}),
        );
        assert_eq!(r["status"], "success", "{r}");
    }
    // Both jobs' sleepers are running (seen in /proc) before the cleanup.
    let end = Instant::now() + Duration::from_secs(10);
    while m.survivors().len() < 2 {
        assert!(
            Instant::now() < end,
            "the jobs never started: {:?}",
            m.survivors()
        );
        std::thread::sleep(Duration::from_millis(10)); // between two looks at /proc
    }
    p.host.shutdown();
    m.assert_none_survive(Duration::from_secs(3));
}

#[test]
fn each_cli_call_cleans_up_its_background_jobs() {
    let m = Marker::new("clijob");
    let e = env("kill_grace_ms = 300");
    let c = e.call(
        "bash",
        json!({"command": marked(&m, "sleep 1000"), "run_in_background": true}),
    );
    c.assert_success();
    m.assert_none_survive(Duration::from_secs(3));
}

#[test]
fn max_concurrent_counts_background_jobs() {
    let m = Marker::new("maxc");
    let p = InProc::new("max_concurrent = 1\nkill_grace_ms = 300");
    let r = p.call(
        "bash",
        json!({"command": marked(&m, "sleep 1000"), "run_in_background": true}),
    );
    let id = r["output"]["id"].as_str().expect("job id").to_string();
    let r = p.call("bash", json!({"command": "true"}));
    assert_eq!(r["status"], "error", "{r}");
    assert_eq!(r["error"]["code"], "busy");
    assert!(
        r["error"]["message"].as_str().unwrap_or("").contains(&id),
        "lists the jobs: {r}"
    );
    p.call("bash_kill", json!({"id": id}));
    let r = p.call("bash", json!({"command": "true"}));
    assert_eq!(r["status"], "success", "{r}");
    p.host.shutdown();
}

#[test]
fn rlimits_apply_to_the_command() {
    let e = env("rlimits = { open_files = 37, cpu_secs = 100 }");
    let c = e.call("bash", json!({"command": "ulimit -n; ulimit -t"}));
    assert_eq!(c.assert_success()["stdout"], "37\n100\n");
}

/// RSS of this process in KiB.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}

#[test]
fn yes_does_not_grow_host_memory_past_the_cap() {
    // Not timed: 3 s of `yes` through the in-process host, then compare RSS.
    let p = InProc::new("timeout_secs = 3\nmax_output_bytes = 60000\nkill_grace_ms = 200");
    p.call("bash", json!({"command": "true"}));
    let before = rss_kib();
    let r = p.call("bash", json!({"command": "yes"}));
    assert_eq!(r["status"], "timeout", "{}", r["error"]);
    assert!(
        r["output"]["stdout_bytes"].as_u64().unwrap_or(0) > 10_000_000,
        "yes ran: {}",
        r["output"]["stdout_bytes"]
    );
    let grown = rss_kib().saturating_sub(before);
    assert!(grown < 8 * 1024, "host RSS grew by {grown} KiB");
    p.host.shutdown();
}
