//! `descriptions.*`: a tool's description is present and within budget.
//!
//! A model reads every description on every turn, so a missing one makes a
//! tool unusable and a long one costs tokens on every request.

use serde_json::Value;

use crate::validate::check::{names as n, CheckResult, Verdict};

/// Above this many characters a description draws a warning.
pub const WARN_CHARS: usize = 1024;
/// Above this many characters a description fails.
pub const MAX_CHARS: usize = 4096;
/// Below this many characters a description draws a warning (too terse to help).
pub const MIN_CHARS: usize = 12;

fn description(spec: &Value) -> Option<&str> {
    spec.get("description").and_then(Value::as_str)
}

/// `descriptions.present`.
pub fn present(spec: &Value, tool: &str) -> CheckResult {
    let mut v = Verdict::new();
    match description(spec).map(str::trim) {
        None => v.fail("the spec has no `description` string"),
        Some("") => v.fail("the description is empty: a model cannot know when to use this tool"),
        Some(d) if d.chars().count() < MIN_CHARS => v.warn(format!(
            "the description '{d}' is too short to tell a model what the tool does"
        )),
        Some(_) => {}
    }
    v.finish(n::DESCRIPTIONS_PRESENT, Some(tool), "present")
}

/// `descriptions.length`.
pub fn length(spec: &Value, tool: &str) -> CheckResult {
    let mut v = Verdict::new();
    let chars = description(spec).map(|d| d.chars().count()).unwrap_or(0);
    if chars > MAX_CHARS {
        v.fail(format!(
            "the description has {chars} characters; the budget is {MAX_CHARS}"
        ));
    } else if chars > WARN_CHARS {
        v.warn(format!(
            "the description has {chars} characters; keep it under {WARN_CHARS} (every request pays for it)"
        ));
    }
    v.finish(n::DESCRIPTIONS_LENGTH, Some(tool), format!("{chars} characters"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::check::Outcome;
    use serde_json::json;

    #[test]
    fn fires() {
        assert_eq!(present(&json!({"description": " "}), "t").outcome, Outcome::Fail);
        assert_eq!(
            present(&json!({"description": "Reads a file."}), "t").outcome,
            Outcome::Pass
        );
        let long = "x".repeat(MAX_CHARS + 1);
        assert_eq!(
            length(&json!({ "description": long }), "t").outcome,
            Outcome::Fail
        );
    }
}
