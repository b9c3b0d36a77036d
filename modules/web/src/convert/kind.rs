//! What kind of content a response holds, from its Content-Type (or, when
//! there is none, from its first bytes).

/// How a body is turned into text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// HTML or XHTML: converted to Markdown.
    Html,
    /// JSON, XML, plain text, code: passed through as text.
    Text,
    /// Anything else: refused.
    Binary,
}

/// The media type (lowercase, no parameters) and the charset parameter.
pub fn parse_content_type(header: &str) -> (String, Option<String>) {
    let mut parts = header.split(';');
    let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    let charset = parts.find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| v.trim().trim_matches(['"', '\'']).to_string())
    });
    (media, charset)
}

/// The kind of a declared media type; `None` when the type says nothing
/// useful (missing, or `application/octet-stream` which servers send for
/// anything) and the bytes must decide.
pub fn kind_of_media(media: &str) -> Option<Kind> {
    let (top, sub) = media.split_once('/').unwrap_or((media, ""));
    let kind = match (top, sub) {
        ("", _) | ("application", "octet-stream") => return None,
        ("text", "html") | ("application", "xhtml+xml") => Kind::Html,
        ("text", _) => Kind::Text,
        ("application", s)
            if s.ends_with("json")
                || s.ends_with("+json")
                || s.ends_with("xml")
                || s.ends_with("+xml")
                || matches!(
                    s,
                    "javascript"
                        | "ecmascript"
                        | "x-javascript"
                        | "x-sh"
                        | "x-yaml"
                        | "yaml"
                        | "toml"
                        | "x-toml"
                        | "sql"
                        | "graphql"
                        | "x-ndjson"
                        | "csv"
                        | "x-www-form-urlencoded"
                ) =>
        {
            Kind::Text
        }
        ("image", "svg+xml") => Kind::Text,
        _ => Kind::Binary,
    };
    Some(kind)
}

/// Guesses from the bytes: NULs or many control bytes mean binary; a leading
/// `<!doctype html` or `<html` means HTML.
pub fn sniff(bytes: &[u8]) -> Kind {
    let head = &bytes[..bytes.len().min(1024)];
    let controls = head
        .iter()
        .filter(|&&b| b == 0 || (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c | 0x1b)))
        .count();
    if head.contains(&0) || controls * 20 > head.len().max(1) {
        return Kind::Binary;
    }
    let start = String::from_utf8_lossy(&head[..head.len().min(256)])
        .trim_start()
        .to_ascii_lowercase();
    if start.starts_with("<!doctype html") || start.starts_with("<html") || start.contains("<head") {
        Kind::Html
    } else {
        Kind::Text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_are_classified() {
        assert_eq!(
            parse_content_type("text/HTML; Charset=\"ISO-8859-1\""),
            ("text/html".into(), Some("ISO-8859-1".into()))
        );
        assert_eq!(kind_of_media("text/html"), Some(Kind::Html));
        assert_eq!(kind_of_media("application/xhtml+xml"), Some(Kind::Html));
        assert_eq!(kind_of_media("application/json"), Some(Kind::Text));
        assert_eq!(kind_of_media("application/ld+json"), Some(Kind::Text));
        assert_eq!(kind_of_media("text/plain"), Some(Kind::Text));
        assert_eq!(kind_of_media("image/png"), Some(Kind::Binary));
        assert_eq!(kind_of_media("application/pdf"), Some(Kind::Binary));
        assert_eq!(kind_of_media("application/octet-stream"), None);
    }

    #[test]
    fn sniffing_tells_html_text_and_binary_apart() {
        assert_eq!(sniff(b"<!DOCTYPE html><html>"), Kind::Html);
        assert_eq!(sniff(b"just words\n"), Kind::Text);
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"), Kind::Binary);
    }
}
