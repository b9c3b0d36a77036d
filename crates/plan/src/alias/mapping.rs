//! Applies a profile's rules: the caller's input (already valid against
//! the profile's schema) to the canonical tool's input.

use serde_json::{Map, Number, Value};

use super::{ParamRule, ProfileDef};

/// Why an input valid against the profile's schema still cannot be mapped
/// (a plan's profile whose rules and schema disagree, mostly).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MapError {
    /// `scale` on a value that is not a number.
    #[error("'{param}' must be a number")]
    NotANumber {
        /// The caller's parameter.
        param: String,
    },
    /// `each` on a value that is not an array of strings.
    #[error("'{param}' must be an array of strings")]
    NotStrings {
        /// The caller's parameter.
        param: String,
    },
    /// Two of the caller's parameters set the same canonical one.
    #[error("'{first}' and '{second}' both set '{canonical}'; give only one")]
    Conflict {
        /// One caller parameter.
        first: String,
        /// The other.
        second: String,
        /// The canonical parameter both map to.
        canonical: String,
    },
    /// `append` onto a canonical parameter that is not a string.
    #[error("'{param}' is added to '{canonical}', which is not text")]
    AppendToNonString {
        /// The caller's parameter.
        param: String,
        /// The canonical parameter.
        canonical: String,
    },
    /// A scaled number that JSON cannot carry (infinite).
    #[error("'{param}' is out of range after scaling")]
    OutOfRange {
        /// The caller's parameter.
        param: String,
    },
}

/// Maps `input` by `def`'s rules: renames, scaling, formatting, dropping,
/// then `defaults` and `set`. Appending rules run after the others so the
/// parameter they append to is already in place.
pub(super) fn to_canonical(def: &ProfileDef, input: &Value) -> Result<Value, MapError> {
    let empty = Map::new();
    let fields = input.as_object().unwrap_or(&empty);
    let mut out = Map::new();
    // Which caller parameter set each canonical one (for conflicts).
    let mut set_by: Map<String, Value> = Map::new();
    let plain = fields.iter().filter(|(k, _)| !rule_of(def, k).append);
    let appending = fields.iter().filter(|(k, _)| rule_of(def, k).append);
    for (param, value) in plain.chain(appending) {
        let rule = rule_of(def, param);
        if rule.drop {
            continue;
        }
        let to = rule.to.clone().unwrap_or_else(|| param.clone());
        let value = convert(param, &rule, value)?;
        if rule.append {
            append(&mut out, param, &to, value)?;
            continue;
        }
        if let Some(Value::String(first)) = set_by.get(&to) {
            return Err(MapError::Conflict {
                first: first.clone(),
                second: param.clone(),
                canonical: to,
            });
        }
        set_by.insert(to.clone(), Value::String(param.clone()));
        out.insert(to, value);
    }
    for (key, value) in &def.defaults {
        out.entry(key.clone()).or_insert_with(|| value.clone());
    }
    for (key, value) in &def.set {
        out.insert(key.clone(), value.clone());
    }
    Ok(Value::Object(out))
}

/// The caller's parameter that maps one to one onto `canonical`.
pub(super) fn caller_param<'a>(def: &'a ProfileDef, canonical: &str) -> Option<&'a str> {
    let renamed = def
        .params
        .iter()
        .find(|(_, r)| !r.drop && !r.append && r.to.as_deref() == Some(canonical))
        .map(|(p, _)| p.as_str());
    renamed.or_else(|| {
        let props = def.schema.get("properties")?.as_object()?;
        let (name, _) = props.get_key_value(canonical)?;
        let rule = def.params.get(canonical);
        let identity =
            rule.is_none_or(|r| !r.drop && !r.append && r.to.as_deref().is_none_or(|t| t == canonical));
        identity.then_some(name.as_str())
    })
}

fn rule_of(def: &ProfileDef, param: &str) -> ParamRule {
    def.params.get(param).cloned().unwrap_or_default()
}

