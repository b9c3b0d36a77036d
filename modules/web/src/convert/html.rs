//! HTML to Markdown: main-content extraction with dom_smoothie (a port of
//! Mozilla's Readability), then htmd. When extraction finds no article (a
//! link list, a tiny page) the whole body is converted instead, minus
//! scripts, styles and other non-content elements.

/// A converted page.
#[derive(Debug, Clone)]
pub struct Converted {
    /// The page title, when it has one.
    pub title: Option<String>,
    /// The Markdown.
    pub markdown: String,
    /// Whether main-content extraction produced the Markdown.
    pub extracted: bool,
}

use super::flatten::flatten;

/// Elements that never carry readable content.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "template", "head", "svg", "canvas", "iframe", "object",
];

/// Converts `html` fetched from `url` (used to absolutize links).
///
/// The page's nesting is bounded first ([`flatten`]), so every later step
/// is linear in the page and shallow in the stack. `check` is called
/// between chunks of that pass and between the steps; its error (the call's
/// deadline or cancellation) ends the conversion.
pub fn to_markdown<E>(
    html: &str,
    url: &str,
    extract: bool,
    mut check: impl FnMut() -> Result<(), E>,
) -> Result<Converted, E> {
    let html = flatten(html, &mut check)?;
    let html = html.as_str();
    let mut title = None;
    if extract {
        check()?;
        let config = dom_smoothie::Config {
            max_elements_to_parse: 50_000,
            ..Default::default()
        };
        if let Ok(mut readability) = dom_smoothie::Readability::new(html, Some(url), Some(config)) {
            title = clean_title(&readability.get_article_title());
            check()?;
            if let Ok(article) = readability.parse() {
                title = clean_title(&article.title).or(title);
                check()?;
                let markdown = markdown_of(&article.content);
                if !markdown.trim().is_empty() {
                    return Ok(Converted {
                        title,
                        markdown,
                        extracted: true,
                    });
                }
            }
        }
    }
    check()?;
    Ok(Converted {
        title: title.or_else(|| title_tag(html)),
        markdown: markdown_of(html),
        extracted: false,
    })
}

/// htmd with the skipped elements, tidied (no nesting bound: callers flatten).
pub(crate) fn markdown_of(html: &str) -> String {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(SKIPPED.to_vec())
        .build();
    let markdown = converter.convert(html).unwrap_or_default();
    tidy(&markdown)
}

/// Collapses runs of blank lines and trims trailing spaces.
fn tidy(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut blank = 0;
    for line in markdown.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_string()
}

fn clean_title(title: &str) -> Option<String> {
    let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
    (!title.is_empty()).then_some(title)
}

/// The `<title>` element's text, entities decoded.
fn title_tag(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let start = lower.find("<title")?;
    let open_end = start + lower[start..].find('>')? + 1;
    let close = open_end + lower[open_end..].find("</title")?;
    let text = htmd::convert(&format!("<p>{}</p>", &html[open_end..close])).unwrap_or_default();
    clean_title(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to_markdown(html: &str, url: &str, extract: bool) -> Converted {
        super::to_markdown(html, url, extract, || Ok::<(), ()>(())).unwrap()
    }

    const PAGE: &str = r#"<!doctype html><html><head><title>The Rust Book &amp; More</title>
        <style>body{color:red}</style><script>var secret = "do not show";</script></head>
        <body><nav><a href="/">Home</a> | <a href="/about">About</a></nav>
        <article><h1>Ownership</h1>
        <p>Each value in Rust has an <em>owner</em>. There can only be one owner at a time.
        When the owner goes out of scope, the value will be dropped. This is the central idea
        that lets Rust make memory safety guarantees without needing a garbage collector.</p>
        <h2>Borrowing</h2>
        <p>Instead of moving a value you can <a href="/ref">borrow it</a> through a reference,
        which lets code use a value without taking ownership of it, and so without dropping it.</p>
        <ul><li>one mutable reference</li><li>or any number of shared references</li></ul>
        <pre><code>let s = String::from("hi");</code></pre>
        </article><footer>Copyright nobody</footer></body></html>"#;

    #[test]
    fn article_becomes_markdown_with_title() {
        let c = to_markdown(PAGE, "https://example.com/book/", true);
        assert_eq!(c.title.as_deref(), Some("The Rust Book & More"));
        assert!(c.markdown.contains("## Borrowing"), "{}", c.markdown);
        assert!(
            c.markdown.contains("_owner_") || c.markdown.contains("*owner*"),
            "{}",
            c.markdown
        );
        assert!(
            c.markdown.contains("[borrow it](https://example.com/ref)"),
            "{}",
            c.markdown
        );
        assert!(c.markdown.contains("```"), "{}", c.markdown);
        assert!(!c.markdown.contains("do not show"), "{}", c.markdown);
        assert!(!c.markdown.contains("color:red"), "{}", c.markdown);
        assert!(c.extracted);
        assert!(
            !c.markdown.contains("Copyright nobody"),
            "the footer is not main content: {}",
            c.markdown
        );
        assert!(
            !c.markdown.contains("[About]"),
            "the nav is not main content: {}",
            c.markdown
        );
    }

    #[test]
    fn without_extraction_the_whole_body_converts() {
        let c = to_markdown(PAGE, "https://example.com/book/", false);
        assert!(!c.extracted);
        assert_eq!(c.title.as_deref(), Some("The Rust Book & More"));
        assert!(c.markdown.contains("# Ownership"), "{}", c.markdown);
        assert!(c.markdown.contains("Copyright nobody"), "{}", c.markdown);
        assert!(!c.markdown.contains("do not show"), "{}", c.markdown);
    }

    /// A page of `n` nested `tag`s around a sentence, with words between.
    fn nested(tag: &str, n: usize) -> String {
        format!(
            "<html><head><title>Deep</title></head><body>{}the innermost sentence{}</body></html>",
            format!("<{tag}>w ").repeat(n),
            format!("</{tag}>").repeat(n)
        )
    }

    #[test]
    fn deep_inline_nesting_converts_without_overflowing() {
        // 2,000 nested inline tags (14 KB) overflowed the stack; 100,000 now.
        for n in [2_000, 100_000] {
            for extract in [true, false] {
                let c = to_markdown(&nested("span", n), "https://example.com/", extract);
                assert!(c.markdown.contains("the innermost sentence"), "{n} {extract}");
            }
        }
    }

    #[test]
    fn deep_block_nesting_converts_without_overflowing() {
        for extract in [true, false] {
            let c = to_markdown(&nested("div", 100_000), "https://example.com/", extract);
            assert!(c.markdown.contains("the innermost sentence"), "{extract}");
            assert_eq!(c.title.as_deref(), Some("Deep"));
        }
    }

    #[test]
    fn tiny_pages_still_convert() {
        let c = to_markdown("<p>Hello <b>there</b></p>", "https://example.com/", true);
        assert!(c.markdown.contains("Hello **there**"), "{}", c.markdown);
    }
}
