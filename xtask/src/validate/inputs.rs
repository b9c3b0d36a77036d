//! Inputs generated from a tool's input schema: valid ones (minimal, full,
//! "long"), and invalid ones (a missing required property, a wrong type, an
//! unknown property, a value out of range). Every generated input is checked
//! against the schema itself, so "valid" and "invalid" mean what they say.

use serde_json::{json, Map, Value};

/// How to fill a valid input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// Only the required properties, with small values.
    Minimal,
    /// Every property, with small values.
    Full,
    /// Every property, with numbers as large as allowed (a long call).
    Long,
}

/// A generated input with a label saying what it tries.
#[derive(Clone, Debug)]
pub struct Case {
    /// What the input tries, for messages.
    pub label: String,
    /// The input.
    pub input: Value,
    /// Whether a tool that accepts this input disagrees with its schema in
    /// a way worth a warning. Not for non-object inputs: serde's derive
    /// reads a struct from an array, and the host refuses them before any
    /// tool sees them.
    pub worth_refusing: bool,
}

/// The size of an "oversized" string: 1 MiB.
pub const OVERSIZED_BYTES: usize = 1 << 20;

/// Generates inputs from one tool's input schema.
pub struct Generator<'a> {
    root: &'a Value,
    validator: Option<jsonschema::Validator>,
}

const MAX_DEPTH: usize = 8;

impl<'a> Generator<'a> {
    /// A generator for `schema`. Without a compilable schema, nothing can be
    /// told valid from invalid, so only fixed inputs are produced.
    pub fn new(schema: &'a Value) -> Self {
        let validator = std::panic::catch_unwind(|| jsonschema::validator_for(schema).ok())
            .ok()
            .flatten();
        Generator {
            root: schema,
            validator,
        }
    }

    /// Whether the schema accepts `input` (`None` when the schema does not compile).
    pub fn accepts(&self, input: &Value) -> Option<bool> {
        self.validator.as_ref().map(|v| v.is_valid(input))
    }

    /// A valid input, when one can be generated.
    pub fn valid(&self, fill: Fill) -> Option<Value> {
        let value = self.generate(self.root, fill, 0)?;
        match self.accepts(&value) {
            Some(true) => Some(value),
            _ => None,
        }
    }

