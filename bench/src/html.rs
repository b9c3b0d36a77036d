//! HTML→Markdown conversion alone (the web module's `convert`, no network):
//! an ordinary article, and hostile pages of deeply nested tags that used to
//! overflow the stack (inline) or take super-linear time (block).

use std::time::Duration;

use toolhost_web::convert::{kind::Kind, to_text};

use crate::report::Bench;

/// An article-like page of about `bytes` bytes.
fn article(bytes: usize) -> String {
    let mut html = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Bench page</title></head><body>\
         <nav><a href=\"/\">Home</a></nav><article><h1>Benchmark article</h1>",
    );
    let mut i = 0;
    while html.len() < bytes {
        html.push_str(&format!(
            "<p>Paragraph {i} of the benchmark article, with <em>some emphasis</em> and \
             <a href=\"/p/{i}\">a link</a> so the converter has work to do.</p>"
        ));
        i += 1;
    }
    html.push_str("</article></body></html>");
    html
}

/// `n` nested `tag`s, a word in each.
fn nested(tag: &str, n: usize) -> String {
    format!(
        "<html><body>{}end{}</body></html>",
        format!("<{tag}>w ").repeat(n),
        format!("</{tag}>").repeat(n)
    )
}

fn convert(html: &str) {
    let text = to_text(
        html.as_bytes(),
        Kind::Html,
        Some("utf-8"),
        "http://127.0.0.1/",
        true,
        || Ok::<(), ()>(()),
    );
    assert!(matches!(text, Ok(t) if !t.content.is_empty()));
}

/// Runs the conversion rows.
pub fn run(b: &mut Bench) -> anyhow::Result<()> {
    let rows: [(&str, String, usize, Option<Duration>); 5] = [
        (
            "HTML→Markdown, 4 KiB article",
            article(4096),
            500,
            Some(Duration::from_millis(1)),
        ),
        ("HTML→Markdown, 100 KiB article", article(100 * 1024), 50, None),
        // The page: 110 KB of nested blocks took 25 s before.
        (
            "HTML→Markdown, 110 KB of nested <div>s (22,000 deep)",
            nested("div", 22_000),
            10,
            Some(Duration::from_millis(200)),
        ),
        (
            "HTML→Markdown, 700 KB of nested <span>s (100,000 deep)",
            nested("span", 100_000),
            5,
            None,
        ),
        (
            "HTML→Markdown, 5 MB of nested <div>s (700,000 deep)",
            nested("div", 700_000),
            3,
            None,
        ),
    ];
    for (name, html, samples, limit) in rows {
        let stats = b.time(1, b.n(samples).min(samples), || convert(&html));
        b.row("web", name, stats, limit);
    }
    Ok(())
}
