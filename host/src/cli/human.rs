//! Output for a person at a terminal: the tool's text and a one-line
//! status instead of JSON, and an aligned table for `list`.
//!
//! Used only when stdout is a terminal and `--json` was not given; a pipe,
//! a file or `--json` gets the JSON exactly as before, so scripts never see
//! this format. Colour only when [`crate::term::colour_stdout`] allows it.
//! Everything a tool or a server wrote is escaped
//! ([`crate::escape::escape_text`], and [`crate::escape::escape_line`] for what
//! must stay on one line): it cannot set the terminal's title or colours,
//! reorder the screen, or forge a line of the table.

use serde_json::Value;
use toolhost_core::ToolResult;

use crate::escape::{escape_line, escape_text};

const GREEN: &str = "\x1b[32m";
const RED: &str = "\x1b[31m";
const BOLD: &str = "\x1b[1m";
const DIM: &str = "\x1b[2m";
const RESET: &str = "\x1b[0m";

/// Wraps `text` in an SGR colour when `colour` is on.
fn paint(text: &str, sgr: &str, colour: bool) -> String {
    if colour {
        format!("{sgr}{text}{RESET}")
    } else {
        text.to_string()
    }
}

/// The tool's output as a person reads it: a string as is, nothing for
/// null, anything else as indented JSON (the same text MCP clients get).
pub(super) fn output_text(output: &Value) -> Option<String> {
    match output {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::String(s) => Some(escape_text(s.trim_end_matches('\n')).into_owned()),
        other => serde_json::to_string_pretty(other)
            .ok()
            .map(|json| crate::escape::escape_json(&json).into_owned()),
    }
}

/// `✓ read_file: success (1.2 ms)` or `✗ bash: timeout [timeout]: message (…)`.
pub(super) fn status_line(label: &str, result: &ToolResult, colour: bool) -> String {
    let label = escape_line(label);
    let ms = format!("({:.1} ms)", result.metadata.duration_ms);
    let mut line = if result.success {
        format!(
            "{} {label}: {}",
            paint("✓", GREEN, colour),
            result.status.as_str()
        )
    } else {
        let mut s = format!(
            "{} {label}: {}",
            paint("✗", RED, colour),
            paint(result.status.as_str(), RED, colour)
        );
        if let Some(error) = &result.error {
            s.push_str(&format!(" [{}]", escape_line(&error.code)));
            if !error.message.is_empty() {
                s.push_str(": ");
                s.push_str(&escape_line(error.message.lines().next().unwrap_or_default()));
            }
        }
        s
    };
    if let Some(cut) = &result.metadata.truncated {
        line.push_str(&format!(
            " (output cut from {} to {} bytes)",
            cut.original_bytes, cut.kept_bytes
        ));
    }
    line.push(' ');
    line.push_str(&paint(&ms, DIM, colour));
    line
}

/// A result for a person: its text, its content blocks (an image as
/// `[image: image/png, N bytes]`), then its status line.
pub(super) fn result_block(label: &str, result: &ToolResult, colour: bool) -> String {
    // A mounted server's result: its output is the text of its blocks,
    // shown once, with the blocks.
    let mut parts: Vec<String> = if blocks_say(result) {
        Vec::new()
    } else {
        output_text(&result.output).into_iter().collect()
    };
    parts.extend(result.content.iter().map(content_line));
    parts.push(status_line(label, result, colour));
    parts.join("\n")
}

/// Whether the output is a string the text blocks already hold, joined.
fn blocks_say(result: &ToolResult) -> bool {
    let Some(output) = result.output.as_str() else {
        return false;
    };
    let texts: Vec<&str> = result
        .content
        .iter()
        .filter_map(|b| match b {
            toolhost_core::ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    !texts.is_empty() && texts.join("\n") == output
}

/// One content block as a person reads it.
fn content_line(block: &toolhost_core::ContentBlock) -> String {
    match block {
        toolhost_core::ContentBlock::Text { text } => escape_text(text.trim_end_matches('\n')).into_owned(),
        toolhost_core::ContentBlock::Image { mime_type, data } => {
            format!("[image: {}, {} bytes]", escape_line(mime_type), base64_len(data))
        }
        toolhost_core::ContentBlock::Audio { mime_type, data } => {
            format!("[audio: {}, {} bytes]", escape_line(mime_type), base64_len(data))
        }
        toolhost_core::ContentBlock::ResourceLink { uri, name, .. } => {
            format!("[link: {} ({})]", escape_line(uri), escape_line(name))
        }
        toolhost_core::ContentBlock::Resource {
            uri,
            text: Some(text),
            ..
        } => format!(
            "[resource: {}]\n{}",
            escape_line(uri),
            escape_text(text.trim_end_matches('\n'))
        ),
        toolhost_core::ContentBlock::Resource {
            uri, mime_type, blob, ..
        } => format!(
            "[resource: {}, {}, {} bytes]",
            escape_line(uri),
            escape_line(mime_type.as_deref().unwrap_or("binary")),
            blob.as_deref().map_or(0, base64_len)
        ),
        #[allow(unreachable_patterns)]
        _ => "[content block]".to_string(),
    }
}

/// The decoded size of standard base64 text (padding counted off).
fn base64_len(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|b| *b == b'=').count().min(2);
    (data.len() / 4 * 3).saturating_sub(padding)
}

/// Rows under a header, each column padded to its widest cell; the last
/// column is never padded. Cells are escaped to one line each.
pub(super) fn table(header: &[&str], rows: &[Vec<String>], colour: bool) -> Vec<String> {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|row| row.iter().map(|cell| escape_line(cell).into_owned()).collect())
        .collect();
    let columns = header.len();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (i, cell) in row.iter().enumerate().take(columns) {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                out.push_str(cell);
            } else {
                out.push_str(cell);
                out.push_str(&" ".repeat(widths[i] - cell.chars().count() + 2));
            }
        }
        out
    };
    let mut lines = vec![paint(&line(header.to_vec()), BOLD, colour)];
    lines.extend(rows.iter().map(|r| line(r.iter().map(String::as_str).collect())));
    lines
}

#[cfg(test)]
mod content_tests {
    use super::*;

    #[test]
    fn an_image_block_reads_as_its_type_and_size() {
        // "hello" is 5 bytes: aGVsbG8= in base64.
        let result = ToolResult::success("c", Value::String("seen".into())).with_content(vec![
            toolhost_core::ContentBlock::image("image/png", "aGVsbG8="),
            toolhost_core::ContentBlock::text("caption\n"),
        ]);
        let block = result_block("read_file", &result, false);
        let lines: Vec<&str> = block.lines().collect();
        assert_eq!(&lines[..3], ["seen", "[image: image/png, 5 bytes]", "caption"]);
        assert_eq!(base64_len("aGVsbG8h"), 6);
        assert_eq!(base64_len("aGVsbA=="), 4);
    }
}
