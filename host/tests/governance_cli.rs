//! Issue #16 from the CLI: a deprecated tool before and after its sunset,
//! version pins, `--as` and `--run-id`, policy version in records, and
//! output redaction (each credential kind, the host's secret variables, a
//! secret across the head/tail truncation boundary, `[host.redact]`).

mod common;

use common::{module_file, Env};
use serde_json::{json, Value};

fn governed_plan(sunset: &str, extra: &str) -> String {
    module_file("toolhost_governed");
    format!(
        "[host]\naudit_log = \"audit.jsonl\"\n\n[[tools]]\nmodule = \"fixture\"\n\n[[tools]]\nmodule = \"governed\"\n[tools.config]\nsunset = {sunset:?}\n\n{extra}"
    )
}

#[test]
fn a_deprecated_tool_warns_before_its_sunset_and_is_refused_after() {
    let env = Env::new(&governed_plan("2999-12-31", ""));
    let before = env.call("old_greet", json!({"name": "ada"}));
    before.assert_success();
    let notice = &before.result["metadata"]["deprecated"];
    assert_eq!(notice["replacement"], "greet", "{}", before.result);
    assert_eq!(notice["since"], "1.2.0");
    assert_eq!(notice["sunset"], "2999-12-31");
    let check = env.run(&["check"]);
    let stdout = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("warn  'old_greet' is deprecated since 1.2.0; use 'greet' instead; calls are refused after 2999-12-31"),
        "{stdout}"
    );
    let list = env.run(&["list", "--json"]);
    assert!(
        String::from_utf8_lossy(&list.stderr).contains("'old_greet' is deprecated"),
        "{}",
        String::from_utf8_lossy(&list.stderr)
    );

    env.set_plan(&governed_plan("2000-01-01", ""));
    let after = env.call("old_greet", json!({"name": "ada"}));
    assert_eq!(after.status(), "policy_denied", "{}", after.result);
    assert_eq!(after.result["error"]["code"], "deprecated_tool");
    after.assert_says("use 'greet' instead");
    let check = env.run(&["check"]);
    assert!(
        String::from_utf8_lossy(&check.stdout).contains("its sunset 2000-01-01 has passed"),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    // The replacement works, and the audit record says why the old one did not.
    env.call("greet", json!({"name": "ada"})).assert_success();
    let log = std::fs::read_to_string(env.path().join("audit.jsonl")).expect("log");
    assert!(log.contains("\"decision\":\"deprecated\""), "{log}");
}

