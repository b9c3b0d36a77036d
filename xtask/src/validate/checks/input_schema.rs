//! `input_schema.*`: the input schema is a valid JSON Schema of type
//! object, its `required` names real properties, and every property says
//! what it is for.

use serde_json::Value;

use crate::validate::check::{names as n, CheckResult, Verdict};
use crate::validate::wire_check::clip;

/// Validates `schema` against its meta-schema and compiles it; the errors
/// found (at most five), empty when it is a usable schema.
pub fn schema_errors(schema: &Value) -> Vec<String> {
    let meta = std::panic::catch_unwind(|| match jsonschema::meta::validator_for(schema) {
        Ok(validator) => validator
            .iter_errors(schema)
            .take(5)
            .map(|e| {
                let at = e.instance_path().to_string();
                let at = if at.is_empty() { "/".to_string() } else { at };
                format!("at {at}: {}", clip(&e.to_string(), 200))
            })
            .collect::<Vec<_>>(),
        Err(e) => vec![format!("its meta-schema cannot be resolved: {e}")],
    });
    let mut errors = match meta {
        Ok(errors) => errors,
        Err(_) => vec!["its `$schema` names no meta-schema this validator knows".to_string()],
    };
    if errors.is_empty() {
        let compiled = std::panic::catch_unwind(|| jsonschema::validator_for(schema).map(|_| ()));
        match compiled {
            Ok(Ok(())) => {}
            Ok(Err(e)) => errors.push(format!("it does not compile: {}", clip(&e.to_string(), 200))),
            Err(_) => errors.push("compiling it panicked the schema library".to_string()),
        }
    }
    errors
}

/// The schema's root, following a top-level `$ref` into the document.
fn root(schema: &Value) -> &Value {
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
        .and_then(|pointer| schema.pointer(pointer))
        .unwrap_or(schema)
}

/// `input_schema.meta_schema`.
pub fn meta(spec: &Value, tool: &str) -> CheckResult {
    let mut v = Verdict::new();
    match spec.get("input_schema") {
        None | Some(Value::Null) => v.fail("the spec has no input_schema"),
        Some(schema) => {
            for error in schema_errors(schema) {
                v.fail(format!("not a valid JSON Schema: {error}"));
            }
        }
    }
    v.finish(n::INPUT_SCHEMA_META, Some(tool), "valid against its meta-schema")
}

/// `input_schema.type_object`.
pub fn object(spec: &Value, tool: &str) -> CheckResult {
    let mut v = Verdict::new();
    let schema = spec.get("input_schema").map(root).unwrap_or(&Value::Null);
    let is_object = match schema.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.len() == 1 && ts[0] == "object",
        _ => false,
    };
    if !is_object {
        v.fail(format!(
            "the input schema's type is {}, not \"object\" (MCP and model APIs require an object)",
            schema
                .get("type")
                .map(Value::to_string)
                .unwrap_or_else(|| "missing".into())
        ));
    }
    v.finish(n::INPUT_SCHEMA_OBJECT, Some(tool), "type object")
}

/// The top-level `properties` map, if any.
fn properties(schema: &Value) -> Option<&serde_json::Map<String, Value>> {
    root(schema).get("properties").and_then(Value::as_object)
}

/// `input_schema.required`.
pub fn required(spec: &Value, tool: &str) -> CheckResult {
    let mut v = Verdict::new();
    let schema = spec.get("input_schema").unwrap_or(&Value::Null);
    match root(schema).get("required") {
        None => {}
        Some(Value::Array(names)) => {
            let props = properties(schema);
            for name in names {
                match name.as_str() {
                    None => v.fail(format!("`required` lists {name}, which is not a property name")),
                    Some(name) if !props.is_some_and(|p| p.contains_key(name)) => v.fail(format!(
                        "`required` names '{name}', which is not among the properties"
                    )),
                    Some(_) => {}
                }
            }
        }
        Some(other) => v.fail(format!("`required` is {other}, not an array of names")),
    }
    v.finish(
        n::INPUT_SCHEMA_REQUIRED,
        Some(tool),
        "names only existing properties",
    )
}

/// `input_schema.property_descriptions`.
pub fn descriptions(spec: &Value, tool: &str) -> CheckResult {
    let mut v = Verdict::new();
    let schema = spec.get("input_schema").unwrap_or(&Value::Null);
    let props = properties(schema);
    for (name, prop) in props.into_iter().flatten() {
        let own = prop.get("description").and_then(Value::as_str);
        let referenced = prop
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|pointer| schema.pointer(pointer))
            .and_then(|target| target.get("description"))
            .and_then(Value::as_str);
        if own.or(referenced).is_none_or(|d| d.trim().is_empty()) {
            v.fail(format!(
                "property '{name}' has no description (in Rust: add a `///` doc comment to the field)"
            ));
        }
    }
    let count = props.map(|p| p.len()).unwrap_or(0);
    v.finish(
        n::INPUT_SCHEMA_DESCRIPTIONS,
        Some(tool),
        format!(
            "{count} propert{}, all described",
            if count == 1 { "y" } else { "ies" }
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::check::Outcome;
    use serde_json::json;

    fn spec(schema: Value) -> Value {
        json!({ "name": "t", "input_schema": schema })
    }

    #[test]
    fn fires() {
        let bad = spec(json!({"type": "object", "properties": {"x": {"type": "strnig"}}}));
        assert_eq!(meta(&bad, "t").outcome, Outcome::Fail);
        let good = spec(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {"x": {"type": "string", "description": "the x"}},
            "required": ["x"]
        }));
        for check in [meta, object, required, descriptions] {
            assert_eq!(check(&good, "t").outcome, Outcome::Pass);
        }
        assert_eq!(
            object(&spec(json!({"type": "string"})), "t").outcome,
            Outcome::Fail
        );
        let missing = spec(json!({"type": "object", "properties": {}, "required": ["y"]}));
        assert_eq!(required(&missing, "t").outcome, Outcome::Fail);
        let undescribed = spec(json!({"type": "object", "properties": {"x": {"type": "string"}}}));
        assert_eq!(descriptions(&undescribed, "t").outcome, Outcome::Fail);
    }
}
