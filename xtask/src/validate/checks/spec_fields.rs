//! `spec.*`: the rest of a ToolSpec: its shape, output schema, effect,
//! annotations, resource keys and aliases.

use serde_json::Value;
use toolhost_core::{Effect, ToolSpec};

use super::input_schema::schema_errors;
use super::names::first_party_owner;
use crate::validate::check::{names as n, CheckResult, Verdict};

/// `spec.format`: the spec parses as a ToolSpec (the host refuses it otherwise).
pub fn format(spec: &Value, parsed: &Result<ToolSpec, serde_json::Error>, tool: &str) -> CheckResult {
    let mut v = Verdict::new();
    match parsed {
        Err(e) if !spec.is_object() => v.fail(format!("the spec is not a JSON object ({e})")),
        Err(e) => v.fail(format!("the spec is not a valid ToolSpec: {e}")),
        Ok(parsed) => {
            if !parsed.version.is_empty() && semver::Version::parse(&parsed.version).is_err() {
                v.warn(format!("the tool's version '{}' is not semver", parsed.version));
            }
        }
    }
    v.finish(n::SPEC_FORMAT, Some(tool), "a well-formed ToolSpec")
}

/// `spec.output_schema`.
pub fn output_schema(spec: &Value, tool: &str) -> CheckResult {
    let mut v = Verdict::new();
    match spec.get("output_schema") {
        None | Some(Value::Null) => {
            return CheckResult::pass(n::SPEC_OUTPUT_SCHEMA, Some(tool), "none declared")
        }
        Some(schema) => {
            for error in schema_errors(schema) {
                v.fail(format!("the output schema is not a valid JSON Schema: {error}"));
            }
        }
    }
    v.finish(n::SPEC_OUTPUT_SCHEMA, Some(tool), "a valid JSON Schema")
}

fn known_effect(spec: &Value) -> Option<Effect> {
    let name = spec.get("effect").and_then(Value::as_str)?;
    Effect::ALL.into_iter().find(|e| e.as_str() == name)
}

/// `spec.effect`.
pub fn effect(spec: &Value, tool: &str) -> CheckResult {
    let mut v = Verdict::new();
    match (spec.get("effect"), known_effect(spec)) {
        (_, Some(_)) => {}
        (None, _) => v.fail("the spec has no `effect`"),
        (Some(other), None) => v.fail(format!(
            "unknown effect {other}; use one of {}",
            Effect::ALL.map(|e| e.as_str()).join(", ")
        )),
    }
    let shown = spec
        .get("effect")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_string();
    v.finish(n::SPEC_EFFECT, Some(tool), shown)
}

/// `spec.annotations`: contradictions fail, a claim of more harm than the
/// effect implies is only a warning (it errs on the safe side… for reads).
pub fn annotations(spec: &Value, tool: &str) -> CheckResult {
    let mut v = Verdict::new();
    let Some(effect) = known_effect(spec) else {
        return CheckResult::skip(n::SPEC_ANNOTATIONS, Some(tool), "no known effect to compare with");
    };
    let flag = |key: &str| {
        spec.get("annotations")
            .and_then(|a| a.get(key))
            .and_then(Value::as_bool)
    };
    let implied = effect.default_annotations();
    let read_only = flag("read_only").unwrap_or(false);
    let destructive = flag("destructive").unwrap_or(false);
    if read_only && !implied.read_only {
        v.fail(format!(
            "annotated read_only, but its effect '{effect}' changes the world"
        ));
    }
    if read_only && destructive {
        v.fail("annotated both read_only and destructive");
    }
    if implied.destructive && flag("destructive") == Some(false) && !read_only {
        v.warn(format!(
            "annotated not destructive, though effect '{effect}' usually is; make sure it only adds"
        ));
    }
    if !read_only && implied.read_only {
        v.warn(format!(
            "not annotated read_only, though its effect '{effect}' is; clients will ask for approval needlessly"
        ));
    }
    if implied.open_world && flag("open_world") == Some(false) {
        v.warn(format!(
            "annotated closed-world, though effect '{effect}' reaches beyond this machine"
        ));
    }
    v.finish(
        n::SPEC_ANNOTATIONS,
        Some(tool),
        format!("agree with effect '{effect}'"),
    )
}

