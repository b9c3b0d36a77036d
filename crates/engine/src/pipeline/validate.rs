//! Stage 2, validate: the input against the tool's JSON Schema, before any
//! policy or module code sees it. Every violation is listed by JSON pointer.

use serde_json::{json, Value};
use toolhost_core::wire::codes;
use toolhost_core::{Status, ToolResult};

use crate::tool::MountedTool;

/// At most this many violations are listed (a huge wrong input must not
/// produce a huge error).
const MAX_VIOLATIONS: usize = 20;

/// `Ok` when the input is valid; a `validation_error` otherwise.
pub fn input(tool: &MountedTool, id: &str, input: &Value) -> Result<(), ToolResult> {
    let validator = tool
        .validator()
        .map_err(|e| ToolResult::failure(id, Status::Error, codes::INTERNAL, e.to_string()))?;
    if validator.is_valid(input) {
        return Ok(());
    }
    let violations = violations(validator, input);
    let listing = listing(&violations);
    Err(ToolResult::failure(
        id,
        Status::ValidationError,
        codes::INVALID_INPUT,
        format!(
            "invalid input for '{}': {listing}. Run `toolhost describe {}` for the schema",
            tool.name(),
            tool.name()
        ),
    )
    .with_details(json!({ "violations": violations })))
}

/// Every way `instance` breaks the schema (at most [`MAX_VIOLATIONS`]), as
/// `{pointer, message}` objects; shared by the input and output checks.
pub(super) fn violations(validator: &jsonschema::Validator, instance: &Value) -> Vec<Value> {
    validator
        .iter_errors(instance)
        .take(MAX_VIOLATIONS)
        .map(|e| json!({ "pointer": e.instance_path().as_str(), "message": short(&e.to_string()) }))
        .collect()
}

/// The violations as one line for a refusal's message:
/// `pointer: message; …`, `(root)` for the input itself. Shared with the
/// alias path so both refusals read the same.
pub(super) fn listing(violations: &[Value]) -> String {
    violations
        .iter()
        .map(|v| {
            let pointer = v["pointer"].as_str().unwrap_or("");
            let at = if pointer.is_empty() { "(root)" } else { pointer };
            format!("{at}: {}", v["message"].as_str().unwrap_or(""))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Keeps a message short: a violation quoting a huge value quotes its start.
fn short(message: &str) -> String {
    const MAX: usize = 300;
    if message.len() <= MAX {
        return message.to_string();
    }
    let mut cut = MAX;
    while !message.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &message[..cut])
}
