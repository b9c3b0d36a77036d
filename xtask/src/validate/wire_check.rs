//! Is a tool's answer a well-formed `ToolResult` in the wire format?

use serde_json::Value;
use toolhost_core::wire::codes;
use toolhost_core::{Status, ToolResult};

/// One thing wrong with a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Breaks the contract (or the tool panicked).
    Fail(String),
    /// Legal, but unhelpful to a model.
    Warn(String),
}

/// A result text, parsed as far as possible, with its problems.
#[derive(Debug)]
pub struct Checked {
    /// The parsed result, when it parses.
    pub result: Option<ToolResult>,
    /// What is wrong with it.
    pub problems: Vec<Problem>,
}

/// Fragments of Rust debug output and backtraces, which a model cannot act on.
const DUMP_MARKERS: [&str; 6] = [
    "stack backtrace",
    "RUST_BACKTRACE",
    "panicked at",
    "Os { code:",
    "Custom { kind:",
    "Error { kind:",
];

/// Checks `text`, the answer to the call sent with `call_id`.
pub fn check(text: &str, call_id: &str) -> Checked {
    let mut problems = Vec::new();
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            problems.push(Problem::Fail(format!(
                "the result is not JSON ({e}): {}",
                clip(text, 120)
            )));
            return Checked {
                result: None,
                problems,
            };
        }
    };
    let Some(object) = value.as_object() else {
        problems.push(Problem::Fail(format!(
            "the result is not a JSON object: {}",
            clip(text, 120)
        )));
        return Checked {
            result: None,
            problems,
        };
    };
    for key in ["tool_call_id", "status"] {
        if !object.contains_key(key) {
            problems.push(Problem::Fail(format!("the result has no `{key}`")));
        }
    }
    for key in ["success", "output", "metadata"] {
        if !object.contains_key(key) {
            problems.push(Problem::Warn(format!("the result has no `{key}`")));
        }
    }
    let result: ToolResult = match serde_json::from_value(value.clone()) {
        Ok(r) => r,
        Err(e) => {
            problems.push(Problem::Fail(format!("the result is not a ToolResult: {e}")));
            return Checked {
                result: None,
                problems,
            };
        }
    };
    if result.tool_call_id != call_id {
        problems.push(Problem::Fail(format!(
            "the result's tool_call_id is '{}', not the call's '{call_id}'",
            result.tool_call_id
        )));
    }
    if object.contains_key("success") && result.success != (result.status == Status::Success) {
        problems.push(Problem::Fail(format!(
            "`success` is {} but `status` is {}",
            result.success, result.status
        )));
    }
    match &result.error {
        None if result.status != Status::Success => problems.push(Problem::Fail(format!(
            "status {} without an `error` saying why",
            result.status
        ))),
        Some(error) => {
            if error.code == codes::PANICKED {
                problems.push(Problem::Fail(format!(
                    "the tool panicked: {}",
                    clip(&error.message, 200)
                )));
            } else if result.status != Status::Success && error.message.trim().is_empty() {
                problems.push(Problem::Fail(format!(
                    "status {} with an empty error message",
                    result.status
                )));
            } else if let Some(marker) = DUMP_MARKERS.iter().find(|m| error.message.contains(*m)) {
                problems.push(Problem::Warn(format!(
                    "the error message looks like a Rust debug dump or backtrace (`{marker}`): {}",
                    clip(&error.message, 160)
                )));
            }
        }
        None => {}
    }
    Checked {
        result: Some(result),
        problems,
    }
}

/// At most `n` characters of `text`, with an ellipsis when cut.
pub fn clip(text: &str, n: usize) -> String {
    if text.chars().count() <= n {
        text.to_string()
    } else {
        let mut out: String = text.chars().take(n).collect();
        out.push('…');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fails(c: &Checked) -> usize {
        c.problems
            .iter()
            .filter(|p| matches!(p, Problem::Fail(_)))
            .count()
    }

    #[test]
    fn good_results_pass() {
        let ok = r#"{"tool_call_id":"a","status":"success","success":true,"output":1,"metadata":{"duration_ms":1}}"#;
        let c = check(ok, "a");
        assert!(c.problems.is_empty(), "{:?}", c.problems);
        let err = r#"{"tool_call_id":"a","status":"error","success":false,"output":null,
            "error":{"code":"not_found","message":"no such file: x","retryable":false},"metadata":{"duration_ms":1}}"#;
        assert!(check(err, "a").problems.is_empty());
    }

    #[test]
    fn bad_results_fail() {
        assert_eq!(fails(&check("nope", "a")), 1);
        assert_eq!(fails(&check("[]", "a")), 1);
        let wrong_id = r#"{"tool_call_id":"b","status":"success","success":true,"output":1,"metadata":{}}"#;
        assert_eq!(fails(&check(wrong_id, "a")), 1);
        let no_error = r#"{"tool_call_id":"a","status":"error","success":false,"output":1,"metadata":{}}"#;
        assert_eq!(fails(&check(no_error, "a")), 1);
        let panicked = r#"{"tool_call_id":"a","status":"error","success":false,"output":null,
            "error":{"code":"panicked","message":"boom"},"metadata":{}}"#;
        assert_eq!(fails(&check(panicked, "a")), 1);
        let unknown = r#"{"tool_call_id":"a","status":"weird","success":false,"output":1,"metadata":{}}"#;
        assert_eq!(fails(&check(unknown, "a")), 1);
    }
}
