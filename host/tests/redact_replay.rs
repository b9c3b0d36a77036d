//! A replayed idempotent result is redacted once: when it was produced,
//! before it was stored, and not again on its way out of the replay (#19,
//! "no second copy"). The plan adds a pattern that matches the guardrail's
//! own replacement, so a second pass would show in the output and in
//! `metadata.redactions`.

mod common;

use common::{fixture_plan, Env};
use serde_json::json;

/// Matches `[REDACTED:github_token]`'s inside: harmless on a first pass
/// (no tool output holds it), visible on a second.
const REMATCH: &str = "\n[host.redact]\npatterns.rematch = 'REDACTED:[a-z_]+'\n";

#[test]
fn a_replayed_result_is_redacted_exactly_once() {
    let env = Env::new(&fixture_plan(REMATCH));
    let token = format!("ghp_{}", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8");
    let input = json!({"key": token, "ms": 1}).to_string();
    let run = || env.call_with(&["write_key", &input, "--idempotency-key", "once"]);

    let first = run();
    first.assert_success();
    assert_eq!(
        first.result["output"]["key"], "[REDACTED:github_token]",
        "{}",
        first.result
    );
    assert_eq!(first.result["metadata"]["redactions"], json!({"github_token": 1}));

    let replay = run();
    replay.assert_success();
    assert_eq!(
        replay.result["metadata"]["idempotent_replay"],
        json!(true),
        "the second call was not a replay: {}",
        replay.result
    );
    assert_eq!(
        replay.result["output"], first.result["output"],
        "the replay was redacted again on its way out"
    );
    assert_eq!(
        replay.result["metadata"]["redactions"],
        json!({"github_token": 1}),
        "the replay's redaction counts are not the stored ones: {}",
        replay.result
    );
}

/// The guardrail still covers every other refusal from stages 1–4: the
/// conflict answer for a key reused with another input quotes nothing of
/// the stored result, but a validation error quoting the input is redacted.
#[test]
fn refusals_that_are_not_replays_still_pass_the_guardrail() {
    let env = Env::new(&fixture_plan(REMATCH));
    let token = format!("ghp_{}", "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2");
    let bad = env.call_with(&["write_key", &json!({"key": 5, token.as_str(): 1}).to_string()]);
    assert_eq!(bad.status(), "validation_error", "{}", bad.result);
    assert!(!bad.result.to_string().contains(&token), "{}", bad.result);
    assert!(
        bad.message().contains("[REDACTED:github_token]"),
        "{}",
        bad.result
    );
}
