//! Property tests for HTML conversion with random nesting (issue #20): any
//! mix of tags at any depth converts without overflowing, keeps every word
//! of text, and the nesting pass leaves shallow pages' Markdown unchanged.
//!
//! CI runs a bounded number of cases from a fixed seed; `cargo xtask test
//! --long` (TOOLHOST_LONG_TESTS=1) runs many more from a random seed.

use proptest::prelude::*;
use proptest::test_runner::Config;

use super::flatten::{flatten, MAX_DEPTH};
use super::html::{markdown_of, to_markdown};

fn config(ci_cases: u32) -> Config {
    toolhost_testkit::proptest_config(ci_cases, 0x7001_4058)
}

/// Tags whose text every converter keeps (no nav/aside that extraction
/// drops, no skipped elements), inline and block, some with implied ends.
const TAGS: &[&str] = &[
    "div",
    "span",
    "p",
    "b",
    "i",
    "em",
    "strong",
    "a",
    "section",
    "article",
    "blockquote",
    "ul",
    "ol",
    "li",
    "h2",
    "code",
    "small",
    "font",
    "center",
    "dl",
    "dd",
    "table",
    "td",
    "tr",
    "pre",
];

/// One step of a random page: open a tag, close the innermost, or a word.
#[derive(Debug, Clone)]
enum Step {
    Open(&'static str),
    Close,
    Word,
}

/// Tags HTML never closes implicitly nor moves around (no `<p>`, `<li>`,
/// `<a>`, headings, tables): on well-nested pages of these, the nesting
/// pass must not change the Markdown at all.
const PLAIN_TAGS: &[&str] = &[
    "div",
    "span",
    "b",
    "i",
    "em",
    "strong",
    "section",
    "article",
    "blockquote",
    "ul",
    "ol",
    "code",
    "small",
    "font",
    "center",
];

fn steps(max: usize) -> impl Strategy<Value = Vec<Step>> {
    steps_of(TAGS, max)
}

fn steps_of(tags: &'static [&'static str], max: usize) -> impl Strategy<Value = Vec<Step>> {
    proptest::collection::vec(
        prop_oneof![
            4 => proptest::sample::select(tags).prop_map(Step::Open),
            2 => Just(Step::Close),
            3 => Just(Step::Word),
        ],
        0..max,
    )
}

/// The page, and the words in it (`w0x`, `w1x`, … in order; none is part
/// of another, even where a converter glues two together). Unclosed tags
/// stay unclosed unless `close_all`.
fn page(steps: &[Step], close_all: bool) -> (String, Vec<String>) {
    let mut html = String::from("<html><head><title>t</title></head><body>");
    let mut open = Vec::new();
    let mut words = Vec::new();
    for step in steps {
        match step {
            Step::Open(tag) => {
                html.push_str(&format!("<{tag}>"));
                open.push(*tag);
            }
            Step::Close => {
                if let Some(tag) = open.pop() {
                    html.push_str(&format!("</{tag}>"));
                }
            }
            Step::Word => {
                let word = format!("w{}x", words.len());
                html.push_str(&format!(" {word} "));
                words.push(word);
            }
        }
    }
    if close_all {
        while let Some(tag) = open.pop() {
            html.push_str(&format!("</{tag}>"));
        }
    }
    (html, words)
}

/// A page of one random chain of tags `depth` deep, a word at each level.
fn chain(tags: &[&'static str], closed: bool) -> (String, Vec<String>) {
    let mut html = String::from("<body>");
    let mut words = Vec::new();
    for (i, tag) in tags.iter().enumerate() {
        html.push_str(&format!("<{tag}> w{i}x "));
        words.push(format!("w{i}x"));
    }
    if closed {
        for tag in tags.iter().rev() {
            html.push_str(&format!("</{tag}>"));
        }
    }
    (html, words)
}

fn all_words_kept(markdown: &str, words: &[String]) -> Result<(), TestCaseError> {
    for word in words {
        prop_assert!(
            markdown.contains(word.as_str()),
            "{} lost from:\n{}",
            word,
            markdown
        );
    }
    Ok(())
}

/// Depth of the nesting pass's output (it is well nested).
fn depth(html: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    let mut rest = html;
    while let Some(at) = rest.find('<') {
        rest = &rest[at + 1..];
        if rest.starts_with('/') {
            depth = depth.saturating_sub(1);
        } else if !rest.starts_with('!') && !rest.starts_with("br") {
            depth += 1;
            max = max.max(depth);
        }
    }
    max
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn random_pages_keep_every_word(steps in steps(400), extract in any::<bool>()) {
        let (html, words) = page(&steps, false);
        let converted = to_markdown(&html, "https://example.com/", extract, || Ok::<(), ()>(())).unwrap();
        if !extract || !converted.extracted {
            all_words_kept(&converted.markdown, &words)?;
        }
    }

    #[test]
    fn deep_random_chains_convert_keeping_their_text(
        tags in proptest::collection::vec(proptest::sample::select(TAGS), 0..2_000),
        closed in any::<bool>(),
    ) {
        let (html, words) = chain(&tags, closed);
        let flat = flatten(&html, || Ok::<(), ()>(())).unwrap();
        prop_assert!(depth(&flat) <= MAX_DEPTH, "depth {}", depth(&flat));
        let converted = to_markdown(&html, "https://example.com/", false, || Ok::<(), ()>(())).unwrap();
        all_words_kept(&converted.markdown, &words)?;
    }

    #[test]
    fn shallow_pages_convert_as_they_did_without_the_pass(steps in steps_of(PLAIN_TAGS, 120)) {
        let (html, _) = page(&steps, true);
        let flat = flatten(&html, || Ok::<(), ()>(())).unwrap();
        let normalize = |s: String| s.split_whitespace().collect::<Vec<_>>().join(" ");
        prop_assert_eq!(normalize(markdown_of(&flat)), normalize(markdown_of(&html)), "page: {}", html);
    }
}
