//! Stage 2 for a call by an alias profile's name: the family's schema
//! first (errors in the caller's terms), then the mapping, then the
//! canonical schema (errors translated back to the caller's parameters).

use serde_json::{json, Value};
use toolhost_core::wire::codes;
use toolhost_core::{Status, ToolResult};

use super::validate;
use crate::alias::Profile;
use crate::registry::Resolved;
use crate::tool::MountedTool;

/// The canonical input for a resolved call, or a `validation_error` in
/// the terms of the schema the caller used. `name` is the called name.
pub fn call(resolved: &Resolved, name: &str, id: &str, input: Value) -> Result<Value, ToolResult> {
    let tool = &resolved.tool;
    let Some(profile) = &resolved.profile else {
        validate::input(tool, id, &input)?;
        return Ok(input);
    };
    if !resolved.alternative {
        return through_profile(tool, profile, name, id, &input);
    }
    // A canonical name with a second shape (Amp's edit_file): the canonical
    // schema first; the family's when the input fits it instead.
    let canonical = validate::input(tool, id, &input);
    if canonical.is_ok() {
        return Ok(input);
    }
    let fits_profile = profile.validator().map(|v| v.is_valid(&input)).unwrap_or(false);
    if fits_profile || closer_to_profile(tool, profile, &input) {
        return through_profile(tool, profile, name, id, &input);
    }
    canonical.map(|()| input)
}

/// Whether `input` shares more top-level parameter names with the
/// profile's schema than with the canonical one (which error to show when
/// it fits neither).
fn closer_to_profile(tool: &MountedTool, profile: &Profile, input: &Value) -> bool {
    let Some(keys) = input.as_object() else {
        return false;
    };
    let canonical: Vec<&str> = tool
        .spec
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let theirs: Vec<&str> = profile.params().collect();
    let count = |names: &[&str]| keys.keys().filter(|k| names.contains(&k.as_str())).count();
    count(&theirs) > count(&canonical)
}

fn through_profile(
    tool: &MountedTool,
    profile: &Profile,
    name: &str,
    id: &str,
    input: &Value,
) -> Result<Value, ToolResult> {
    let label = format!("'{name}' ({}'s {})", profile.family_label(), profile.name());
    let validator = profile
        .validator()
        .map_err(|e| ToolResult::failure(id, Status::Error, codes::INTERNAL, e.to_string()))?;
    if !validator.is_valid(input) {
        let violations = validate::violations(validator, input);
        let params: Vec<&str> = profile.params().collect();
        return Err(refusal(
            id,
            format!(
                "invalid input for {label}: {}. Its parameters: {}",
                validate::listing(&violations),
                params.join(", ")
            ),
            violations,
            profile,
            "alias",
        ));
    }
    let mapped = profile.to_canonical(input).map_err(|e| {
        refusal(
            id,
            format!("invalid input for {label}: {e}"),
            vec![json!({"pointer": "", "message": e.to_string()})],
            profile,
            "mapping",
        )
    })?;
    let canonical = tool
        .validator()
        .map_err(|e| ToolResult::failure(id, Status::Error, codes::INTERNAL, e.to_string()))?;
    if canonical.is_valid(&mapped) {
        return Ok(mapped);
    }
    let violations: Vec<Value> = validate::violations(canonical, &mapped)
        .into_iter()
        .map(|v| in_caller_terms(profile, input, &mapped, v))
        .collect();
    Err(refusal(
        id,
        format!(
            "invalid input for {label}: {}. (It runs as toolhost's '{}', which refused the mapped input; \
             run `toolhost describe {}` for what that tool accepts.)",
            validate::listing(&violations),
            tool.name(),
            tool.name()
        ),
        violations,
        profile,
        "canonical",
    ))
}

/// A canonical violation with the pointer's first segment and the quoted
/// parameter names in its message turned into the caller's names.
fn in_caller_terms(profile: &Profile, input: &Value, mapped: &Value, mut violation: Value) -> Value {
    let pointer = violation["pointer"].as_str().unwrap_or("").to_string();
    let mut segments = pointer.split('/').skip(1);
    let mut converted = None;
    if let Some(first) = segments.next() {
        let key = first.replace("~1", "/").replace("~0", "~");
        if let Some(caller) = profile.caller_param(&key) {
            let (given, became) = (&input[caller], &mapped[key.as_str()]);
            if given != became {
                converted = Some(format!(
                    " ('{caller}': {given} was passed on as {key} = {became})"
                ));
            }
            let rest: Vec<&str> = segments.collect();
            let escaped = caller.replace('~', "~0").replace('/', "~1");
            let mut translated = format!("/{escaped}");
            for segment in rest {
                translated.push('/');
                translated.push_str(segment);
            }
            violation["pointer"] = json!(translated);
        }
    }
    if let (Some(message), Some(keys)) = (violation["message"].as_str(), mapped.as_object()) {
        let mut message = message.to_string();
        for key in keys.keys() {
            if let Some(caller) = profile.caller_param(key).filter(|c| *c != key) {
                message = message
                    .replace(&format!("'{key}'"), &format!("'{caller}'"))
                    .replace(&format!("\"{key}\""), &format!("\"{caller}\""));
            }
        }
        message.push_str(converted.as_deref().unwrap_or(""));
        violation["message"] = json!(message);
    }
    violation
}

fn refusal(id: &str, message: String, violations: Vec<Value>, profile: &Profile, stage: &str) -> ToolResult {
    ToolResult::failure(id, Status::ValidationError, codes::INVALID_INPUT, message).with_details(json!({
        "violations": violations,
        "alias": profile.name(),
        "family": profile.family(),
        "tool": profile.tool(),
        "stage": stage,
    }))
}