    /// The top-level properties (name → schema, `$ref`s followed).
    pub fn properties(&self) -> Vec<(String, &'a Value)> {
        self.resolve(self.root)
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| props.iter().map(|(k, v)| (k.clone(), self.resolve(v))).collect())
            .unwrap_or_default()
    }

    /// Inputs the schema rejects: a missing required property, an unknown
    /// property where none are allowed, a value outside an enum or a range.
    pub fn invalid(&self) -> Vec<Case> {
        let Some(base) = self.valid(Fill::Full).or_else(|| self.valid(Fill::Minimal)) else {
            return Vec::new();
        };
        let root = self.resolve(self.root);
        let mut cases = Vec::new();
        for name in root
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(name) = name.as_str() {
                let mut input = base.clone();
                if let Some(map) = input.as_object_mut() {
                    map.remove(name);
                }
                cases.push(Case {
                    label: format!("required property `{name}` missing"),
                    input,
                    worth_refusing: true,
                });
            }
        }
        if root.get("additionalProperties") == Some(&Value::Bool(false)) {
            let mut input = base.clone();
            if let Some(map) = input.as_object_mut() {
                map.insert("validate_module_unknown".into(), json!(true));
            }
            cases.push(Case {
                label: "an unknown property".into(),
                input,
                worth_refusing: true,
            });
        }
        for (name, schema) in self.properties() {
            let mut bad = Vec::new();
            if schema.get("enum").is_some() || schema.get("const").is_some() {
                bad.push(("a value outside the enum", json!("validate_module_not_a_member")));
            }
            if let Some(min) = schema.get("minimum").and_then(Value::as_f64) {
                bad.push(("below the minimum", to_json(min - 1.0, schema)));
            }
            if let Some(max) = schema.get("maximum").and_then(Value::as_f64) {
                bad.push(("above the maximum", to_json(max + 1.0, schema)));
            }
            for (what, value) in bad {
                cases.push(Case {
                    label: format!("/{name}: {what}"),
                    input: with(&base, &name, value),
                    worth_refusing: true,
                });
            }
        }
        cases.retain(|case| self.accepts(&case.input) == Some(false));
        cases
    }

    /// Inputs with a value of the wrong JSON type at each typed property,
    /// and inputs that are not objects at all.
    pub fn wrong_types(&self) -> Vec<Case> {
        let mut cases: Vec<Case> = [json!([]), json!("text"), json!(null), json!(42)]
            .into_iter()
            .map(|input| Case {
                label: format!("the whole input is {input}"),
                input,
                worth_refusing: false,
            })
            .collect();
        let base = self
            .valid(Fill::Full)
            .or_else(|| self.valid(Fill::Minimal))
            .unwrap_or_else(|| json!({}));
        for (name, schema) in self.properties() {
            let types = types_of(schema);
            if types.is_empty() {
                continue; // accepts any type
            }
            let wrong = if types.iter().any(|t| t == "string") {
                json!(12345)
            } else {
                json!("validate_module_wrong_type")
            };
            let input = with(&base, &name, wrong.clone());
            if self.accepts(&input) != Some(true) {
                cases.push(Case {
                    label: format!("/{name} = {wrong} (expects {})", types.join(" or ")),
                    input,
                    worth_refusing: true,
                });
            }
        }
        cases
    }

    /// Inputs with a boundary value at each typed property: `""` and a lone
    /// space for strings; 0, -1, 1 and the extremes for numbers; both
    /// booleans; an empty array and object. Only those the schema accepts
    /// (the host passes them through to the tool), or all of them when the
    /// schema does not compile. A tool must answer each with a well-formed
    /// result: a refusal is fine, a panic is not.
    pub fn boundaries(&self) -> Vec<Case> {
        let base = self
            .valid(Fill::Full)
            .or_else(|| self.valid(Fill::Minimal))
            .unwrap_or_else(|| json!({}));
        let mut cases = Vec::new();
        for (name, schema) in self.properties() {
            let mut values = Vec::new();
            for t in types_of(schema) {
                match t.as_str() {
                    "string" => values.extend([json!(""), json!(" ")]),
                    "integer" => values.extend([
                        json!(0),
                        json!(-1),
                        json!(1),
                        json!(i64::MIN),
                        json!(i64::MAX),
                        json!(u64::MAX),
                    ]),
                    "number" => values.extend([
                        json!(0),
                        json!(-1),
                        json!(0.5),
                        json!(-f64::MAX),
                        json!(f64::MAX),
                        json!(f64::MIN_POSITIVE),
                    ]),
                    "boolean" => values.extend([json!(false), json!(true)]),
                    "array" => values.push(json!([])),
                    "object" => values.push(json!({})),
                    _ => {}
                }
            }
            for value in values {
                let input = with(&base, &name, value.clone());
                if self.accepts(&input) != Some(false) && !cases.iter().any(|c: &Case| c.input == input) {
                    cases.push(Case {
                        label: format!("/{name} = {value}"),
                        input,
                        worth_refusing: false,
                    });
                }
            }
        }
        cases
    }

    /// Inputs with a 1 MiB string at each string property.
    pub fn oversized(&self) -> Vec<Case> {
        let base = self
            .valid(Fill::Full)
            .or_else(|| self.valid(Fill::Minimal))
            .unwrap_or_else(|| json!({}));
        let big = oversized_string();
        self.properties()
            .into_iter()
            .filter(|(_, schema)| types_of(schema).iter().any(|t| t == "string"))
            .map(|(name, _)| Case {
                label: format!("/{name} is a {} KiB string", OVERSIZED_BYTES / 1024),
                input: with(&base, &name, Value::String(big.clone())),
                worth_refusing: false,
            })
            .collect()
    }

    fn resolve(&self, schema: &'a Value) -> &'a Value {
        let mut current = schema;
        for _ in 0..MAX_DEPTH {
            let Some(reference) = current.get("$ref").and_then(Value::as_str) else {
                break;
            };
            match reference
                .strip_prefix('#')
                .and_then(|pointer| self.root.pointer(pointer))
            {
                Some(target) => current = target,
                None => break,
            }
        }
        current
    }

    fn generate(&self, schema: &'a Value, fill: Fill, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        let schema = self.resolve(schema);
        match schema {
            Value::Bool(true) => return Some(json!("validate")),
            Value::Bool(false) => return None,
            _ => {}
        }
        if let Some(value) = schema.get("const") {
            return Some(value.clone());
        }
        if let Some(first) = schema
            .get("enum")
            .and_then(Value::as_array)
            .and_then(|e| e.first())
        {
            return Some(first.clone());
        }
        if let Some(default) = schema.get("default").filter(|_| fill != Fill::Long) {
            if !default.is_null() {
                return Some(default.clone());
            }
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            if let Some(branches) = schema.get(key).and_then(Value::as_array) {
                let non_null = branches.iter().filter(|b| types_of(self.resolve(b)) != ["null"]);
                for branch in non_null {
                    if let Some(value) = self.generate(branch, fill, depth + 1) {
                        return Some(value);
                    }
                }
            }
        }
        let types = types_of(schema);
        let kind = types
            .iter()
            .find(|t| *t != "null")
            .or(types.first())
            .map(String::as_str)
            .or_else(|| schema.get("properties").map(|_| "object"));
        match kind {
            Some("object") => self.object(schema, fill, depth),
            Some("array") => {
                let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
                let count = if fill == Fill::Minimal { min } else { min.max(1) };
                let items = schema.get("items").unwrap_or(&Value::Bool(true));
                let item = self.generate(items, fill, depth + 1)?;
                Some(Value::Array(vec![
                    item;
                    usize::try_from(count.min(16)).unwrap_or(1)
                ]))
            }
            Some("string") => Some(Value::String(string(schema))),
            Some("integer") | Some("number") => {
                Some(number(if fill == Fill::Long { 3_600_000.0 } else { 1.0 }, schema))
            }
            Some("boolean") => Some(json!(false)),
            Some("null") => Some(Value::Null),
            _ => Some(json!("validate")),
        }
    }

    fn object(&self, schema: &'a Value, fill: Fill, depth: usize) -> Option<Value> {
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut out = Map::new();
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            for (name, prop) in props {
                let needed = required.contains(&name.as_str());
                if !needed && fill == Fill::Minimal {
                    continue;
                }
                match self.generate(prop, fill, depth + 1) {
                    Some(value) => {
                        out.insert(name.clone(), value);
                    }
                    None if needed => return None,
                    None => {}
                }
            }
        }
        Some(Value::Object(out))
    }
}

