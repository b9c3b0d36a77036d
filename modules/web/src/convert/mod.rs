//! Turning a response body into text: kind, charset, HTML to Markdown.

pub mod charset;
pub mod flatten;
pub mod html;
pub mod kind;
#[cfg(test)]
mod props;

use kind::Kind;

/// A body as text, ready for paging.
#[derive(Debug, Clone)]
pub struct Text {
    /// The page title (HTML only).
    pub title: Option<String>,
    /// Markdown (for HTML) or the text itself.
    pub content: String,
    /// The charset the bytes were decoded with.
    pub charset: &'static str,
    /// "html" or "text".
    pub format: &'static str,
}

/// Converts a text body (`kind` is Html or Text). `check` is called while
/// HTML converts; its error (deadline, cancellation) stops the conversion.
pub fn to_text<E>(
    bytes: &[u8],
    kind: Kind,
    header_charset: Option<&str>,
    url: &str,
    extract: bool,
    check: impl FnMut() -> Result<(), E>,
) -> Result<Text, E> {
    let is_html = kind == Kind::Html;
    let (decoded, charset) = charset::decode(bytes, header_charset, is_html);
    Ok(if is_html {
        let converted = html::to_markdown(&decoded, url, extract, check)?;
        Text {
            title: converted.title,
            content: converted.markdown,
            charset,
            format: "markdown",
        }
    } else {
        Text {
            title: None,
            content: decoded,
            charset,
            format: "text",
        }
    })
}