/// `spec.resource_keys`: each key's `arg` is a JSON pointer whose first
/// step is a property of the input schema.
pub fn resource_keys(spec: &Value, tool: &str) -> CheckResult {
    let mut v = Verdict::new();
    let keys = spec
        .get("execution")
        .and_then(|e| e.get("resource_keys"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let schema = spec.get("input_schema").unwrap_or(&Value::Null);
    let props = schema.get("properties").and_then(Value::as_object);
    for key in &keys {
        let Some(arg) = key.get("arg").and_then(Value::as_str) else {
            v.fail(format!("resource key {key} has no `arg` pointer"));
            continue;
        };
        let Some(first) = arg
            .strip_prefix('/')
            .map(|rest| rest.split('/').next().unwrap_or(""))
        else {
            v.fail(format!(
                "resource key '{arg}' is not a JSON pointer (start it with '/')"
            ));
            continue;
        };
        let first = first.replace("~1", "/").replace("~0", "~");
        if !props.is_some_and(|p| p.contains_key(&first)) {
            v.fail(format!(
                "resource key '{arg}' points at '{first}', which is not an input property"
            ));
        }
    }
    v.finish(
        n::SPEC_RESOURCE_KEYS,
        Some(tool),
        format!("{} keys, all on real properties", keys.len()),
    )
}

/// `spec.aliases`: aliases are non-empty, distinct, and collide with no
/// other name or alias in the module; taking a first-party name warns.
pub fn aliases(specs: &[Value], index: usize, tool: &str, module: &str) -> CheckResult {
    let mut v = Verdict::new();
    let aliases_of = |spec: &Value| -> Vec<String> {
        spec.get("aliases")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default()
    };
    let own = aliases_of(&specs[index]);
    let own_name = specs[index].get("name").and_then(Value::as_str).unwrap_or("");
    for (i, alias) in own.iter().enumerate() {
        if alias.trim().is_empty() {
            v.fail("an alias is empty");
            continue;
        }
        if alias == own_name {
            v.warn(format!("alias '{alias}' repeats the tool's own name"));
        }
        if own[..i].contains(alias) {
            v.fail(format!("alias '{alias}' is listed twice"));
        }
        for (j, other) in specs.iter().enumerate().filter(|(j, _)| *j != index) {
            let other_name = other.get("name").and_then(Value::as_str).unwrap_or("");
            if other_name == alias {
                v.fail(format!("alias '{alias}' is the name of another tool (#{j})"));
            }
            if aliases_of(other).contains(alias) {
                v.fail(format!("alias '{alias}' is also an alias of '{other_name}'"));
            }
        }
        if let Some(owner) = first_party_owner(alias).filter(|o| *o != module) {
            v.warn(format!(
                "alias '{alias}' belongs to the first-party module '{owner}'; a plan mounting both fails"
            ));
        }
    }
    v.finish(
        n::SPEC_ALIASES,
        Some(tool),
        format!("{} aliases, no collisions", own.len()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::check::Outcome;
    use serde_json::json;

    #[test]
    fn fires() {
        let s = json!({"name": "t", "effect": "irreversible", "annotations": {"read_only": true}});
        assert_eq!(annotations(&s, "t").outcome, Outcome::Fail);
        assert_eq!(effect(&json!({"effect": "nuke"}), "t").outcome, Outcome::Fail);
        let keys = json!({"input_schema": {"properties": {"a": {}}},
            "execution": {"resource_keys": [{"arg": "/b", "mode": "read"}]}});
        assert_eq!(resource_keys(&keys, "t").outcome, Outcome::Fail);
        let specs = [json!({"name": "a", "aliases": ["b"]}), json!({"name": "b"})];
        assert_eq!(aliases(&specs, 0, "a", "m").outcome, Outcome::Fail);
        assert_eq!(
            output_schema(&json!({"output_schema": {"type": 5}}), "t").outcome,
            Outcome::Fail
        );
    }
}