/// The JSON types a schema names (`type` as a string or a list).
pub fn types_of(schema: &Value) -> Vec<String> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).map(str::to_string).collect(),
        _ => Vec::new(),
    }
}

fn with(base: &Value, name: &str, value: Value) -> Value {
    let mut input = base.clone();
    match input.as_object_mut() {
        Some(map) => {
            map.insert(name.to_string(), value);
        }
        None => input = json!({ name: value }),
    }
    input
}

/// `wanted`, moved into the schema's range.
fn number(wanted: f64, schema: &Value) -> Value {
    let mut n = wanted;
    if let Some(min) = schema.get("minimum").and_then(Value::as_f64) {
        n = n.max(min);
    }
    if let Some(min) = schema.get("exclusiveMinimum").and_then(Value::as_f64) {
        if n <= min {
            n = min + 1.0;
        }
    }
    if let Some(max) = schema.get("maximum").and_then(Value::as_f64) {
        n = n.min(max);
    }
    if let Some(max) = schema.get("exclusiveMaximum").and_then(Value::as_f64) {
        if n >= max {
            n = max - 1.0;
        }
    }
    to_json(n, schema)
}

/// `n` as a JSON number: an integer when the schema wants one or `n` is whole.
fn to_json(n: f64, schema: &Value) -> Value {
    if types_of(schema).iter().any(|t| t == "integer") || n.fract() == 0.0 {
        if (0.0..=u64::MAX as f64).contains(&n) {
            return json!(n as u64);
        }
        if (i64::MIN as f64..0.0).contains(&n) {
            return json!(n as i64);
        }
    }
    json!(n)
}

fn string(schema: &Value) -> String {
    let base = match schema.get("format").and_then(Value::as_str) {
        Some("uri") | Some("url") | Some("iri") => "https://example.invalid/validate",
        Some("email") => "validate@example.invalid",
        Some("date-time") => "2024-01-01T00:00:00Z",
        Some("date") => "2024-01-01",
        Some("uuid") => "00000000-0000-0000-0000-000000000000",
        Some("ipv4") => "127.0.0.1",
        _ => "validate",
    };
    let mut s = base.to_string();
    let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0);
    while (s.chars().count() as u64) < min.min(4096) {
        s.push('x');
    }
    if let Some(max) = schema.get("maxLength").and_then(Value::as_u64) {
        s = s
            .chars()
            .take(usize::try_from(max).unwrap_or(usize::MAX))
            .collect();
    }
    s
}

/// 1 MiB of text without newlines, mixing ASCII and multi-byte characters.
pub fn oversized_string() -> String {
    let unit = "oversized-input✓😀";
    let mut s = String::with_capacity(OVERSIZED_BYTES + unit.len());
    while s.len() < OVERSIZED_BYTES {
        s.push_str(unit);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "p"},
                "limit": {"type": ["integer", "null"], "minimum": 1, "maximum": 100},
                "mode": {"$ref": "#/$defs/Mode"},
                "flag": {"type": "boolean", "default": false}
            },
            "required": ["path"],
            "additionalProperties": false,
            "$defs": {"Mode": {"type": "string", "enum": ["a", "b"]}}
        })
    }

    #[test]
    fn valid_inputs_are_valid() {
        let s = schema();
        let g = Generator::new(&s);
        assert_eq!(g.valid(Fill::Minimal), Some(json!({"path": "validate"})));
        let full = g.valid(Fill::Full).unwrap_or_default();
        assert_eq!(
            full,
            json!({"path": "validate", "limit": 1, "mode": "a", "flag": false})
        );
        let long = g.valid(Fill::Long).unwrap_or_default();
        assert_eq!(long["limit"], json!(100));
    }

    #[test]
    fn invalid_inputs_are_invalid() {
        let s = schema();
        let g = Generator::new(&s);
        let labels: Vec<String> = g.invalid().into_iter().map(|c| c.label).collect();
        assert!(labels.iter().any(|l| l.contains("`path` missing")), "{labels:?}");
        assert!(
            labels.iter().any(|l| l.contains("unknown property")),
            "{labels:?}"
        );
        assert!(labels.iter().any(|l| l.contains("/limit: below")), "{labels:?}");
        assert!(
            labels.iter().any(|l| l.contains("/mode: a value outside")),
            "{labels:?}"
        );
        assert!(g
            .wrong_types()
            .iter()
            .any(|c| c.label.starts_with("/path = 12345")));
        assert_eq!(g.oversized().len(), 2);
    }
}
