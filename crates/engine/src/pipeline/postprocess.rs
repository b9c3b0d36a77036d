//! Stage 7, post-process: bound the output so one result cannot flood a
//! model's context. Long strings keep their head and tail and say how much
//! was cut; `metadata.truncated` carries the sizes.

use serde_json::{json, Value};
use toolhost_core::wire::{codes, Truncation};
use toolhost_core::{ContentBlock, ErrorInfo, Status, ToolResult};

use crate::tool::MountedTool;

/// Checks a successful output against the tool's `output_schema`, when it
/// has one; a tool that breaks its promise gets an `invalid_output` error
/// (the output stays attached for debugging).
pub fn check_output(tool: &MountedTool, mut result: ToolResult) -> ToolResult {
    if !result.success {
        return result;
    }
    let validator = match tool.output_validator() {
        None => return result,
        Some(Ok(v)) => v,
        Some(Err(e)) => {
            result.status = Status::Error;
            result.success = false;
            result.error = Some(ErrorInfo::new(codes::INVALID_OUTPUT, e.to_string()));
            return result;
        }
    };
    // A tool with text and data answers its schema with the data.
    let checked = result.structured.as_ref().unwrap_or(&result.output);
    if validator.is_valid(checked) {
        return result;
    }
    let violations = super::validate::violations(validator, checked);
    result.status = Status::Error;
    result.success = false;
    result.error = Some(
        ErrorInfo::new(
            codes::INVALID_OUTPUT,
            format!(
                "'{}' returned output that does not match its output schema; this is a bug in the tool",
                tool.name()
            ),
        )
        .details(json!({ "violations": violations })),
    );
    result
}

/// [`bound`], after keeping the whole output for `principal` in `store`
/// when it is over `max`, with a link to it in the result (see
/// [`crate::surface::outputs`]): nothing is cut without a way to read it.
pub fn bound_keeping(
    result: ToolResult,
    max: usize,
    store: &crate::surface::outputs::OutputStore,
    principal: &str,
) -> ToolResult {
    if json_len(&result.output) <= max {
        return result;
    }
    let link = store.keep(principal, &result);
    let mut result = bound(result, max);
    crate::surface::outputs::attach(&mut result, link);
    result
}

/// The most base64 bytes of binary blocks (images, audio, a resource's
/// `blob`) one result may carry: half of the 16 MiB a stdio MCP message may
/// be, so the answer still goes out whole. A module bounds its own media
/// further (the filesystem's images are at most 4 MiB).
pub const MAX_BINARY_BYTES: usize = 8 * 1024 * 1024;

/// Bounds the content blocks (an image a tool read, the blocks a mounted
/// MCP server answered), apart from `output`: their text shares `max`
/// bytes (`[host] max_output_bytes`, as `output` does), their binary data
/// [`MAX_BINARY_BYTES`]. Blocks are kept in order while they fit; the first
/// text that does not keeps its head and tail, and a binary block that
/// does not is replaced by a text block saying what it was, how large, and
/// which limit it passed: nothing is dropped without a word. The sizes join
/// `metadata.truncated`.
///
/// Structured data over `max` is dropped, counted in `metadata.truncated`:
/// it cannot be cut and stay valid under the tool's output schema, and
/// the output (already bounded, and the same data when a mounted server
/// sent it) stands in for it.
pub fn bound_content(mut result: ToolResult, max: usize) -> ToolResult {
    if let Some(size) = result
        .structured
        .as_ref()
        .map(json_len)
        .filter(|size| *size > max)
    {
        result.structured = None;
        add_truncation(&mut result, size, 0);
    }
    let (text, binary) = result.content.iter().fold((0, 0), |(t, b), block| {
        let len = block_len(block);
        if is_binary(block) {
            (t, b + len)
        } else {
            (t + len, b)
        }
    });
    if text <= max && binary <= MAX_BINARY_BYTES {
        return result;
    }
    let (mut text_left, mut binary_left) = (max, MAX_BINARY_BYTES);
    let original = text + binary;
    let content = std::mem::take(&mut result.content);
    result.content = content
        .into_iter()
        .map(|block| {
            let len = block_len(&block);
            let left = if is_binary(&block) {
                &mut binary_left
            } else {
                &mut text_left
            };
            let kept = match block {
                block if len <= *left => block,
                ContentBlock::Text { text } => ContentBlock::text(head_tail(&text, (*left).max(MARKER_ROOM))),
                other => ContentBlock::text(format!(
                    "[{} of {len} bytes left out: the result's content passed its limit of {} bytes{}]",
                    block_kind(&other),
                    if is_binary(&other) { MAX_BINARY_BYTES } else { max },
                    if is_binary(&other) {
                        " of binary data"
                    } else {
                        " ([host] max_output_bytes)"
                    },
                )),
            };
            *left = left.saturating_sub(block_len(&kept));
            kept
        })
        .collect();
    let kept: usize = result.content.iter().map(block_len).sum();
    add_truncation(&mut result, original, kept);
    result
}

