//! Paging over converted text by characters, so a long page can be read in
//! parts and a truncated answer can say exactly where to continue.

/// One page of a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The characters of this page.
    pub text: String,
    /// Where the page starts (characters).
    pub offset: usize,
    /// Characters in the whole text.
    pub total_chars: usize,
    /// Where the next page starts, when there is more.
    pub next_offset: Option<usize>,
}

/// An offset past the end of the text. A single struct: it is the only
/// way paging fails, and web_fetch answers it `invalid_input`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "offset {offset} is past the end: the content has {total_chars} characters (offsets 0 to {})",
    total_chars.saturating_sub(1)
)]
pub struct PastTheEnd {
    /// The offset asked for.
    pub offset: usize,
    /// Characters in the text.
    pub total_chars: usize,
}

/// Cuts `[offset, offset + limit)` out of `text`, counted in characters.
/// An offset past the end is an error that says how long the text is.
pub fn page(text: &str, offset: usize, limit: usize) -> Result<Page, PastTheEnd> {
    let total_chars = text.chars().count();
    if offset > total_chars || (offset == total_chars && offset > 0) {
        return Err(PastTheEnd { offset, total_chars });
    }
    let byte_at = |chars: usize| text.char_indices().nth(chars).map_or(text.len(), |(i, _)| i);
    let start = byte_at(offset);
    let end_char = offset.saturating_add(limit).min(total_chars);
    let end = start
        + text[start..]
            .char_indices()
            .nth(end_char - offset)
            .map_or(text.len() - start, |(i, _)| i);
    Ok(Page {
        text: text[start..end].to_string(),
        offset,
        total_chars,
        next_offset: (end_char < total_chars).then_some(end_char),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_cover_the_text_and_name_the_next_offset() {
        let text = "héllo wörld, ünïcode ✓".repeat(3);
        let total = text.chars().count();
        let mut offset = 0;
        let mut joined = String::new();
        loop {
            let p = page(&text, offset, 10).unwrap();
            assert!(p.text.chars().count() <= 10);
            joined.push_str(&p.text);
            match p.next_offset {
                Some(next) => {
                    assert_eq!(next, offset + 10);
                    offset = next;
                }
                None => break,
            }
        }
        assert_eq!(joined, text);
        assert_eq!(page(&text, 0, 1000).unwrap().total_chars, total);
    }

    #[test]
    fn empty_text_has_one_empty_page() {
        let p = page("", 0, 10).unwrap();
        assert_eq!(p.text, "");
        assert_eq!(p.next_offset, None);
    }

    #[test]
    fn offset_past_end_is_explained() {
        let err = page("abc", 5, 10).unwrap_err();
        assert_eq!(
            err,
            PastTheEnd {
                offset: 5,
                total_chars: 3
            }
        );
        assert!(err.to_string().contains("3 characters"), "{err}");
    }
}
