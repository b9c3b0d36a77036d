//! A foreign tool's fingerprint and pin, as a mounted tool carries them.
//! Kept apart from the lock file's code so that a tool needs no plan.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::canonical::digest;

/// The hashed parts of one tool's definition (hex SHA-256 of each part's
/// canonical JSON), so a difference can say which part changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fingerprint {
    /// The description text.
    pub description: String,
    /// The input schema.
    pub input_schema: String,
    /// The output schema (`null` when it has none).
    pub output_schema: String,
    /// The title and behaviour hints.
    pub annotations: String,
}

impl Fingerprint {
    /// The fingerprint of an MCP tool definition as the server sent it
    /// (an `rmcp::model::Tool`; any value serializing to its JSON form).
    pub fn of(tool: &impl Serialize) -> Fingerprint {
        let json = serde_json::to_value(tool).unwrap_or(Value::Null);
        let part = |key: &str| digest(json.get(key).unwrap_or(&Value::Null));
        let annotations = serde_json::json!({
            "title": json.get("title"),
            "annotations": json.get("annotations"),
        });
        Fingerprint {
            description: part("description"),
            input_schema: part("inputSchema"),
            output_schema: part("outputSchema"),
            annotations: digest(&annotations),
        }
    }

    /// The parts that differ from `pinned`, by name.
    pub fn changed_from(&self, pinned: &Fingerprint) -> Vec<&'static str> {
        let mut changed = Vec::new();
        for (name, a, b) in [
            ("description", &self.description, &pinned.description),
            ("input schema", &self.input_schema, &pinned.input_schema),
            ("output schema", &self.output_schema, &pinned.output_schema),
            ("annotations", &self.annotations, &pinned.annotations),
        ] {
            if a != b {
                changed.push(name);
            }
        }
        changed
    }
}

/// A held-back tool, as the pipeline and `check` see it.
#[derive(Debug, Clone)]
pub struct Pin {
    /// The server's source key.
    pub source: String,
    /// The tool's name on the server.
    pub tool: String,
    /// Its fingerprint as listed now (what `pin` records).
    pub fingerprint: Fingerprint,
    /// Why it is held back, if it is.
    pub held: Option<String>,
}
