//! Streaming `cat -n` numbering: reads only up to the requested window, keeps
//! at most a bounded prefix of any line, so a 10 GB file or a 100 MB line
//! costs the window, not the file.

use std::borrow::Cow;
use std::io::{self, BufRead};

use super::cut_line;

/// Which lines to show, and the bounds on the answer.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// First line shown, 1-based.
    pub offset: usize,
    /// Most lines shown.
    pub limit: usize,
    /// Characters kept of one line.
    pub max_line_chars: usize,
    /// Bytes of numbered text before stopping.
    pub max_bytes: usize,
}

/// The numbered text and what was left out.
#[derive(Debug, Default)]
pub struct Numbered {
    /// `{:>6}\t{line}\n` per line.
    pub text: String,
    /// First line shown (0 when none).
    pub first: usize,
    /// Last line shown (0 when none).
    pub last: usize,
    /// Lines follow the last one shown.
    pub more: bool,
    /// Lines read so far (the file's line count when `more` is false).
    pub lines_seen: usize,
    /// Lines cut for length.
    pub cut_lines: usize,
    /// Some bytes were not UTF-8 and were replaced.
    pub lossy: bool,
    /// Stopped by `max_bytes` rather than `limit`.
    pub byte_capped: bool,
    /// Some shown line ended in CRLF.
    pub crlf: bool,
}

struct Line {
    kept: Vec<u8>,
    dropped_bytes: u64,
}

/// Numbers the lines of `reader` inside `window`. `cancelled` is polled
/// between chunks.
pub fn numbered<R: BufRead>(
    mut reader: R,
    window: Window,
    cancelled: &dyn Fn() -> bool,
) -> io::Result<Numbered> {
    let keep_cap = window.max_line_chars.saturating_mul(4).saturating_add(4);
    let mut out = Numbered::default();
    let mut line = Line {
        kept: Vec::new(),
        dropped_bytes: 0,
    };
    let mut open = false;
    let mut shown = 0usize;
    let mut chunks = 0u32;
    loop {
        chunks = chunks.wrapping_add(1);
        if chunks & 0xff == 0 && cancelled() {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "cancelled"));
        }
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let (end, newline) = match memchr::memchr(b'\n', buf) {
            Some(i) => (i, true),
            None => (buf.len(), false),
        };
        let wanted = out.lines_seen + 1 >= window.offset;
        if wanted {
            let room = keep_cap.saturating_sub(line.kept.len()).min(end);
            line.kept.extend_from_slice(&buf[..room]);
            line.dropped_bytes += (end - room) as u64;
        }
        open = true;
        reader.consume(end + usize::from(newline));
        if newline {
            open = false;
            out.lines_seen += 1;
            if wanted {
                let number = out.lines_seen;
                if !emit(&mut out, &mut line, number, window) {
                    out.more = true;
                    out.byte_capped = true;
                    out.lines_seen -= 1;
                    break;
                }
                shown += 1;
                if shown >= window.limit {
                    out.more = !reader.fill_buf()?.is_empty();
                    break;
                }
            }
        }
    }
    if open {
        out.lines_seen += 1;
        let number = out.lines_seen;
        if number >= window.offset && shown < window.limit && !emit(&mut out, &mut line, number, window) {
            out.more = true;
            out.byte_capped = true;
            out.lines_seen -= 1;
        }
    }
    Ok(out)
}

/// Appends one numbered line; false when it would pass `max_bytes`
/// (the first line is always shown, cut if it must be).
fn emit(out: &mut Numbered, line: &mut Line, number: usize, window: Window) -> bool {
    let dropped = std::mem::take(&mut line.dropped_bytes);
    let mut bytes: &[u8] = &line.kept;
    if dropped == 0 && bytes.last() == Some(&b'\r') {
        bytes = &bytes[..bytes.len() - 1];
        out.crlf = true;
    }
    let decoded: Cow<'_, str> = match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(s),
        Err(e) => {
            // A multi-byte char split by the keep cap is not a lossy file.
            let valid = e.valid_up_to();
            if dropped > 0 && bytes.len() - valid < 4 && e_is_incomplete(&bytes[valid..]) {
                String::from_utf8_lossy(&bytes[..valid])
            } else {
                out.lossy = true;
                String::from_utf8_lossy(bytes)
            }
        }
    };
    // Fewer bytes than the limit means fewer characters too: skip counting.
    let (kept, cut_chars) = if decoded.len() <= window.max_line_chars {
        (&*decoded, 0)
    } else {
        cut_line(&decoded, window.max_line_chars)
    };
    let marker = match (cut_chars, dropped) {
        (0, 0) => None,
        (c, 0) => Some(format!(" … [line cut: {c} more characters]")),
        (_, d) => Some(format!(
            " … [line cut at {} characters; about {d} more bytes]",
            window.max_line_chars
        )),
    };
    let entry_len = 8 + kept.len() + marker.as_ref().map_or(0, String::len);
    if out.first != 0 && out.text.len() + entry_len > window.max_bytes {
        line.kept.clear();
        return false;
    }
    push_number(&mut out.text, number);
    out.text.push_str(kept);
    if let Some(marker) = marker {
        out.text.push_str(&marker);
        out.cut_lines += 1;
    }
    out.text.push('\n');
    if out.first == 0 {
        out.first = number;
    }
    out.last = number;
    line.kept.clear();
    true
}

/// `{number:>6}\t` without the formatting machinery (it shows in profiles).
fn push_number(out: &mut String, number: usize) {
    let mut digits = [b' '; 20];
    let mut at = digits.len();
    let mut n = number;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let start = at.min(digits.len() - 6);
    for &b in &digits[start..] {
        out.push(b as char);
    }
    out.push('\t');
}

fn e_is_incomplete(tail: &[u8]) -> bool {
    tail.first().is_some_and(|b| *b >= 0xC0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &[u8], offset: usize, limit: usize) -> Numbered {
        let w = Window {
            offset,
            limit,
            max_line_chars: 10,
            max_bytes: 1000,
        };
        numbered(text, w, &|| false).unwrap_or_default()
    }

    #[test]
    fn windows_and_marks() {
        let mut s = String::new();
        push_number(&mut s, 7);
        push_number(&mut s, 1234567);
        assert_eq!(s, "     7\t1234567\t");
        let n = run(b"a\nb\nc\n", 2, 1);
        assert_eq!(n.text, "     2\tb\n");
        assert!(n.more);
        let n = run(b"a\r\nb", 1, 10);
        assert_eq!(n.text, "     1\ta\n     2\tb\n");
        assert!(n.crlf && !n.more);
        let n = run(b"0123456789abcdef\n", 1, 10);
        assert!(
            n.text.contains("0123456789 … [line cut: 6 more characters]"),
            "{}",
            n.text
        );
        let n = run(b"ok\n\xff\xfe\n", 1, 10);
        assert!(n.lossy);
        let long = vec![b'x'; 100_000];
        let n = run(&long, 1, 10);
        assert!(n.text.contains("about"), "{}", n.text);
        assert_eq!(n.cut_lines, 1);
    }
}
