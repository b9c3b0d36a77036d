//! PDFs for read_file: the text of each page (lopdf), selected with `pages`.
//!
//! Bounds: the file is at most [`MAX_FILE_BYTES`]; any one stream may
//! inflate to at most [`MAX_STREAM_BYTES`] while loading and one page's
//! content to as much while extracting (a compression bomb fails there);
//! at most [`MAX_PAGES_PER_CALL`] pages per call, the text cut at the
//! module's `max_read_bytes`; cancellation is checked between pages. A
//! parser panic on a malformed file is a `malformed_file` error.

use std::io::Cursor;

use lopdf::{Document, LoadOptions};
use toolhost_core::{Context, ToolError};

use super::unpanicked;

/// Largest PDF read_file opens.
pub const MAX_FILE_BYTES: u64 = 32 * 1024 * 1024;
/// Most bytes one stream (or one page's content) may decompress to.
pub const MAX_STREAM_BYTES: usize = 16 * 1024 * 1024;
/// Most pages one call extracts.
pub const MAX_PAGES_PER_CALL: u32 = 50;

/// A `pages` value: `"3"` or `"1-5"` (1-based, inclusive).
pub fn parse_pages(spec: &str) -> Result<(u32, u32), ToolError> {
    let bad = || {
        ToolError::invalid_input(format!(
            "pages {spec:?} is not a page or a range; give a page like \"3\" or a range like \"1-5\" (1-based)"
        ))
    };
    let number = |s: &str| s.trim().parse::<u32>().ok().filter(|n| *n >= 1);
    let (first, last) = match spec.split_once('-') {
        Some((a, b)) => (number(a).ok_or_else(bad)?, number(b).ok_or_else(bad)?),
        None => {
            let n = number(spec).ok_or_else(bad)?;
            (n, n)
        }
    };
    if last < first {
        return Err(bad());
    }
    Ok((first, last))
}

/// The text of the selected pages of the PDF in `bytes`.
pub fn read(
    bytes: Vec<u8>,
    pages: Option<&str>,
    max_bytes: usize,
    display: &str,
    ctx: &Context<'_>,
) -> Result<String, ToolError> {
    let wanted = pages.map(parse_pages).transpose()?;
    let doc = unpanicked("PDF", display, || {
        let options = LoadOptions {
            max_decompressed_size: Some(MAX_STREAM_BYTES),
            ..LoadOptions::default()
        };
        Document::load_from_with_options(Cursor::new(bytes), options).map_err(|e| {
            ToolError::new(
                "malformed_file",
                format!("{display} cannot be read as a PDF: {e}"),
            )
        })
    })?;
    if doc.is_encrypted() {
        return Err(ToolError::new(
            "unsupported_file_type",
            format!("{display} is an encrypted PDF; read_file does not open encrypted documents"),
        ));
    }
    let numbers: Vec<u32> = doc.get_pages().keys().copied().collect();
    let count = numbers.len() as u32;
    if count == 0 {
        return Err(ToolError::new(
            "malformed_file",
            format!("{display} is a PDF with no pages"),
        ));
    }
    let (first, last) = wanted.unwrap_or((1, count));
    if first > count {
        return Err(ToolError::invalid_input(format!(
            "pages {first}-{last}: {display} has {count} page(s); ask for pages from 1 to {count}"
        )));
    }
    let last = last.min(count);
    let stop = last.min(first.saturating_add(MAX_PAGES_PER_CALL - 1));
    let mut out = String::new();
    let mut empty = 0u32;
    let mut shown_last = first - 1;
    for number in first..=stop {
        ctx.check_cancelled()?;
        if out.len() >= max_bytes {
            break;
        }
        let text = unpanicked("PDF", display, || {
            doc.extract_text_with_limit(&[number], MAX_STREAM_BYTES)
                .map_err(|e| ToolError::new("malformed_file", format!("page {number}: {e}")))
        });
        out.push_str(&format!("[page {number} of {count}]\n"));
        match text {
            Ok(text) if text.trim().is_empty() => {
                empty += 1;
                out.push_str("[no text on this page]\n");
            }
            Ok(text) => {
                let room = max_bytes.saturating_sub(out.len());
                let (kept, cut) = crate::text::cut_line(&text, room);
                out.push_str(kept.trim_end());
                out.push('\n');
                if cut > 0 {
                    out.push_str(&format!(
                        "[page {number} cut after {room} characters (max_read_bytes); {cut} more characters]\n"
                    ));
                }
            }
            Err(e) => out.push_str(&format!(
                "[the text of this page cannot be extracted: {}]\n",
                e.message()
            )),
        }
        shown_last = number;
    }
    if shown_last < last || last < count && wanted.is_none() {
        out.push_str(&format!(
            "[showing pages {first}-{shown_last} of {count}; continue with pages=\"{}-{}\"]\n",
            shown_last + 1,
            count.min(shown_last + MAX_PAGES_PER_CALL)
        ));
    }
    if empty > 0 && empty == shown_last + 1 - first {
        out.push_str(
            "[no text layer on these pages: the PDF may hold scanned images; read_file does not run OCR]\n",
        );
    }
    ctx.set_metadata("total_pages", count);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_parse_single_and_ranges() {
        assert_eq!(parse_pages("3").ok(), Some((3, 3)));
        assert_eq!(parse_pages("1-5").ok(), Some((1, 5)));
        for bad in ["0", "5-1", "a", "1-", "-3", "", "1-2-3"] {
            assert!(parse_pages(bad).is_err(), "{bad}");
        }
    }
}
