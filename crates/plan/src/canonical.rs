//! The identity of a call's input: SHA-256 over its canonical JSON
//! (RFC 8785, JCS: keys sorted by UTF-16 code units, numbers in their
//! shortest ECMAScript form), so `{"a":1,"b":2.0}` and `{"b":2,"a":1}` are
//! one input. The workspace turns on serde_json's `preserve_order`, so the
//! map's own order is the caller's; the canonicalizer sorts regardless.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Hex SHA-256 of the canonical form of `input`.
pub fn digest(input: &Value) -> String {
    // Serializing a `Value` cannot fail except on non-finite floats, which a
    // `Value` cannot hold; fall back to serde_json's text rather than panic.
    let bytes = serde_json_canonicalizer::to_vec(input).unwrap_or_else(|_| input.to_string().into_bytes());
    let hash = Sha256::digest(&bytes);
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// Hex SHA-256 of bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_and_number_spelling_do_not_matter() {
        let a: Value = serde_json::from_str(r#"{"b": [1, {"y": 2, "x": 1}], "a": 1.0, "c": 1e2}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a": 1, "c": 100, "b": [1, {"x": 1, "y": 2}]}"#).unwrap();
        assert_eq!(digest(&a), digest(&b));
    }

    #[test]
    fn different_values_and_array_order_do_matter() {
        assert_ne!(digest(&json!({"a": 1})), digest(&json!({"a": 2})));
        assert_ne!(digest(&json!([1, 2])), digest(&json!([2, 1])));
        assert_ne!(digest(&json!({"a": "1"})), digest(&json!({"a": 1})));
    }
}