/// Adds `original` bytes of which `kept` were kept to what
/// `metadata.truncated` already counts (the output's cut, made before).
fn add_truncation(result: &mut ToolResult, original: usize, kept: usize) {
    let (before, after) = result
        .metadata
        .truncated
        .map_or((0, 0), |t| (t.original_bytes, t.kept_bytes));
    result.metadata.truncated = Some(Truncation::new(before + original as u64, after + kept as u64));
}

/// Whether a block's size is its base64 data.
fn is_binary(block: &ContentBlock) -> bool {
    matches!(
        block,
        ContentBlock::Image { .. }
            | ContentBlock::Audio { .. }
            | ContentBlock::Resource { blob: Some(_), .. }
    )
}

/// A block's size: its text, or its base64 data, and its other strings
/// (its JSON text, counted without copying the block into a `Value`).
fn block_len(block: &ContentBlock) -> usize {
    json_len(block)
}

/// What a block is, for the note that replaces it.
fn block_kind(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Image { mime_type, .. } => format!("an image ({mime_type})"),
        ContentBlock::Audio { mime_type, .. } => format!("audio ({mime_type})"),
        ContentBlock::Resource { uri, .. } => format!("the resource {uri}"),
        ContentBlock::ResourceLink { uri, .. } => format!("the link to {uri}"),
        _ => "a content block".to_string(),
    }
}

/// Cuts `result.output` to at most about `max` serialized bytes.
pub fn bound(mut result: ToolResult, max: usize) -> ToolResult {
    let original = json_len(&result.output);
    if original <= max {
        return result;
    }
    let output = std::mem::take(&mut result.output);
    let mut shrunk = shrink_leaves(output.clone(), original, max);
    if json_len(&shrunk) > max {
        // The structure itself is too big (say, 100,000 small items): keep
        // the head and tail of its JSON text instead.
        let text = serde_json::to_string(&output).unwrap_or_default();
        shrunk = Value::String(head_tail(&text, max.saturating_sub(200)));
    }
    let kept = json_len(&shrunk);
    result.output = shrunk;
    result.metadata.truncated = Some(Truncation::new(original as u64, kept as u64));
    result
}

/// The size of a value's JSON text, counted without building the text.
pub(crate) fn json_len<T: serde::Serialize + ?Sized>(value: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => 0,
    }
}

/// Cuts the longest strings down to a common cap ("water filling") so the
/// whole fits, leaving short fields untouched. Escapes make the serialized
/// size larger than the raw one, so the cap is tightened until it fits.
fn shrink_leaves(value: Value, original: usize, max: usize) -> Value {
    let mut lengths = Vec::new();
    collect_lengths(&value, &mut lengths);
    let strings: usize = lengths.iter().sum();
    let structure = original.saturating_sub(strings);
    let markers = lengths.len() * MARKER_ROOM;
    let Some(budget) = max.checked_sub(structure + markers.min(max / 2)) else {
        return value;
    };
    lengths.sort_unstable();
    // Largest cap c with sum(min(len, c)) <= budget.
    let mut remaining = budget;
    let mut cap = 0;
    let count = lengths.len();
    for (i, len) in lengths.iter().enumerate() {
        let left = count - i;
        if len * left <= remaining {
            remaining -= len;
            cap = *len;
        } else {
            cap = remaining / left;
            break;
        }
    }
    let mut cut = cut_leaves(value.clone(), cap);
    for _ in 0..4 {
        let size = json_len(&cut);
        if size <= max || cap < 64 {
            break;
        }
        cap = cap.saturating_sub((size - max) / count.max(1) + 16);
        cut = cut_leaves(value.clone(), cap);
    }
    cut
}

const MARKER_ROOM: usize = 96;

fn collect_lengths(value: &Value, out: &mut Vec<usize>) {
    match value {
        Value::String(s) => out.push(escaped_len(s)),
        Value::Array(items) => items.iter().for_each(|v| collect_lengths(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_lengths(v, out)),
        _ => {}
    }
}

/// The length of `s` as a JSON string, quotes and escapes included.
fn escaped_len(s: &str) -> usize {
    2 + s
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..=0x1f => 6,
            _ => 1,
        })
        .sum::<usize>()
}

fn cut_leaves(value: Value, cap: usize) -> Value {
    match value {
        Value::String(s) if s.len() > cap => Value::String(head_tail(&s, cap)),
        Value::Array(items) => Value::Array(items.into_iter().map(|v| cut_leaves(v, cap)).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, cut_leaves(v, cap))).collect()),
        other => other,
    }
}

