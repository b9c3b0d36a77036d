//! Bounding a page's nesting before any tree is built.
//!
//! Both converters downstream (dom_smoothie's readability pass and htmd)
//! walk the DOM recursively, and html5ever's tree builder scans its stack of
//! open elements on many start tags. A hostile page of 100,000 nested tags
//! therefore overflows the stack, and one of nested `<div>`s costs time
//! quadratic in its depth. This pass runs html5ever's *tokenizer* alone
//! (a linear state machine, no tree) and writes the page back out as
//! well-nested HTML whose depth never passes [`MAX_DEPTH`]: tags deeper than
//! that are dropped (a space stands in for each, so words do not run
//! together) while their text is kept. Pages shallower than the limit come
//! out with the same elements, attributes and text.
//!
//! The input is fed in chunks and `check` is called between them, so the
//! call's deadline and cancel token stop the pass on any page.

use std::cell::RefCell;
use std::collections::HashMap;

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};

/// The deepest element nesting kept. Real pages stay well under 100 levels;
/// at this depth the recursive converters use a few hundred KiB of stack.
pub const MAX_DEPTH: usize = 128;

/// Bytes tokenized between two calls to the caller's check.
const CHUNK: usize = 64 * 1024;

/// Elements that never have content or an end tag.
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "keygen", "link", "meta", "param", "source",
    "track", "wbr", "basefont", "bgsound", "frame",
];

/// Start tags that close an open `<p>` (HTML's "close a p element").
const CLOSES_P: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "center",
    "details",
    "dialog",
    "dir",
    "div",
    "dl",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "header",
    "hgroup",
    "main",
    "menu",
    "nav",
    "ol",
    "p",
    "search",
    "section",
    "summary",
    "ul",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "pre",
    "listing",
    "form",
    "table",
    "hr",
    "xmp",
    "plaintext",
    "li",
    "dd",
    "dt",
];

/// Elements a search for an implied-closed element does not look past.
const SCOPE: &[&str] = &[
    "html", "table", "td", "th", "caption", "template", "applet", "marquee", "object", "button", "svg",
    "math",
];

/// Writes `html` back out with its nesting bounded by [`MAX_DEPTH`].
/// `check` runs between chunks; its error ends the pass.
pub fn flatten<E>(html: &str, mut check: impl FnMut() -> Result<(), E>) -> Result<String, E> {
    let sink = Writer {
        state: RefCell::new(State {
            out: String::with_capacity(html.len() + html.len() / 8),
            ..State::default()
        }),
    };
    let tokenizer = Tokenizer::new(sink, TokenizerOpts::default());
    let queue = BufferQueue::default();
    let mut rest = html;
    while !rest.is_empty() {
        check()?;
        let mut cut = rest.len().min(CHUNK);
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (chunk, tail) = rest.split_at(cut);
        queue.push_back(StrTendril::from_slice(chunk));
        let _ = tokenizer.feed(&queue);
        rest = tail;
    }
    check()?;
    tokenizer.end();
    let mut state = tokenizer.sink.state.into_inner();
    state.close_all();
    Ok(state.out)
}

struct Writer {
    state: RefCell<State>,
}

#[derive(Default)]
struct State {
    out: String,
    /// The open elements as written (at most `MAX_DEPTH`).
    open: Vec<String>,
    /// Start tags dropped for depth, by name, so their end tags are dropped too.
    dropped: HashMap<String, usize>,
    /// Inside a raw-text element (script, style…): text is written as is.
    raw: bool,
    /// Inside a raw-text element dropped for depth: its text is skipped.
    skip_raw: bool,
    /// Inside `<plaintext>`, written as `<pre>`: the rest is escaped text.
    plaintext: bool,
    /// Open `<svg>`/`<math>` elements: there `<x/>` does not open `x`.
    foreign: usize,
}

impl TokenSink for Writer {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        let mut state = self.state.borrow_mut();
        match token {
            Token::CharacterTokens(text) => state.text(&text),
            Token::NullCharacterToken => {}
            Token::TagToken(tag) => {
                let name = tag.name.to_string();
                match tag.kind {
                    TagKind::StartTag => {
                        let attrs: Vec<(String, String)> = tag
                            .attrs
                            .iter()
                            .map(|a| (a.name.local.to_string(), a.value.to_string()))
                            .collect();
                        return state.start(name, &attrs, tag.self_closing);
                    }
                    TagKind::EndTag => state.end(&name),
                }
            }
            Token::DoctypeToken(_) => {
                if state.out.is_empty() {
                    state.out.push_str("<!DOCTYPE html>");
                }
            }
            // Comments carry no content; parse errors are recovered from.
            Token::CommentToken(_) | Token::ParseError(_) | Token::EOFToken => {}
        }
        TokenSinkResult::Continue
    }
}

