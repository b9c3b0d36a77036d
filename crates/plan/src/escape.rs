//! Foreign text made safe to print for a person: what tools, modules and
//! mounted servers wrote can hold escape sequences (set a terminal's title
//! or colours, clear it), newlines and carriage returns (forge a line of a
//! table or a log), and bidirectional formatting characters (reorder what
//! follows on screen). These functions show each as a visible escape.

/// `text` made safe to print on one line of a terminal: every control
/// character (C0, DEL, C1: the escape sequences that set a window's title
/// or colours, a newline or carriage return that would start a line of its
/// own) and every bidirectional formatting character (which reorders what
/// follows it on screen) is written as a visible escape (`\n`, `\x1b`,
/// `\u{202e}`); everything else passes as is.
pub fn escape_line(text: &str) -> std::borrow::Cow<'_, str> {
    escape(text, false)
}

/// Like [`escape_line`], but newlines and tabs pass: for a tool's text,
/// which may span lines, printed for a person.
pub fn escape_text(text: &str) -> std::borrow::Cow<'_, str> {
    escape(text, true)
}

fn escape(text: &str, keep_lines: bool) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| {
        let layout = keep_lines && matches!(c, '\n' | '\t');
        !layout && (c.is_control() || is_bidi_control(c))
    };
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !unsafe_char(c) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:04x}}}", c as u32)),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The Unicode bidirectional formatting characters (marks, embeddings,
/// overrides, isolates), which change the order in which a terminal shows
/// what follows, and the line and paragraph separators, which some break
/// lines at: not controls to Rust, but as unsafe to print raw.
fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{061c}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
    )
}

/// JSON text for a terminal: the characters [`escape_line`] escapes that
/// JSON itself leaves raw (C1 controls, DEL, bidirectional formatting) are
/// written as `\uXXXX` escapes, so the text still parses to the same value.
/// serde_json already escapes C0 controls.
pub fn escape_json(json: &str) -> std::borrow::Cow<'_, str> {
    let raw = |c: char| c == '\u{7f}' || ('\u{80}'..='\u{9f}').contains(&c) || is_bidi_control(c);
    if !json.chars().any(raw) {
        return std::borrow::Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 8);
    for c in json.chars() {
        if raw(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_and_bidi_characters_become_visible_escapes() {
        assert_eq!(escape_line("read_file"), "read_file");
        assert_eq!(
            escape_line("a\x1b]0;pwned\x07b\nc\r\u{9b}d\u{202e}e"),
            "a\\x1b]0;pwned\\x07b\\nc\\r\\x9bd\\u{202e}e"
        );
        assert_eq!(
            escape_text("line 1\n\tline 2\x1b[31m"),
            "line 1\n\tline 2\\x1b[31m"
        );
        assert_eq!(escape_line("a\u{2028}b"), "a\\u{2028}b");
    }

    #[test]
    fn escaped_json_parses_to_the_same_value() {
        let value = serde_json::json!({"k\u{202e}": "a\u{9b}b\u{7f}\x1b"});
        let text = serde_json::to_string(&value).unwrap();
        let safe = escape_json(&text);
        assert!(!safe.contains('\u{202e}') && !safe.contains('\u{9b}') && !safe.contains('\x1b'));
        assert_eq!(serde_json::from_str::<serde_json::Value>(&safe).unwrap(), value);
    }
}
