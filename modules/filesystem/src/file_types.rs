//! grep's `type` filter: ripgrep's own file-type definitions (`rust`, `py`,
//! `js`…), so a type name means what it means to `rg --type`.

use ignore::types::{Types, TypesBuilder};
use toolhost_core::ToolError;

use crate::text::similar::edit_distance;

/// Longest type name accepted (ripgrep's longest is under 20 bytes).
pub const MAX_NAME_BYTES: usize = 64;

/// The matcher for one ripgrep type name, or an error naming the closest
/// known names.
pub fn select(name: &str) -> Result<Types, ToolError> {
    // Type names are short; a long one is refused before it is compared
    // with every known name (edit distance is quadratic).
    if name.is_empty() || name.len() > MAX_NAME_BYTES {
        return Err(ToolError::invalid_input(format!(
            "`type` must be a ripgrep type name of 1 to {MAX_NAME_BYTES} bytes, like rust, py or js"
        )));
    }
    let mut builder = TypesBuilder::new();
    builder.add_defaults();
    let known = builder.definitions();
    if !known.iter().any(|def| def.name() == name) {
        return Err(unknown(name, known.iter().map(|def| def.name())));
    }
    builder.select(name);
    builder
        .build()
        .map_err(|e| ToolError::invalid_input(format!("file type {name:?} cannot be used: {e}")))
}

/// "Unknown type" with up to five close names (by edit distance, then by
/// shared prefix), so a model can retry with a real one.
fn unknown<'a>(name: &str, known: impl Iterator<Item = &'a str>) -> ToolError {
    let lower = name.to_ascii_lowercase();
    let mut scored: Vec<(usize, &str)> = known
        .map(|k| {
            let distance = edit_distance(&lower, k);
            let prefix = k.starts_with(&lower) || lower.starts_with(k);
            (if prefix { distance.min(1) } else { distance }, k)
        })
        .filter(|(d, k)| *d <= 2.max(k.len() / 3))
        .collect();
    scored.sort();
    let close: Vec<&str> = scored.iter().take(5).map(|(_, k)| *k).collect();
    let hint = if close.is_empty() {
        "no known type is close; ripgrep's names are short, like rust, py, js, ts, go, c, cpp, java, md, json, yaml, toml, sh".to_string()
    } else {
        format!("close names: {}", close.join(", "))
    };
    ToolError::invalid_input(format!(
        "unknown file type {name:?} for `type` (ripgrep's type names); {hint}. Or filter by name with `glob` instead"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_types_match_and_unknown_ones_suggest() {
        let types = select("rust").unwrap_or_else(|e| panic!("{}", e.message()));
        assert!(types.matched("src/main.rs", false).is_whitelist());
        assert!(types.matched("main.py", false).is_ignore());
        let e = select("rsut")
            .err()
            .map(|e| e.message().to_string())
            .unwrap_or_default();
        assert!(e.contains("unknown file type") && e.contains("rust"), "{e}");
        let e = select("pyhton")
            .err()
            .map(|e| e.message().to_string())
            .unwrap_or_default();
        assert!(e.contains("py"), "{e}");
    }
}
