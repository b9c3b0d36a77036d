//! `[[principals]] claims`: which principal an OAuth access token is for.
//!
//! The rule, exactly: a principal matches a token when *every* claim its
//! `claims` table lists matches the token's claim of the same (top-level)
//! name. A listed scalar (string, number, boolean) matches a token claim
//! equal to it, or a token array that contains it; a listed array matches
//! when each of its values matches that way (the token may hold more).
//! A claim the token lacks matches nothing. The first principal in plan
//! order that matches is the one; a token no principal matches is refused.

use serde_json::{Map, Value};

/// One principal's claims table, checked.
pub type Claims = Map<String, Value>;

/// Why a `claims` table cannot be used.
pub fn check(claims: &Claims) -> Result<(), String> {
    if claims.is_empty() {
        return Err(
            "the table lists no claim, so it would match every token; list at least one (e.g. sub)".into(),
        );
    }
    for (name, value) in claims {
        let ok = match value {
            Value::Array(items) => !items.is_empty() && items.iter().all(scalar),
            other => scalar(other),
        };
        if !ok {
            return Err(format!(
                "'{name}' must be a string, number, boolean, or a non-empty array of those"
            ));
        }
    }
    Ok(())
}

fn scalar(value: &Value) -> bool {
    matches!(value, Value::String(_) | Value::Number(_) | Value::Bool(_))
}

/// Whether a token's claims satisfy a principal's `claims` table.
pub fn matches(wanted: &Claims, token: &Map<String, Value>) -> bool {
    wanted.iter().all(|(name, want)| {
        let Some(have) = token.get(name) else {
            return false;
        };
        match want {
            Value::Array(items) => items.iter().all(|item| holds(have, item)),
            scalar => holds(have, scalar),
        }
    })
}

/// `have` is `want`, or an array that contains it.
fn holds(have: &Value, want: &Value) -> bool {
    match have {
        Value::Array(items) => items.contains(want),
        other => other == want,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("object")
    }

    #[test]
    fn every_listed_claim_must_match() {
        let wanted = map(json!({"sub": "alice", "groups": ["eng", "ops"]}));
        assert!(matches(
            &wanted,
            &map(json!({"sub": "alice", "groups": ["ops", "eng", "x"]}))
        ));
        assert!(!matches(
            &wanted,
            &map(json!({"sub": "alice", "groups": ["eng"]}))
        ));
        assert!(!matches(
            &wanted,
            &map(json!({"sub": "bob", "groups": ["eng", "ops"]}))
        ));
        assert!(!matches(&wanted, &map(json!({"groups": ["eng", "ops"]}))));
        let scalar = map(json!({"groups": "eng"}));
        assert!(matches(&scalar, &map(json!({"groups": ["eng"]}))));
        assert!(matches(&scalar, &map(json!({"groups": "eng"}))));
        assert!(!matches(&scalar, &map(json!({"groups": "engineering"}))));
        assert!(!matches(
            &map(json!({"admin": true})),
            &map(json!({"admin": "true"}))
        ));
    }

    #[test]
    fn tables_are_checked() {
        assert!(check(&map(json!({}))).is_err());
        assert!(check(&map(json!({"groups": []}))).is_err());
        assert!(check(&map(json!({"x": {"y": 1}}))).is_err());
        assert!(check(&map(json!({"sub": "a", "n": 1, "b": true, "g": ["a", 2]}))).is_ok());
    }
}