impl State {
    fn text(&mut self, text: &str) {
        if self.skip_raw {
            return;
        }
        if self.raw {
            self.out.push_str(text);
        } else {
            escape_into(&mut self.out, text, false);
        }
    }

    fn start(&mut self, name: String, attrs: &[(String, String)], self_closing: bool) -> TokenSinkResult<()> {
        if self.plaintext {
            // `<plaintext>` never ends: everything after it is text.
            let mut tag = format!("<{name}");
            for (key, value) in attrs {
                tag.push_str(&format!(" {key}=\"{value}\""));
            }
            tag.push('>');
            escape_into(&mut self.out, &tag, false);
            return TokenSinkResult::Continue;
        }
        // What the tokenizer must read next: raw text inside these elements.
        let switch = match name.as_str() {
            "script" => TokenSinkResult::RawData(RawKind::ScriptData),
            "style" | "xmp" | "iframe" | "noembed" | "noframes" | "noscript" => {
                TokenSinkResult::RawData(RawKind::Rawtext)
            }
            "title" | "textarea" => TokenSinkResult::RawData(RawKind::Rcdata),
            "plaintext" => TokenSinkResult::Plaintext,
            _ => TokenSinkResult::Continue,
        };
        let raw = matches!(
            switch,
            TokenSinkResult::RawData(RawKind::ScriptData | RawKind::Rawtext)
        );
        let void = VOID.contains(&name.as_str()) || (self_closing && self.foreign > 0);
        if !void {
            self.implied_closes(&name);
        }
        if !void && self.open.len() >= MAX_DEPTH {
            if raw {
                // Its text is code or markup, not content: skip it.
                self.skip_raw = true;
            }
            if name == "plaintext" {
                self.plaintext = true;
            }
            *self.dropped.entry(name).or_default() += 1;
            self.out.push(' ');
            return switch;
        }
        let written = if name == "plaintext" { "pre" } else { name.as_str() };
        self.out.push('<');
        self.out.push_str(written);
        for (key, value) in attrs {
            if !valid_attribute_name(key) {
                continue;
            }
            self.out.push(' ');
            self.out.push_str(key);
            self.out.push_str("=\"");
            escape_into(&mut self.out, value, true);
            self.out.push('"');
        }
        if void {
            self.out.push_str(if self.foreign > 0 { "/>" } else { ">" });
            return TokenSinkResult::Continue;
        }
        self.out.push('>');
        if name == "svg" || name == "math" {
            self.foreign += 1;
        }
        if name == "plaintext" {
            self.plaintext = true;
            self.open.push("pre".into());
        } else {
            self.open.push(name);
        }
        self.raw = raw;
        switch
    }

    /// Closes what a start tag of `name` implicitly ends in HTML, so that
    /// unclosed `<p>`, `<li>`, `<td>`… (common on real pages) do not count
    /// as nesting. An approximation of HTML's rules, erring towards closing.
    fn implied_closes(&mut self, name: &str) {
        let targets: &[&str] = match name {
            "li" => &["li"],
            "dt" | "dd" => &["dt", "dd"],
            "td" | "th" => &["td", "th"],
            "thead" | "tbody" | "tfoot" => &["thead", "tbody", "tfoot"],
            "option" => &["option"],
            "optgroup" => &["option", "optgroup"],
            _ => &[],
        };
        if CLOSES_P.contains(&name) {
            self.close_nearest(&["p"]);
        }
        if !targets.is_empty() {
            self.close_nearest(targets);
        }
        if name == "tr" {
            // A new row ends the previous row's open cell, then the row.
            self.close_nearest(&["td", "th"]);
            self.close_nearest(&["tr"]);
        }
    }

    /// Closes the nearest open element named in `targets` (and everything
    /// opened after it), not looking past a scope boundary.
    fn close_nearest(&mut self, targets: &[&str]) {
        let found = self
            .open
            .iter()
            .rposition(|open| targets.contains(&open.as_str()) || SCOPE.contains(&open.as_str()));
        if let Some(at) = found {
            if targets.contains(&self.open[at].as_str()) {
                self.close_to(at);
            }
        }
    }

