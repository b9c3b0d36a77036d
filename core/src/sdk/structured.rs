//! Structured output: a tool answers a model with text and a client with
//! data (MCP `structuredContent`), the data's JSON Schema derived like the
//! input's. An author writes an output struct with
//! `#[derive(Serialize, JsonSchema)]`, returns
//! `Structured::new(text, data)` (`type Output = Structured<MyOutput>`),
//! and declares the schema with one line in `spec()`:
//! `.structured_output::<MyOutput>()`. The host checks every result's data
//! against that schema (a mismatch is `invalid_output`), and sends it as
//! `structuredContent` beside the text.
//!
//! A tool whose output is itself an object (its `Output` a struct) needs
//! only the `.structured_output::<Output>()` line: the object is its
//! structured content.

use schemars::JsonSchema;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::wire::ToolSpec;

/// The key a [`Structured`] output serializes under, for the SDK to split
/// it apart again (an author never sees it).
const MARKER: &str = "$toolhost_structured";

/// A tool output with a text form (for models) and a data form (for
/// clients), see the module docs.
#[derive(Debug, Clone, PartialEq)]
pub struct Structured<T> {
    /// What a model reads.
    pub text: String,
    /// What a client reads, valid under the tool's output schema.
    pub data: T,
}

impl<T> Structured<T> {
    /// Text and data.
    pub fn new(text: impl Into<String>, data: T) -> Self {
        Structured {
            text: text.into(),
            data,
        }
    }
}

impl<T: Serialize> Serialize for Structured<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(MARKER, &(&self.text, &self.data))?;
        map.end()
    }
}

/// A serialized output as (output, structured data): a [`Structured`] is
/// split into its text and data; anything else stays as it is.
pub(crate) fn split(output: Value) -> (Value, Option<Value>) {
    match output {
        Value::Object(mut map) if map.len() == 1 && map.contains_key(MARKER) => match map.remove(MARKER) {
            Some(Value::Array(mut pair)) if pair.len() == 2 => {
                let data = pair.pop().unwrap_or(Value::Null);
                let text = pair.pop().unwrap_or(Value::Null);
                (text, Some(data))
            }
            other => (other.unwrap_or(Value::Null), None),
        },
        other => (other, None),
    }
}

impl ToolSpec {
    /// Declares `T` (an object type) as the tool's structured output: its
    /// JSON Schema 2020-12, with standard formats only, becomes the spec's
    /// `output_schema`.
    pub fn structured_output<T: JsonSchema>(mut self) -> Self {
        let schema = super::schema::standard_formats::<T>();
        self.output_schema = Some(schema.to_value());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Serialize, JsonSchema)]
    struct Out {
        files: u32,
    }

    #[test]
    fn a_structured_output_splits_into_text_and_data() {
        let value = serde_json::to_value(Structured::new("3 files", Out { files: 3 })).expect("serializes");
        assert_eq!(split(value), (json!("3 files"), Some(json!({"files": 3}))));
        assert_eq!(split(json!({"a": 1})), (json!({"a": 1}), None));
        let spec = ToolSpec::new("t", "d").structured_output::<Out>();
        let schema = spec.output_schema.expect("schema");
        assert_eq!(schema["type"], json!("object"));
        assert_eq!(
            schema["$schema"],
            json!("https://json-schema.org/draft/2020-12/schema")
        );
    }
}