/// The first ~60% and last ~40% of `keep` bytes of `text`, with a marker
/// saying how much was cut. Cuts on char (and, nearby, line) boundaries.
pub fn head_tail(text: &str, keep: usize) -> String {
    if text.len() <= keep {
        return text.to_string();
    }
    let head_len = keep * 3 / 5;
    let tail_len = keep - head_len;
    let mut head_end = floor_boundary(text, head_len);
    if let Some(nl) = text[..head_end].rfind('\n') {
        if head_end - nl < 200 {
            head_end = nl + 1;
        }
    }
    let mut tail_start = ceil_boundary(text, text.len() - tail_len);
    if let Some(nl) = text[tail_start..].find('\n') {
        if nl < 200 && tail_start + nl + 1 < text.len() {
            tail_start += nl + 1;
        }
    }
    let cut = tail_start - head_end;
    format!(
        "{}\n[… {cut} bytes cut from the middle of {} …]\n{}",
        &text[..head_end],
        text.len(),
        &text[tail_start..]
    )
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn small_outputs_pass_untouched() {
        let r = bound(ToolResult::success("1", json!({"a": "b"})), 1024);
        assert_eq!(r.output, json!({"a": "b"}));
        assert!(r.metadata.truncated.is_none());
    }

    #[test]
    fn long_string_keeps_head_and_tail() {
        let text = format!("HEAD{}TAIL", "x".repeat(50_000));
        let r = bound(ToolResult::success("1", json!(text)), 2048);
        let out = r.output.as_str().unwrap();
        assert!(out.starts_with("HEAD") && out.ends_with("TAIL"), "{out}");
        assert!(out.contains("bytes cut from the middle"));
        let t = r.metadata.truncated.unwrap();
        assert_eq!(t.original_bytes, 50_010);
        assert!(t.kept_bytes <= 2048, "{t:?}");
    }

    #[test]
    fn objects_cut_only_their_long_fields() {
        let v = json!({"exit_code": 0, "stdout": "o".repeat(40_000), "stderr": "short"});
        let r = bound(ToolResult::success("1", v), 4096);
        assert_eq!(r.output["exit_code"], 0);
        assert_eq!(r.output["stderr"], "short");
        assert!(r.output["stdout"].as_str().unwrap().len() < 4096);
        assert!(json_len(&r.output) <= 4096);
    }

    #[test]
    fn many_small_items_fall_back_to_text() {
        let v = Value::Array((0..20_000).map(|i| json!(i)).collect());
        let r = bound(ToolResult::success("1", v), 2048);
        assert!(r.output.is_string());
        assert!(json_len(&r.output) <= 2048);
    }

    #[test]
    fn multibyte_text_is_cut_on_char_boundaries() {
        let text = "é".repeat(10_000);
        let r = bound(ToolResult::success("1", json!(text)), 1500);
        assert!(r.output.as_str().unwrap().contains('é'));
    }
}

#[cfg(test)]
mod content_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_within_the_limits_passes_untouched() {
        let blocks = vec![
            ContentBlock::text("short"),
            ContentBlock::image("image/png", "AAAA"),
        ];
        let r = bound_content(
            ToolResult::success("1", json!("x")).with_content(blocks.clone()),
            1024,
        );
        assert_eq!(r.content, blocks);
        assert!(r.metadata.truncated.is_none());
    }

    #[test]
    fn a_long_text_block_keeps_head_and_tail() {
        let text = format!("HEAD{}TAIL", "y".repeat(10_000));
        let r = bound_content(
            ToolResult::success("1", Value::Null).with_content(vec![ContentBlock::text(text)]),
            2048,
        );
        let ContentBlock::Text { text } = &r.content[0] else {
            panic!("{:?}", r.content)
        };
        assert!(text.starts_with("HEAD") && text.ends_with("TAIL") && text.contains("bytes cut"));
        let cut = r.metadata.truncated.expect("truncation");
        assert!(cut.kept_bytes < cut.original_bytes, "{cut:?}");
    }

    #[test]
    fn binary_over_its_limit_becomes_a_note_never_a_silent_loss() {
        let huge = "A".repeat(MAX_BINARY_BYTES + 4);
        let r = bound_content(
            ToolResult::success("1", Value::Null).with_content(vec![
                ContentBlock::image("image/png", "AAAA"),
                ContentBlock::image("image/png", huge),
                ContentBlock::text("after"),
            ]),
            1024,
        );
        assert_eq!(r.content.len(), 3);
        assert_eq!(r.content[0], ContentBlock::image("image/png", "AAAA"));
        let ContentBlock::Text { text } = &r.content[1] else {
            panic!("{:?}", r.content[1])
        };
        assert!(
            text.contains("an image (image/png)") && text.contains("left out"),
            "{text}"
        );
        assert_eq!(r.content[2], ContentBlock::text("after"));
        assert!(r.metadata.truncated.is_some());
    }
}

#[cfg(test)]
mod escape_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escaped_newlines_still_keep_head_and_tail() {
        let text = "0123456789\n".repeat(100_000);
        let r = bound(ToolResult::success("1", json!(text)), 4096);
        let out = r.output.as_str().unwrap();
        assert!(out.starts_with("0123456789\n"), "{:?}", &out[..40]);
        assert!(json_len(&r.output) <= 4096);
    }
}
