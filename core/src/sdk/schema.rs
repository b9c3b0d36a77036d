//! Input schemas as strict JSON Schema 2020-12 validators accept them.
//!
//! schemars names Rust's integer and float widths in `format` (`uint64`,
//! `uint`, `int32`, `double`…): formats JSON Schema does not define, which
//! strict validators (some MCP clients among them) refuse. Every schema the
//! SDK derives passes through [`standard_formats`], so every module built
//! on the SDK, first-party or not, lists only standard formats. The bounds
//! those formats implied are kept as `minimum`/`maximum` by schemars itself.

use schemars::transform::{RecursiveTransform, Transform};
use schemars::Schema;

/// The formats JSON Schema 2020-12 defines (Validation, section 7.3).
pub const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Removes a non-standard `format` from this schema and every subschema.
#[derive(Clone, Copy, Debug, Default)]
pub struct StandardFormats;

impl Transform for StandardFormats {
    fn transform(&mut self, schema: &mut Schema) {
        RecursiveTransform(drop_nonstandard_format).transform(schema);
    }
}

fn drop_nonstandard_format(schema: &mut Schema) {
    let Some(map) = schema.as_object_mut() else { return };
    let standard = match map.get("format") {
        Some(serde_json::Value::String(format)) => STANDARD_FORMATS.contains(&format.as_str()),
        // Absent, or not a keyword value: leave it alone.
        _ => return,
    };
    if !standard {
        map.remove("format");
    }
}

/// The JSON Schema of `I` with only standard formats (see the module doc).
pub fn standard_formats<I: schemars::JsonSchema>() -> Schema {
    schemars::generate::SchemaSettings::draft2020_12()
        .with_transform(StandardFormats)
        .into_generator()
        .into_root_schema_for::<I>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[allow(dead_code)]
    #[derive(schemars::JsonSchema)]
    struct Widths {
        a: u64,
        b: usize,
        c: Option<i32>,
        d: f64,
        nested: Vec<Inner>,
        #[schemars(extend("format" = "uri"))]
        link: String,
    }

    #[allow(dead_code)]
    #[derive(schemars::JsonSchema)]
    struct Inner {
        n: u8,
    }

    fn formats(value: &serde_json::Value, out: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(map) => {
                if let Some(serde_json::Value::String(f)) = map.get("format") {
                    out.push(f.clone());
                }
                map.values().for_each(|v| formats(v, out));
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| formats(v, out)),
            _ => {}
        }
    }

    #[test]
    fn width_formats_are_dropped_and_standard_ones_kept() {
        let raw = schemars::schema_for!(Widths).to_value();
        let mut before = Vec::new();
        formats(&raw, &mut before);
        assert!(before.contains(&"uint64".to_string()), "{before:?}");
        let clean = standard_formats::<Widths>().to_value();
        let mut after = Vec::new();
        formats(&clean, &mut after);
        assert_eq!(after, vec!["uri".to_string()]);
        assert_eq!(clean["properties"]["a"]["minimum"], json!(0));
        assert_eq!(clean["$defs"]["Inner"]["properties"]["n"]["maximum"], json!(255));
    }
}
