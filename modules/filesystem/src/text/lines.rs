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

/// The part of a line met over several chunks (a line longer than the
/// reader's buffer, or one cut by the buffer's end).
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
    // A line has begun in an earlier chunk and has not ended yet.
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
        if out.text.capacity() == 0 {
            out.text.reserve(answer_capacity(buf.len(), window));
        }
        let (end, newline) = match memchr::memchr(b'\n', buf) {
            Some(i) => (i, true),
            None => (buf.len(), false),
        };
        let number = out.lines_seen + 1;
        let wanted = number >= window.offset;
        let mut fits = true;
        if wanted {
            if newline && !open && end <= keep_cap {
                // The whole line is in the buffer: number it from there.
                fits = emit(&mut out, &buf[..end], 0, number, window);
            } else {
                let room = keep_cap.saturating_sub(line.kept.len()).min(end);
                line.kept.extend_from_slice(&buf[..room]);
                line.dropped_bytes += (end - room) as u64;
                if newline {
                    let dropped = std::mem::take(&mut line.dropped_bytes);
                    fits = emit(&mut out, &line.kept, dropped, number, window);
                    line.kept.clear();
                }
            }
        }
        reader.consume(end + usize::from(newline));
        if !newline {
            open = true;
            continue;
        }
        open = false;
        out.lines_seen = number;
        if wanted {
            if !fits {
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
    if open {
        out.lines_seen += 1;
        let number = out.lines_seen;
        let dropped = std::mem::take(&mut line.dropped_bytes);
        if number >= window.offset
            && shown < window.limit
            && !emit(&mut out, &line.kept, dropped, number, window)
        {
            out.more = true;
            out.byte_capped = true;
            out.lines_seen -= 1;
        }
    }
    Ok(out)
}

/// Numbers the lines of a file held whole in memory: the same answer as
/// [`numbered`] gives for `bytes`, built faster when every line shown is
/// short (then it is copied as is and UTF-8 is checked once, on the answer).
pub fn numbered_slice(bytes: &[u8], window: Window, cancelled: &dyn Fn() -> bool) -> io::Result<Numbered> {
    match numbered_plain(bytes, window) {
        Some(out) => Ok(out),
        None => numbered(bytes, window, cancelled),
    }
}

/// Room for the numbered text of `len` bytes: about a tab and six digits
/// per line, a quarter more, bounded by the answer's cap.
fn answer_capacity(len: usize, window: Window) -> usize {
    let guess = len.saturating_add(len / 4).saturating_add(64);
    guess.min(window.max_bytes.saturating_add(1024))
}

/// [`numbered`] for the common case; `None` when a line shown would need
/// cutting, or the answer would not be valid UTF-8 (the general way then
/// cuts, marks and replaces as it must).
fn numbered_plain(bytes: &[u8], window: Window) -> Option<Numbered> {
    let mut out = Numbered::default();
    let mut text = Vec::with_capacity(answer_capacity(bytes.len(), window));
    let mut newlines = memchr::memchr_iter(b'\n', bytes);
    let mut at = 0;
    let mut shown = 0usize;
    while at < bytes.len() {
        let (end, next) = match newlines.next() {
            Some(i) => (i, i + 1),
            None => (bytes.len(), bytes.len()),
        };
        let number = out.lines_seen + 1;
        let wanted = number >= window.offset;
        if wanted {
            let mut line = &bytes[at..end];
            if let [rest @ .., b'\r'] = line {
                line = rest;
                out.crlf = true;
            }
            if line.len() > window.max_line_chars {
                return None;
            }
            if out.first != 0 && text.len() + 8 + line.len() > window.max_bytes {
                out.more = true;
                out.byte_capped = true;
                break;
            }
            push_number_bytes(&mut text, number);
            text.extend_from_slice(line);
            text.push(b'\n');
            if out.first == 0 {
                out.first = number;
            }
            out.last = number;
            shown += 1;
        }
        out.lines_seen = number;
        at = next;
        if wanted && shown >= window.limit {
            out.more = at < bytes.len();
            break;
        }
    }
    out.text = String::from_utf8(text).ok()?;
    Some(out)
}

/// `{number:>6}\t` as bytes, without the formatting machinery (it shows
/// in profiles): the buffer and where the field starts in it.
fn number_field(number: usize) -> ([u8; 21], usize) {
    let mut digits = [b' '; 21];
    digits[20] = b'\t';
    let mut at = 20;
    let mut n = number;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // Up to six digits: always seven bytes.
    (digits, at.min(20 - 6))
}

fn push_number_bytes(out: &mut Vec<u8>, number: usize) {
    let (digits, start) = number_field(number);
    out.extend_from_slice(&digits[start..]);
}

/// Appends one numbered line (`bytes` kept of it, `dropped` more bytes not
/// kept); false when it would pass `max_bytes` (the first line is always
/// shown, cut if it must be).
fn emit(out: &mut Numbered, mut bytes: &[u8], dropped: u64, number: usize, window: Window) -> bool {
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
    true
}

fn push_number(out: &mut String, number: usize) {
    let (digits, start) = number_field(number);
    out.extend(digits[start..].iter().map(|&b| char::from(b)));
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
    fn in_memory_numbering_matches_streaming() {
        let texts: [&[u8]; 8] = [
            b"a\nb\nc\n",
            b"a\r\nb",
            b"0123456789abcdef\nx\n",
            b"\n\n\n",
            b"no newline at all",
            "é\u{1F600}é long line of many chars here\n".as_bytes(),
            b"ok\n\xff\xfe\n",
            b"",
        ];
        let crlf_long: &[u8] = b"0123456789\r\n0123456789a\r\nb\r\n";
        let bad_late: &[u8] = b"a\nb\nc\n\xff\n";
        let mut long = "x".repeat(100);
        long.push('\n');
        long.push_str(&"é".repeat(30));
        let many: String = (0..1_000).map(|i| format!("line {i}\n")).collect();
        let texts = texts
            .iter()
            .copied()
            .chain([long.as_bytes(), crlf_long, bad_late, many.as_bytes()]);
        for text in texts {
            for (offset, limit, max_bytes) in [
                (1, 10, 1000),
                (2, 1, 1000),
                (1, 2, 20),
                (3, 5, 1000),
                (9, 1, 1000),
                (1, 2000, 100_000),
                (995, 10, 1000),
                (1, 2000, 50),
            ] {
                let w = Window {
                    offset,
                    limit,
                    max_line_chars: 10,
                    max_bytes,
                };
                let streamed = numbered(text, w, &|| false).unwrap_or_default();
                let whole = numbered_slice(text, w, &|| false).unwrap_or_default();
                assert_eq!(format!("{streamed:?}"), format!("{whole:?}"), "{text:?} {w:?}");
            }
        }
    }

    #[test]
    fn windows_and_marks() {
        let mut s = String::new();
        push_number(&mut s, 7);
        push_number(&mut s, 1234567);
        assert_eq!(s, "     7\t1234567\t");
        let mut b = Vec::new();
        push_number_bytes(&mut b, 7);
        push_number_bytes(&mut b, 123456);
        push_number_bytes(&mut b, 1234567);
        assert_eq!(b, b"     7\t123456\t1234567\t");
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
