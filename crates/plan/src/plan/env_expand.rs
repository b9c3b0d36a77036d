//! `${NAME}` and `${NAME:-default}` expansion in plan values, so secrets and
//! machine paths stay out of committed plans. `$${` is a literal `${`.

use serde_json::Value;

/// A reference to an unset variable without a default.
#[derive(Debug, thiserror::Error)]
pub enum ExpandError {
    /// `${NAME}` with NAME unset.
    #[error("environment variable {0} is not set (write ${{{0}:-default}} to give a default)")]
    Unset(String),
    /// `${` without a closing brace, or a bad name.
    #[error("malformed ${{…}} in {0:?}")]
    Malformed(String),
}

/// Expands every string in a JSON value.
pub fn expand_value(value: Value) -> Result<Value, ExpandError> {
    Ok(match value {
        Value::String(s) => Value::String(expand_str(&s)?),
        Value::Array(items) => Value::Array(items.into_iter().map(expand_value).collect::<Result<_, _>>()?),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| Ok((k, expand_value(v)?)))
                .collect::<Result<_, ExpandError>>()?,
        ),
        other => other,
    })
}

/// Expands one string.
pub fn expand_str(s: &str) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find("${") {
        if rest[..at].ends_with('$') {
            out.push_str(&rest[..at - 1]);
            out.push_str("${");
            rest = &rest[at + 2..];
            continue;
        }
        out.push_str(&rest[..at]);
        let body_start = at + 2;
        let close = rest[body_start..]
            .find('}')
            .ok_or_else(|| ExpandError::Malformed(s.to_string()))?;
        let body = &rest[body_start..body_start + close];
        let (name, default) = match body.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (body, None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(ExpandError::Malformed(s.to_string()));
        }
        match (std::env::var(name), default) {
            (Ok(value), _) => out.push_str(&value),
            (Err(_), Some(default)) => out.push_str(default),
            (Err(_), None) => return Err(ExpandError::Unset(name.to_string())),
        }
        rest = &rest[body_start + close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_defaults_and_escapes() {
        std::env::set_var("TOOLHOST_TEST_X", "ex");
        assert_eq!(expand_str("a${TOOLHOST_TEST_X}b").unwrap(), "aexb");
        assert_eq!(expand_str("${TOOLHOST_TEST_UNSET_Q:-d}").unwrap(), "d");
        assert_eq!(expand_str("$${HOME}").unwrap(), "${HOME}");
        assert!(matches!(
            expand_str("${TOOLHOST_TEST_UNSET_Q}"),
            Err(ExpandError::Unset(_))
        ));
        assert!(matches!(expand_str("${oops"), Err(ExpandError::Malformed(_))));
    }
}
