//! Governance at its edges (#16, #17), from a red-team pass after the
//! merge: an idempotency key belongs to its principal, and a refusal from
//! validation leaves the host through the same redaction as a result.

mod common;

use common::{fixture_plan, Called, Env};

const ZEROS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Principal `a` and `b`, each granted everything.
fn two_principals() -> String {
    fixture_plan(&format!(
        "[[principals]]\nname = \"a\"\ntoken_sha256 = \"{ZEROS}\"\n\n\
         [[principals]]\nname = \"b\"\ntoken_sha256 = \"{ZEROS}\"\n\n\
         [[grants]]\nprincipal = \"a\"\ntools = [\"*\"]\n\n\
         [[grants]]\nprincipal = \"b\"\ntools = [\"*\"]\n"
    ))
}

#[test]
fn an_idempotency_key_belongs_to_its_principal() {
    let env = Env::new(&two_principals());
    let run = |who: &str| {
        env.call_with(&[
            "write_key",
            r#"{"key":"k","ms":5}"#,
            "--idempotency-key",
            "shared",
            "--as",
            who,
        ])
    };
    let first = run("a");
    let a_started = first.assert_success()["start_us"].clone();
    // `a` again: the same key replays a's result.
    let again = run("a");
    assert_eq!(
        again.assert_success()["start_us"],
        a_started,
        "{:?}",
        again.result
    );
    // `b` with the same key and input: its own call runs (not a's replay).
    let other = run("b");
    assert_ne!(
        other.assert_success()["start_us"],
        a_started,
        "b's call was answered with a's stored result: {:?}",
        other.result
    );
}

#[test]
fn a_validation_error_quoting_a_secret_is_redacted() {
    let env = Env::new(&fixture_plan(""));
    let out = env
        .command()
        .env("MY_TOKEN", "supersecretvalue123")
        .args(["call", "echo", r#"{"bogus_supersecretvalue123": 1}"#])
        .output()
        .expect("run toolhost");
    let called = Called::from_output(out);
    let text = called.result.to_string();
    assert_eq!(called.result["status"], "validation_error", "{text}");
    assert!(!text.contains("supersecretvalue123"), "the secret leaked: {text}");
    assert!(text.contains("[REDACTED:env:MY_TOKEN]"), "{text}");
}