/// The value after `scale` and `each`.
fn convert(param: &str, rule: &ParamRule, value: &Value) -> Result<Value, MapError> {
    if let Some(factor) = rule.scale {
        let n = value
            .as_f64()
            .ok_or_else(|| MapError::NotANumber { param: param.into() })?;
        return scaled(param, n * factor);
    }
    if let Some(template) = &rule.each {
        let items = value
            .as_array()
            .ok_or_else(|| MapError::NotStrings { param: param.into() })?;
        let mut parts = Vec::with_capacity(items.len());
        for item in items {
            let s = item
                .as_str()
                .ok_or_else(|| MapError::NotStrings { param: param.into() })?;
            parts.push(template.replace("{}", s));
        }
        return Ok(Value::String(parts.join(rule.join.as_deref().unwrap_or(" "))));
    }
    Ok(value.clone())
}

/// A whole result as an integer (so `timeout: 2000` ms is `2`, which an
/// integer-typed canonical parameter accepts), otherwise a float.
fn scaled(param: &str, n: f64) -> Result<Value, MapError> {
    // 2^53: beyond it an f64 no longer holds every integer exactly.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    if n.fract() == 0.0 && n.abs() <= EXACT {
        return Ok(Value::Number(Number::from(n as i64)));
    }
    Number::from_f64(n)
        .map(Value::Number)
        .ok_or_else(|| MapError::OutOfRange { param: param.into() })
}

fn append(out: &mut Map<String, Value>, param: &str, to: &str, value: Value) -> Result<(), MapError> {
    let add = match value {
        Value::String(s) => s,
        other => other.to_string(),
    };
    if add.is_empty() {
        return Ok(());
    }
    match out.get_mut(to) {
        None => {
            out.insert(to.to_string(), Value::String(add));
        }
        Some(Value::String(existing)) => {
            existing.push(' ');
            existing.push_str(&add);
        }
        Some(_) => {
            return Err(MapError::AppendToNonString {
                param: param.into(),
                canonical: to.into(),
            })
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn def(params: Value) -> ProfileDef {
        serde_json::from_value(json!({
            "name": "X", "tool": "t",
            "schema": {"type": "object", "properties": {
                "a": {}, "ms": {}, "q": {}, "sites": {}, "gone": {}, "b": {}
            }},
            "params": params
        }))
        .expect("def")
    }

    #[test]
    fn renames_scales_formats_appends_and_drops() {
        let d = def(json!({
            "a": {"to": "alpha"},
            "ms": {"to": "secs", "scale": 0.001},
            "sites": {"to": "q", "each": "site:{}", "join": " OR ", "append": true},
            "gone": {"drop": true}
        }));
        let out = to_canonical(
            &d,
            &json!({"a": 1, "ms": 1500, "q": "rust", "sites": ["x.org", "y.org"], "gone": "z"}),
        )
        .expect("maps");
        assert_eq!(
            out,
            json!({"alpha": 1, "secs": 1.5, "q": "rust site:x.org OR site:y.org"})
        );
        let whole = to_canonical(&d, &json!({"ms": 2000})).expect("maps");
        assert_eq!(whole, json!({"secs": 2}), "a whole number stays an integer");
    }

    #[test]
    fn two_parameters_onto_one_is_a_conflict() {
        let d = def(json!({"a": {"to": "b"}}));
        let err = to_canonical(&d, &json!({"a": 1, "b": 2})).expect_err("conflict");
        assert!(matches!(err, MapError::Conflict { .. }), "{err}");
    }

    #[test]
    fn caller_param_inverts_renames_and_identities() {
        let d = def(json!({"a": {"to": "alpha"}, "gone": {"drop": true}}));
        assert_eq!(caller_param(&d, "alpha"), Some("a"));
        assert_eq!(caller_param(&d, "q"), Some("q"));
        assert_eq!(caller_param(&d, "a"), None, "a became alpha");
        assert_eq!(caller_param(&d, "gone"), None);
    }
}
