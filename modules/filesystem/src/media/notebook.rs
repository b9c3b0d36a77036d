//! Jupyter notebooks for read_file: each cell with its source and outputs
//! (streams, results, errors as text; PNG/JPEG outputs as image blocks),
//! paged by rendered line with read_file's `offset` and `limit`.

use base64::Engine;
use serde_json::Value;
use toolhost_core::ToolError;

/// Largest notebook read_file parses.
pub const MAX_FILE_BYTES: u64 = 32 * 1024 * 1024;
/// Most images from outputs returned by one call.
pub const MAX_IMAGES: usize = 8;
/// Most encoded image bytes returned by one call (before base64).
pub const MAX_IMAGE_BYTES: usize = 4 * 1024 * 1024;
/// Characters kept of one output (a cell printing megabytes is cut).
const MAX_OUTPUT_CHARS: usize = 20_000;

/// One rendered notebook: text lines, and images by the line they sit on.
pub struct Rendered {
    /// The lines of the rendering.
    pub lines: Vec<String>,
    /// (0-based line index, MIME type, base64 data) of each image output.
    pub images: Vec<(usize, String, String)>,
    /// Number of cells.
    pub cells: usize,
}

/// `source`/`text` fields are a string or a list of strings.
fn joined(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(Value::as_str).collect(),
        _ => String::new(),
    }
}

fn push_text(lines: &mut Vec<String>, text: &str) {
    let (kept, cut) = crate::text::cut_line(text, MAX_OUTPUT_CHARS);
    lines.extend(kept.lines().map(str::to_string));
    if cut > 0 {
        lines.push(format!("[output cut: {cut} more characters]"));
    }
}

/// Parses and renders the notebook in `bytes`.
pub fn render(bytes: &[u8], display: &str) -> Result<Rendered, ToolError> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| {
        ToolError::new(
            "malformed_file",
            format!("{display} is not a valid notebook (JSON error: {e}); read it as text with a different name, or fix the JSON"),
        )
    })?;
    let Some(cells) = doc.get("cells").and_then(Value::as_array) else {
        return Err(ToolError::new(
            "malformed_file",
            format!("{display} has no `cells` list; it is not a Jupyter notebook (nbformat 4)"),
        ));
    };
    let language = doc
        .pointer("/metadata/kernelspec/language")
        .or_else(|| doc.pointer("/metadata/language_info/name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut lines = Vec::new();
    let mut images = Vec::new();
    for (i, cell) in cells.iter().enumerate() {
        let kind = cell.get("cell_type").and_then(Value::as_str).unwrap_or("unknown");
        let count = match cell.get("execution_count") {
            Some(Value::Number(n)) => format!(", execution_count {n}"),
            _ => String::new(),
        };
        let lang = if kind == "code" && !language.is_empty() {
            format!(", {language}")
        } else {
            String::new()
        };
        lines.push(format!("[cell {} ({kind}{lang}{count})]", i + 1));
        push_text(&mut lines, &joined(cell.get("source").unwrap_or(&Value::Null)));
        let outputs = cell.get("outputs").and_then(Value::as_array);
        for output in outputs.into_iter().flatten() {
            let otype = output.get("output_type").and_then(Value::as_str).unwrap_or("");
            match otype {
                "stream" => {
                    let name = output.get("name").and_then(Value::as_str).unwrap_or("stream");
                    lines.push(format!("[output: {name}]"));
                    push_text(&mut lines, &joined(output.get("text").unwrap_or(&Value::Null)));
                }
                "error" => {
                    let name = output.get("ename").and_then(Value::as_str).unwrap_or("Error");
                    let value = output.get("evalue").and_then(Value::as_str).unwrap_or("");
                    lines.push(format!("[output: error {name}: {value}]"));
                    if let Some(trace) = output.get("traceback").and_then(Value::as_array) {
                        let trace: Vec<&str> = trace.iter().filter_map(Value::as_str).collect();
                        push_text(&mut lines, &strip_ansi(&trace.join("\n")));
                    }
                }
                "execute_result" | "display_data" => {
                    let data = output.get("data");
                    let image = ["image/png", "image/jpeg"]
                        .into_iter()
                        .find_map(|m| data.and_then(|d| d.get(m)).map(|v| (m, joined(v))));
                    if let Some((mime, b64)) = image {
                        lines.push(format!("[output: {mime} image]"));
                        images.push((
                            lines.len() - 1,
                            mime.to_string(),
                            b64.split_whitespace().collect(),
                        ));
                    } else if let Some(text) = data.and_then(|d| d.get("text/plain")) {
                        lines.push(format!("[output: {otype}]"));
                        push_text(&mut lines, &joined(text));
                    } else {
                        let kinds: Vec<&str> = data
                            .and_then(Value::as_object)
                            .map(|m| m.keys().map(String::as_str).collect())
                            .unwrap_or_default();
                        lines.push(format!("[output: {} (not shown)]", kinds.join(", ")));
                    }
                }
                other => lines.push(format!("[output: {other}]")),
            }
        }
    }
    Ok(Rendered {
        lines,
        images,
        cells: cells.len(),
    })
}

/// Tracebacks carry terminal colour codes; a model reads them as noise.
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ … final byte in @..~
            if chars.next() == Some('[') {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Decodes an output image's base64 and prepares it like an image file.
pub fn image_block(mime: &str, b64: &str, display: &str) -> Result<super::image::Prepared, ToolError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|e| {
            ToolError::new(
                "malformed_file",
                format!("an {mime} output of {display} is not valid base64: {e}"),
            )
        })?;
    super::image::prepare(&bytes, &format!("an image output of {display}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_and_outputs_render_in_order() {
        let nb = serde_json::json!({
            "metadata": {"kernelspec": {"language": "python"}},
            "cells": [
                {"cell_type": "markdown", "source": ["# Title\n", "text"]},
                {"cell_type": "code", "execution_count": 2, "source": "print(1)", "outputs": [
                    {"output_type": "stream", "name": "stdout", "text": ["1\n"]},
                    {"output_type": "error", "ename": "ValueError", "evalue": "bad", "traceback": ["\u{1b}[31mTrace\u{1b}[0m"]},
                ]},
            ],
        });
        let r = render(nb.to_string().as_bytes(), "n.ipynb").unwrap_or_else(|e| panic!("{}", e.message()));
        assert_eq!(
            r.lines,
            vec![
                "[cell 1 (markdown)]",
                "# Title",
                "text",
                "[cell 2 (code, python, execution_count 2)]",
                "print(1)",
                "[output: stdout]",
                "1",
                "[output: error ValueError: bad]",
                "Trace",
            ]
        );
    }
}
