//! The request context a caller attaches to a call: `run_id`, `thread_id`,
//! `tenant`, `agent`, `correlation_id`, from MCP `_meta` or CLI flags.
//!
//! In `_meta` each id may be given plain (`run_id`) or under the
//! `toolhost/` prefix (`toolhost/run_id`), which MCP's `_meta` naming rules
//! prefer for vendor keys; the prefixed key wins when both are present.
//! The ids are the caller's claims, not authenticated facts: they label
//! records and partition per-run counts, and say nothing about who called.

use serde_json::{Map, Value};
use toolhost_core::RequestContext;

/// The longest id accepted, in bytes.
pub const MAX_ID_BYTES: usize = 256;

/// The context ids found in an MCP request's `_meta`.
pub fn from_meta(meta: &Map<String, Value>) -> RequestContext {
    let get = |key: &str| {
        let value = meta.get(&format!("toolhost/{key}")).or_else(|| meta.get(key))?;
        match value {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    };
    let mut context = RequestContext::default();
    context.run_id = get("run_id");
    context.thread_id = get("thread_id");
    context.tenant = get("tenant");
    context.agent = get("agent");
    context.correlation_id = get("correlation_id");
    context
}

/// Refuses ids that could not be written to a log line honestly: empty,
/// longer than [`MAX_ID_BYTES`], or holding control characters.
pub fn check(context: &RequestContext) -> Result<(), super::RequestIdError> {
    let ids = [
        ("run_id", &context.run_id),
        ("thread_id", &context.thread_id),
        ("tenant", &context.tenant),
        ("agent", &context.agent),
        ("correlation_id", &context.correlation_id),
    ];
    for (name, value) in ids {
        let Some(value) = value else { continue };
        if value.is_empty() || value.len() > MAX_ID_BYTES || value.chars().any(char::is_control) {
            return Err(super::RequestIdError {
                name,
                max: MAX_ID_BYTES,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plain_and_prefixed_keys() {
        let meta = json!({"run_id": "plain", "toolhost/run_id": "prefixed", "tenant": 7, "agent": {"x": 1}});
        let context = from_meta(meta.as_object().expect("object"));
        assert_eq!(context.run_id.as_deref(), Some("prefixed"));
        assert_eq!(context.tenant.as_deref(), Some("7"));
        assert_eq!(context.agent, None);
        assert!(check(&context).is_ok());
        let mut bad = context.clone();
        bad.thread_id = Some("a\nb".into());
        assert!(check(&bad).is_err());
    }
}