    fn end(&mut self, name: &str) {
        if self.plaintext {
            escape_into(&mut self.out, &format!("</{name}>"), false);
            return;
        }
        self.skip_raw = false;
        if let Some(count) = self.dropped.get_mut(name) {
            if *count > 0 {
                *count -= 1;
                self.out.push(' ');
                return;
            }
        }
        // An end tag matching nothing open is dropped, as browsers mostly do.
        if let Some(at) = self.open.iter().rposition(|open| open == name) {
            self.close_to(at);
        }
    }

    /// Writes end tags for `open[at..]`.
    fn close_to(&mut self, at: usize) {
        while self.open.len() > at {
            if let Some(name) = self.open.pop() {
                if name == "svg" || name == "math" {
                    self.foreign = self.foreign.saturating_sub(1);
                }
                self.raw = false;
                self.out.push_str("</");
                self.out.push_str(&name);
                self.out.push('>');
            }
        }
    }

    fn close_all(&mut self) {
        if !self.plaintext {
            self.close_to(0);
        }
    }
}

/// Attribute names the writer can put back without quoting trouble.
fn valid_attribute_name(name: &str) -> bool {
    !name.is_empty()
        && !name
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, '"' | '\'' | '>' | '/' | '=' | '<') || c.is_control())
}

fn escape_into(out: &mut String, text: &str, attribute: bool) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if attribute => out.push_str("&quot;"),
            '\u{a0}' => out.push_str("&nbsp;"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(html: &str) -> String {
        flatten(html, || Ok::<(), ()>(())).unwrap()
    }

    fn depth_of(html: &str) -> usize {
        // The writer's output is well nested: count open tags.
        let mut depth = 0usize;
        let mut max = 0;
        let mut rest = html;
        while let Some(at) = rest.find('<') {
            rest = &rest[at + 1..];
            if rest.starts_with('/') {
                depth = depth.saturating_sub(1);
            } else if rest.starts_with('!') {
            } else {
                let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
                let close = rest.find('>').unwrap_or(0);
                if !VOID.contains(&name.as_str()) && !rest[..close].ends_with('/') {
                    depth += 1;
                    max = max.max(depth);
                }
            }
        }
        max
    }

    #[test]
    fn shallow_pages_keep_their_structure() {
        let html = "<!doctype html><html><head><title>A &amp; B</title></head><body>\
                    <p class=\"x\">Hi <b>there</b> &lt;you&gt;<br><a href=\"/a?b=1&amp;c=2\">link</a></p></body></html>";
        assert_eq!(
            run(html),
            "<!DOCTYPE html><html><head><title>A &amp; B</title></head><body>\
             <p class=\"x\">Hi <b>there</b> &lt;you&gt;<br><a href=\"/a?b=1&amp;c=2\">link</a></p></body></html>"
        );
    }

    #[test]
    fn scripts_stay_raw_and_comments_go() {
        let out = run("<p>a<!-- secret --><script>if (a < b && c) {}</script><style>p>b{}</style></p>");
        assert_eq!(
            out,
            "<p>a<script>if (a < b && c) {}</script><style>p>b{}</style></p>"
        );
    }

    #[test]
    fn unclosed_paragraphs_and_items_do_not_nest() {
        let html = "<p>one<p>two<ul><li>a<li>b</ul>".repeat(500);
        let out = run(&html);
        assert!(depth_of(&out) < 8, "{}", &out[..300]);
        assert!(out.contains("<li>b</li>"));
    }

    #[test]
    fn deep_nesting_is_flattened_keeping_the_text() {
        for tag in ["span", "div", "b", "table", "li", "a"] {
            let n = 100_000;
            let html = format!(
                "{}deep words{}",
                format!("<{tag}>x ").repeat(n),
                format!("</{tag}>").repeat(n)
            );
            let out = run(&html);
            assert!(depth_of(&out) <= MAX_DEPTH, "{tag}: depth {}", depth_of(&out));
            assert!(out.contains("deep words"), "{tag}");
            assert_eq!(out.matches('x').count(), n, "{tag}: every word is kept");
        }
    }

    #[test]
    fn the_check_stops_the_pass() {
        let html = "<div>".repeat(100_000);
        let mut calls = 0;
        let out = flatten(&html, || {
            calls += 1;
            if calls > 2 {
                Err("stop")
            } else {
                Ok(())
            }
        });
        assert_eq!(out, Err("stop"));
    }
}
