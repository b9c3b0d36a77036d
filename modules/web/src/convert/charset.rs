//! Decoding bytes to text: the charset comes from a BOM, the Content-Type
//! header, or an HTML `<meta>` declaration, in that order; undeclared bytes
//! that are valid UTF-8 are UTF-8, otherwise windows-1252 (what browsers do).

use encoding_rs::{Encoding, UTF_8, WINDOWS_1252};

/// Decodes `bytes`; returns the text and the encoding's name.
pub fn decode(bytes: &[u8], header_charset: Option<&str>, is_html: bool) -> (String, &'static str) {
    let declared = header_charset
        .and_then(|label| Encoding::for_label(label.as_bytes()))
        .or_else(|| if is_html { meta_charset(bytes) } else { None });
    let encoding = match declared {
        Some(e) => e,
        None if std::str::from_utf8(bytes).is_ok() => UTF_8,
        // A body cut by the byte cap may end inside a character.
        None if utf8_but_for_tail(bytes) => UTF_8,
        None => WINDOWS_1252,
    };
    // `decode` lets a BOM override the label, as the Encoding Standard says.
    let (text, used, _had_errors) = encoding.decode(bytes);
    (text.into_owned(), used.name())
}

fn utf8_but_for_tail(bytes: &[u8]) -> bool {
    match std::str::from_utf8(bytes) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none(),
    }
}

/// The encoding an HTML document declares in its first 4 KiB, by
/// `<meta charset=…>` or `<meta http-equiv="Content-Type" content="…; charset=…">`.
pub fn meta_charset(bytes: &[u8]) -> Option<&'static Encoding> {
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]).to_ascii_lowercase();
    let mut rest = head.as_str();
    while let Some(at) = rest.find("<meta") {
        rest = &rest[at + 5..];
        let tag = &rest[..rest.find('>').unwrap_or(rest.len())];
        if let Some(pos) = tag.find("charset") {
            let value = tag[pos + 7..].trim_start();
            if let Some(value) = value.strip_prefix('=') {
                let value = value.trim_start().trim_start_matches(['"', '\'']);
                let end = value
                    .find(|c: char| c == '"' || c == '\'' || c == ';' || c == '/' || c.is_whitespace())
                    .unwrap_or(value.len());
                if let Some(encoding) = Encoding::for_label(&value.as_bytes()[..end]) {
                    // A page that claims UTF-16 in ASCII-compatible bytes is really UTF-8.
                    return Some(if encoding.name().starts_with("UTF-16") {
                        UTF_8
                    } else {
                        encoding
                    });
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_charset_wins() {
        let (text, name) = decode(b"caf\xe9", Some("iso-8859-1"), false);
        assert_eq!(text, "café");
        assert_eq!(name, "windows-1252");
    }

    #[test]
    fn meta_charset_is_read() {
        let html = b"<html><head><meta charset=\"windows-1252\"><title>q</title></head><body>\x93hi\x94</body></html>";
        let (text, name) = decode(html, None, true);
        assert!(text.contains("\u{201c}hi\u{201d}"), "{text}");
        assert_eq!(name, "windows-1252");
        let html =
            b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=Shift_JIS\">\x93\xfa\x96\x7b";
        let (text, name) = decode(html, None, true);
        assert_eq!(name, "Shift_JIS");
        assert!(text.contains("日本"), "{text}");
    }

    #[test]
    fn undeclared_bytes_fall_back_sensibly() {
        assert_eq!(decode("naïve".as_bytes(), None, true).0, "naïve");
        assert_eq!(decode(b"na\xefve", None, true).0, "naïve");
        assert_eq!(decode(b"\xef\xbb\xbfbom", Some("iso-8859-1"), false).0, "bom");
    }
}
