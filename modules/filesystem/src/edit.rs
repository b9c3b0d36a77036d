//! The pure part of edit_file: finding `old_string`, CRLF handling, the
//! "did you mean" answers, and the short diff.

use toolhost_core::ToolError;

use crate::text::similar::bigram_similarity;

/// An applied edit: the new text, how many replacements, a short diff.
pub struct Applied {
    /// The whole new content.
    pub content: String,
    /// Replacements made.
    pub count: usize,
    /// A unified-style excerpt of the change.
    pub diff: String,
}

/// `\n` line endings as `\r\n` (without doubling existing `\r\n`).
fn to_crlf(s: &str) -> String {
    s.replace("\r\n", "\n").replace('\n', "\r\n")
}

/// 1-based line number of byte `at`.
fn line_of(text: &str, at: usize) -> usize {
    memchr::memchr_iter(b'\n', &text.as_bytes()[..at]).count() + 1
}

/// Applies the edit or explains, with line numbers, why it cannot.
pub fn apply(
    content: &str,
    old: &str,
    new: &str,
    replace_all: bool,
    display: &str,
) -> Result<Applied, ToolError> {
    if old.is_empty() {
        return Err(ToolError::invalid_input(
            "old_string is empty; give the exact text to replace (use write_file to create or overwrite a whole file)",
        ));
    }
    if old == new {
        return Err(ToolError::invalid_input(
            "old_string and new_string are the same; there is nothing to change",
        ));
    }
    // A CRLF file is matched with CRLF line endings and keeps them.
    let (old, new) = if content.contains("\r\n") && old.contains('\n') && !content.contains(old) {
        (to_crlf(old), to_crlf(new))
    } else if content.contains("\r\n") && !new.contains("\r\n") && new.contains('\n') {
        (old.to_string(), to_crlf(new))
    } else {
        (old.to_string(), new.to_string())
    };
    let starts: Vec<usize> = content.match_indices(old.as_str()).map(|(i, _)| i).collect();
    match starts.len() {
        0 => return Err(not_found(content, &old, display)),
        n if n > 1 && !replace_all => {
            let lines: Vec<String> = starts
                .iter()
                .take(20)
                .map(|&s| line_of(content, s).to_string())
                .collect();
            let more = if n > 20 { ", …" } else { "" };
            return Err(ToolError::invalid_input(format!(
                "old_string matches {n} times in {display} (lines {}{more}); include more surrounding lines to make it unique, or set replace_all to true",
                lines.join(", ")
            )));
        }
        _ => {}
    }
    let replaced = content.replace(old.as_str(), new.as_str());
    let diff = diff(content, &starts, &old, &new);
    Ok(Applied {
        content: replaced,
        count: starts.len(),
        diff,
    })
}

/// Zero matches: say so, hint at whitespace, and show the closest lines.
fn not_found(content: &str, old: &str, display: &str) -> ToolError {
    let mut message = format!("old_string was not found in {display}.");
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    if squash(content).contains(&squash(old)) {
        message.push_str(
            " It matches if whitespace is ignored: check indentation, tabs versus spaces and line endings.",
        );
    }
    let probe = old.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let mut scored: Vec<(f64, usize, &str)> = content
        .lines()
        .take(200_000)
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (bigram_similarity(probe, l.trim()), i + 1, l))
        .filter(|(score, _, _)| *score >= 0.5)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    if scored.is_empty() {
        message.push_str(" No line resembles it; read_file the file to see its current content.");
    } else {
        message.push_str(" The closest lines are:");
        for (_, number, line) in scored.iter().take(3) {
            let (shown, cut) = crate::text::cut_line(line.trim_end_matches('\r'), 200);
            let ellipsis = if cut > 0 { " …" } else { "" };
            message.push_str(&format!("\n{number:>6}\t{shown}{ellipsis}"));
        }
        message.push_str("\nCopy old_string exactly from the file (read_file shows it).");
    }
    ToolError::invalid_input(message)
}

/// Line span `[start, end)` of byte range `[from, to)` widened to whole lines.
fn widen(text: &str, from: usize, to: usize) -> (usize, usize) {
    let bytes = text.as_bytes();
    let start = memchr::memrchr(b'\n', &bytes[..from]).map_or(0, |i| i + 1);
    let end = if to > from && bytes.get(to - 1) == Some(&b'\n') {
        to
    } else {
        memchr::memchr(b'\n', &bytes[to..]).map_or(bytes.len(), |i| to + i + 1)
    };
    (start, end)
}

fn push_lines(out: &mut String, sign: char, text: &str) {
    let lines: Vec<&str> = text.lines().collect();
    for line in lines.iter().take(12) {
        let (shown, cut) = crate::text::cut_line(line.trim_end_matches('\r'), 200);
        out.push_str(&format!("{sign}{shown}{}\n", if cut > 0 { " …" } else { "" }));
    }
    if lines.len() > 12 {
        out.push_str(&format!("{sign}… ({} more lines)\n", lines.len() - 12));
    }
}

/// A short unified-style diff of the first few replacements.
fn diff(before: &str, starts: &[usize], old: &str, new: &str) -> String {
    let mut out = String::new();
    for &start in starts.iter().take(3) {
        let (a, b) = widen(before, start, start + old.len());
        let line = line_of(before, start);
        out.push_str(&format!("@@ line {line} @@\n"));
        push_lines(&mut out, '-', &before[a..b]);
        // The new region: same prefix and suffix, the replacement between.
        let prefix = &before[a..start];
        let suffix = &before[start + old.len()..b];
        push_lines(&mut out, '+', &format!("{prefix}{new}{suffix}"));
    }
    if starts.len() > 3 {
        out.push_str(&format!("… and {} more replacements\n", starts.len() - 3));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(content: &str, old: &str, new: &str, all: bool) -> Applied {
        apply(content, old, new, all, "f").unwrap_or_else(|e| panic!("{}", e.message()))
    }

    #[test]
    fn replaces_once_and_keeps_crlf() {
        let a = ok("a\r\nb\r\nc\r\n", "a\nb\n", "x\ny\n", false);
        assert_eq!(a.content, "x\r\ny\r\nc\r\n");
        let a = ok("one\r\ntwo\r\n", "two", "2\nlines", false);
        assert_eq!(a.content, "one\r\n2\r\nlines\r\n");
        assert!(a.diff.contains("-two") && a.diff.contains("+2"), "{}", a.diff);
    }

    #[test]
    fn counts_and_line_numbers_when_ambiguous() {
        let e = apply("x\nfoo\ny\nfoo\n", "foo", "bar", false, "f.txt")
            .err()
            .map(|e| e.message().to_string());
        let e = e.unwrap_or_default();
        assert!(e.contains("2 times") && e.contains("lines 2, 4"), "{e}");
        let a = ok("x\nfoo\ny\nfoo\n", "foo", "bar", true);
        assert_eq!((a.content.as_str(), a.count), ("x\nbar\ny\nbar\n", 2));
    }

    #[test]
    fn zero_matches_show_closest_lines() {
        let e = apply(
            "fn main() {\n    let total = 1;\n}\n",
            "let totl = 1;",
            "x",
            false,
            "f",
        )
        .err()
        .map(|e| e.message().to_string())
        .unwrap_or_default();
        assert!(
            e.contains("not found") && e.contains("     2\t    let total = 1;"),
            "{e}"
        );
        let e = apply("a  b\n", "a b", "x", false, "f")
            .err()
            .map(|e| e.message().to_string())
            .unwrap_or_default();
        assert!(e.contains("whitespace"), "{e}");
    }
}
