//! One file's grep: a ripgrep searcher feeding a sink that keeps what the
//! output mode needs (a yes, a count, or numbered lines with context).

use std::io;

use grep_searcher::{Searcher, Sink, SinkContext, SinkContextKind, SinkMatch};

use crate::text::cut_line;

/// What grep reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Matching lines with numbers (and context).
    Content,
    /// Paths of files with a match.
    Files,
    /// Matching lines per file.
    Count,
}

/// One output line of content mode.
#[derive(Debug)]
pub enum Line {
    /// A matching line.
    Match(u64, String),
    /// A context line.
    Context(u64, String),
    /// A gap between context groups.
    Break,
}

/// The hits of one file.
#[derive(Debug, Default)]
pub struct Hits {
    /// Matches: matching lines, or in multi-line mode matches (one may
    /// span several lines).
    pub count: u64,
    /// Content-mode lines.
    pub lines: Vec<Line>,
}

/// Collects hits for one file.
pub struct Collect<'a> {
    /// The output mode.
    pub mode: Mode,
    /// Where hits go.
    pub hits: &'a mut Hits,
    /// Characters kept per line.
    pub max_chars: usize,
    /// Content lines kept per file before stopping.
    pub max_lines: usize,
}

impl Collect<'_> {
    fn text(&self, bytes: &[u8]) -> String {
        let raw = String::from_utf8_lossy(bytes);
        let line = raw.trim_end_matches(['\n', '\r']);
        let (kept, cut) = cut_line(line, self.max_chars);
        if cut > 0 {
            format!("{kept} … [line cut: {cut} more characters]")
        } else {
            kept.to_string()
        }
    }
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.hits.count += 1;
        match self.mode {
            Mode::Files => Ok(false),
            Mode::Count => Ok(true),
            Mode::Content => {
                // A multi-line match spans several lines: each is shown
                // with its own number.
                let first = mat.line_number().unwrap_or(0);
                for (i, line) in mat.lines().enumerate() {
                    let text = self.text(line);
                    self.hits.lines.push(Line::Match(first + i as u64, text));
                    if self.hits.lines.len() >= self.max_lines {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
        }
    }

    fn context(&mut self, _searcher: &Searcher, context: &SinkContext<'_>) -> Result<bool, io::Error> {
        if self.mode == Mode::Content && !matches!(context.kind(), SinkContextKind::Other) {
            let text = self.text(context.bytes());
            self.hits
                .lines
                .push(Line::Context(context.line_number().unwrap_or(0), text));
        }
        Ok(self.hits.lines.len() < self.max_lines)
    }

    fn context_break(&mut self, _searcher: &Searcher) -> Result<bool, io::Error> {
        if self.mode == Mode::Content {
            self.hits.lines.push(Line::Break);
        }
        Ok(true)
    }
}