#[test]
fn a_version_pin_the_tool_misses_fails_check_and_the_mount() {
    let env = Env::new(&governed_plan(
        "2999-12-31",
        "[policy.tools.greet]\nversion = \"^1\"\n",
    ));
    let check = env.run(&["check"]);
    let stdout = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("[policy.tools.greet] version = \"^1\", but the mounted 'greet' is 2.0.0"),
        "{stdout}"
    );
    assert_eq!(
        env.run(&["call", "greet", r#"{"name":"x"}"#]).status.code(),
        Some(2)
    );
    env.set_plan(&governed_plan(
        "2999-12-31",
        "[policy.tools.greet]\nversion = \"^2\"\n",
    ));
    env.call("greet", json!({"name": "x"})).assert_success();
    env.set_plan(&governed_plan(
        "2999-12-31",
        "[policy.tools.greet]\nversion = \"one\"\n",
    ));
    let out = env.run(&["check"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not a semver requirement"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn as_and_run_id_select_grants_and_count_per_run() {
    let extra = "[policy]\nversion = \"v7\"\n\n[[principals]]\nname = \"ci\"\ntoken_sha256 = \"0000000000000000000000000000000000000000000000000000000000000000\"\n\n[[grants]]\nprincipal = \"ci\"\ntools = [\"echo\"]\nmax_calls = 2\n";
    let env = Env::new(&governed_plan("2999-12-31", extra));
    // The local principal has no grant.
    let local = env.call("echo", json!({"message": "x"}));
    assert_eq!(local.result["error"]["code"], "grant_missing", "{}", local.result);
    // --as ci, three calls in one run: the third is over the limit.
    let line = json!({"name": "echo", "input": {"message": "x"}});
    let (results, code) = env.batch(
        &[line.clone(), line.clone(), line.clone()],
        &["--as", "ci", "--run-id", "run-9", "--agent", "planner"],
    );
    assert_eq!(code, 1);
    assert_eq!(results[0]["status"], "success", "{}", results[0]);
    assert_eq!(results[1]["status"], "success");
    assert_eq!(results[2]["error"]["code"], "grant_missing");
    assert_eq!(results[2]["error"]["details"]["reason"], "max_calls");
    let log = std::fs::read_to_string(env.path().join("audit.jsonl")).expect("log");
    let records: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).expect("record"))
        .collect();
    let ok = records
        .iter()
        .find(|r| r["principal"] == "ci")
        .expect("ci's record");
    assert_eq!(ok["grant"], "grants[0]");
    assert_eq!(ok["policy_version"], "v7");
    assert_eq!(ok["context"], json!({"run_id": "run-9", "agent": "planner"}));
    // The tool is handed the principal and the context in its call.
    env.set_plan(&governed_plan(
        "2999-12-31",
        &extra.replace("tools = [\"echo\"]", "tools = [\"whoami\"]"),
    ));
    let out = env.run(&[
        "call", "whoami", "--as", "ci", "--run-id", "run-3", "--tenant", "acme",
    ]);
    let called = common::Called::from_output(out);
    assert_eq!(
        called.assert_success(),
        &json!({"principal": "ci", "context": {"run_id": "run-3", "tenant": "acme"}})
    );
    // --as names a principal the plan knows.
    let out = env.run(&["call", "echo", r#"{"message":"x"}"#, "--as", "mallory"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--as mallory: no such principal"));
    // Context ids are checked.
    let out = env.run(&[
        "call",
        "echo",
        r#"{"message":"x"}"#,
        "--as",
        "ci",
        "--run-id",
        &"r".repeat(300),
    ]);
    let called = common::Called::from_output(out);
    assert_eq!(called.status(), "validation_error", "{}", called.result);
}

/// Fake credentials of every built-in kind, assembled at run time.
fn credentials() -> Vec<(&'static str, String)> {
    vec![
        ("aws_access_key", format!("AKIA{}", "IOSFODNN7EXAMPLE")),
        ("gcp_api_key", format!("AIza{}", "SyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW")),
        ("github_token", format!("ghp_{}", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8")),
        ("github_token", format!("github_pat_{}", "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz")),
        ("gitlab_token", format!("glpat-{}", "xYz123-AbC456_dEf789gh")),
        (
            "private_key",
            format!(
                "-----BEGIN RSA {}-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n-----END RSA {}-----",
                "PRIVATE KEY", "PRIVATE KEY"
            ),
        ),
        (
            "jwt",
            format!("eyJhbGciOiJIUzI1NiJ9.{}.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk", "eyJzdWIiOiIxMjM0NTY3ODkwIn0"),
        ),
        ("slack_token", format!("xoxb-{}", "123456789012-1234567890123-AbCdEfGhIjKl")),
        ("slack_webhook", format!("https://hooks.slack.com/{}", "services/T0000/B0000/XXXXXXXXXXXXXXXX")),
        ("stripe_key", format!("sk_live_{}", "4eC39HqLyjWDarjtT1zdp7dc")),
    ]
}

#[test]
fn every_credential_kind_and_secret_variable_is_redacted() {
    let env = Env::new(&governed_plan("2999-12-31", ""));
    let secret_var = "env-secret-value-42";
    let mut message = String::from("start ");
    for (_, value) in credentials() {
        message.push_str(&value);
        message.push_str(" | ");
    }
    message.push_str(secret_var);
    message.push_str(" end");
    let out = env
        .command()
        .args([
            "call",
            "echo",
            &json!({"message": message, "data": {"nested": secret_var}}).to_string(),
        ])
        .env("GOV_TEST_API_TOKEN", secret_var)
        .output()
        .expect("run");
    let called = common::Called::from_output(out);
    let output = called.assert_success().to_string();
    for (kind, value) in credentials() {
        assert!(!output.contains(&value), "{kind} leaked: {output}");
        assert!(output.contains(&format!("[REDACTED:{kind}]")), "{kind}: {output}");
    }
    assert!(!output.contains(secret_var), "{output}");
    assert!(output.contains("[REDACTED:env:GOV_TEST_API_TOKEN]"), "{output}");
    assert_eq!(
        called.result["output"]["data"]["nested"],
        "[REDACTED:env:GOV_TEST_API_TOKEN]"
    );
    let counts = &called.result["metadata"]["redactions"];
    assert_eq!(counts["github_token"], 2, "{counts}");
    assert_eq!(counts["env:GOV_TEST_API_TOKEN"], 2, "{counts}");
    assert_eq!(counts["private_key"], 1, "{counts}");
    // The audit record counts them too, and holds no secret.
    let log = std::fs::read_to_string(env.path().join("audit.jsonl")).expect("log");
    assert!(log.contains("\"redactions\":{"), "{log}");
    assert!(!log.contains(secret_var));
}

#[test]
fn a_secret_across_the_truncation_boundary_is_redacted_whole() {
    // 1 KiB of output allowed; 6 KiB of back-to-back tokens: wherever the
    // head ends and the tail starts, a token is cut there.
    let plan = governed_plan("2999-12-31", "").replacen("[host]\n", "[host]\nmax_output_bytes = 1024\n", 1);
    let env = Env::new(&plan);
    let token = format!("ghp_{}", "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2");
    let message = vec![token.as_str(); 150].join(" ");
    let called = env.call("echo", json!({"message": message}));
    let output = called.assert_success().to_string();
    assert!(
        called.result["metadata"]["truncated"].is_object(),
        "{}",
        called.result
    );
    assert!(!output.contains("ghp_"), "a cut token leaked: {output}");
    for window in token.as_bytes()[4..].windows(6) {
        let piece = std::str::from_utf8(window).expect("ascii");
        assert!(
            !output.contains(piece),
            "a piece of the token ({piece}) leaked: {output}"
        );
    }
    assert_eq!(called.result["metadata"]["redactions"]["github_token"], 150);
}

#[test]
fn host_redact_tunes_the_guardrail() {
    let extra_host =
        "[host.redact]\npatterns = { ticket = \"TICKET-[0-9]{6}\" }\nvariables = [\"GOV_PLAIN\"]\n";
    let plan = governed_plan("2999-12-31", "").replacen("[[tools]]", &format!("{extra_host}\n[[tools]]"), 1);
    let env = Env::new(&plan);
    let out = env
        .command()
        .args([
            "call",
            "echo",
            r#"{"message":"TICKET-123456 plainly-not-secret-name"}"#,
        ])
        .env("GOV_PLAIN", "plainly-not-secret-name")
        .output()
        .expect("run");
    let called = common::Called::from_output(out);
    assert_eq!(
        called.assert_success()["message"],
        "[REDACTED:ticket] [REDACTED:env:GOV_PLAIN]"
    );
    // Off: nothing is touched.
    let off = governed_plan("2999-12-31", "").replacen(
        "[[tools]]",
        "[host.redact]\nenabled = false\n\n[[tools]]",
        1,
    );
    env.set_plan(&off);
    let token = format!("ghp_{}", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8");
    let called = env.call("echo", json!({"message": token}));
    assert_eq!(called.assert_success()["message"], json!(token));
    // A bad pattern is a plan error.
    env.set_plan(&governed_plan("2999-12-31", "").replacen(
        "[[tools]]",
        "[host.redact]\npatterns = { bad = \"(\" }\n\n[[tools]]",
        1,
    ));
    let out = env.run(&["check"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("[host.redact] patterns.bad"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
