//! grep: ripgrep's searcher over an allowed file or folder, in parallel.

use std::fs::File;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use globset::GlobBuilder;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};
use ignore::WalkState;
use rustix::fs::OFlags;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_core::{AccessMode, Context, Effect, Structured, Tool, ToolError, ToolSpec};

use crate::policy::fd;
use crate::search::{Collect, Hits, Line, Mode};
use crate::state::State;
use crate::walk::Scope;

/// Most results a caller may ask for.
const MAX_HEAD_LIMIT: u64 = 10_000;
/// Most context lines on either side of a match.
const MAX_CONTEXT: u64 = 100;
/// Content lines gathered before the walk stops early.
const GATHER_CAP: usize = 50_000;
/// Memory one search may hold for a line (with its context): ripgrep's
/// searcher keeps a whole line in its buffer, so without a cap one huge line
/// (a minified bundle, a log without newlines) costs its full size in RAM.
/// A file with a longer line is reported as not searched in full.
pub const MAX_LINE_BUFFER: usize = 8 * 1024 * 1024;

/// What grep returns.
#[derive(Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    /// Matching lines as `path:line:text` (context lines as `path-line-text`).
    Content,
    /// Only the paths of files that match.
    FilesWithMatches,
    /// `path:count` of matching lines per file.
    Count,
}

/// Longest regex accepted (bytes).
const MAX_PATTERN_BYTES: usize = 4096;
/// Longest file glob accepted (bytes).
const MAX_GLOB_BYTES: usize = 1024;
/// Memory a compiled regex may take.
const REGEX_SIZE_LIMIT: usize = 16 * 1024 * 1024;

/// Input of grep.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepInput {
    /// A regular expression in Rust/ripgrep syntax (escape literal `(`, `.`, `{` and the like).
    #[schemars(length(min = 1, max = 4096))]
    pub pattern: String,
    /// The file or folder to search (default: the working directory).
    #[serde(default)]
    pub path: Option<String>,
    /// Only search files matching this glob, e.g. `*.rs` or `src/**/*.{ts,tsx}`.
    #[serde(default)]
    #[schemars(length(max = 1024))]
    pub glob: Option<String>,
    /// `files_with_matches` (default), `content` or `count`.
    #[serde(default)]
    pub output_mode: Option<OutputMode>,
    /// Match without regard to case.
    #[serde(default)]
    pub case_insensitive: bool,
    /// Lines of context shown before and after each match (content mode).
    #[serde(default)]
    pub context: Option<u64>,
    /// Most lines (content mode) or files (other modes) returned.
    #[serde(default)]
    pub head_limit: Option<u64>,
    /// Only search files of this ripgrep type, e.g. `rust`, `py`, `js`, `ts`, `go`, `md` (ripgrep's own type definitions).
    #[serde(default, rename = "type")]
    #[schemars(length(max = 64))]
    pub file_type: Option<String>,
    /// Lines of context shown before each match (content mode; overrides `context`).
    #[serde(default)]
    pub before_context: Option<u64>,
    /// Lines of context shown after each match (content mode; overrides `context`).
    #[serde(default)]
    pub after_context: Option<u64>,
    /// Prefix content lines with their line numbers (default true).
    #[serde(default)]
    pub line_numbers: Option<bool>,
    /// Multi-line mode: `.` matches newlines and a pattern may span lines (files up to 8 MiB).
    #[serde(default)]
    pub multiline: bool,
    /// Skip this many lines (content mode) or files (other modes) before `head_limit` applies: page with it.
    #[serde(default)]
    pub offset: Option<u64>,
}

/// Searches file contents.
pub struct Grep {
    /// Shared mount state.
    pub state: State,
}

/// Options fixed for one call.
struct Plan<'a> {
    matcher: RegexMatcher,
    searcher: SearcherBuilder,
    mode: Mode,
    max_chars: usize,
    file_glob: Option<(globset::GlobMatcher, bool)>,
    types: Option<ignore::types::Types>,
    scope: &'a Scope,
}

/// Files not searched (in full or at all), by reason, for the answer's notes.
#[derive(Default)]
struct Skipped {
    /// Files with a line longer than [`MAX_LINE_BUFFER`] (the first one seen).
    long_lines: AtomicUsize,
    first_long: Mutex<Option<PathBuf>>,
    /// Files with more than one name, when the plan does not allow them.
    hard_links: AtomicUsize,
}

impl Skipped {
    fn long_line(&self, path: &Path) {
        self.long_lines.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut first) = self.first_long.lock() {
            first.get_or_insert_with(|| path.to_path_buf());
        }
    }
}

impl Plan<'_> {
    /// Searches one file; `Err` when it was cut short by a line longer than
    /// [`MAX_LINE_BUFFER`] (the hits before it are kept). Other read errors
    /// skip the file, as ripgrep does.
    fn search(&self, searcher: &mut Searcher, file: &File) -> (Hits, bool) {
        let mut hits = Hits::default();
        let sink = Collect {
            mode: self.mode,
            hits: &mut hits,
            max_chars: self.max_chars,
            max_lines: GATHER_CAP,
        };
        let long_line = match searcher.search_file(&self.matcher, file, sink) {
            Ok(()) => false,
            Err(e) => e.to_string().contains("allocation limit"),
        };
        (hits, long_line)
    }

    fn wanted(&self, path: &Path) -> bool {
        if self
            .types
            .as_ref()
            .is_some_and(|t| !t.matched(path, false).is_whitelist())
        {
            return false;
        }
        match &self.file_glob {
            None => true,
            Some((glob, true)) => self.scope.relative(path).is_some_and(|rel| glob.is_match(rel)),
            Some((glob, false)) => path.file_name().is_some_and(|name| glob.is_match(name)),
        }
    }
}

/// grep's structured output (the matches themselves are in the text).
#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepOutput {
    /// Files with at least one match.
    pub files: u64,
    /// Matching lines (or matches, in multiline mode) in all.
    pub matches: u64,
    /// False when the search stopped early at its gather cap.
    pub complete: bool,
}

impl Tool for Grep {
    type Input = GrepInput;
    type Output = Structured<GrepOutput>;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "grep",
            "Searches file contents with a regular expression (ripgrep's engine) under `path` \
             (default: the working directory). `output_mode`: files_with_matches (default), \
             content (`path:line:text`; `context`, `before_context`, `after_context` lines; \
             `line_numbers` false drops the numbers) or count (`path:count`). Filter files with \
             `glob` or ripgrep's `type` (`rust`, `py`, `js`…). `multiline` lets `.` match newlines \
             and patterns span lines (files up to 8 MiB). Page with `offset` and `head_limit`. \
             Honours .gitignore; skips binary files, .git and symbolic links.",
        )
        .effect(Effect::ReadOnly)
        .resource_key("/path", AccessMode::Read)
        .alias("Grep")
        .structured_output::<GrepOutput>()
    }

    fn execute(&self, input: GrepInput, ctx: &Context<'_>) -> Result<Self::Output, ToolError> {
        let state = &self.state;
        let mode = match input.output_mode.unwrap_or(OutputMode::FilesWithMatches) {
            OutputMode::Content => Mode::Content,
            OutputMode::FilesWithMatches => Mode::Files,
            OutputMode::Count => Mode::Count,
        };
        let head_limit = input.head_limit.unwrap_or(state.config.grep_head_limit as u64);
        if head_limit == 0 || head_limit > MAX_HEAD_LIMIT {
            return Err(ToolError::invalid_input(format!(
                "head_limit must be 1 to {MAX_HEAD_LIMIT}"
            )));
        }
        let context = input.context.unwrap_or(0);
        let before = input.before_context.unwrap_or(context).min(MAX_CONTEXT) as usize;
        let after = input.after_context.unwrap_or(context).min(MAX_CONTEXT) as usize;
        let offset = usize::try_from(input.offset.unwrap_or(0)).unwrap_or(usize::MAX);
        let types = input
            .file_type
            .as_deref()
            .map(crate::file_types::select)
            .transpose()?;
        if input.pattern.len() > MAX_PATTERN_BYTES
            || input.glob.as_ref().is_some_and(|g| g.len() > MAX_GLOB_BYTES)
        {
            return Err(ToolError::invalid_input(format!(
                "pattern may be at most {MAX_PATTERN_BYTES} bytes and glob at most {MAX_GLOB_BYTES}"
            )));
        }
        // Size limits make a pathological regex fail fast instead of
        // compiling for minutes where cancellation cannot reach it.
        let mut builder = RegexMatcherBuilder::new();
        builder
            .case_insensitive(input.case_insensitive)
            .size_limit(REGEX_SIZE_LIMIT)
            .dfa_size_limit(REGEX_SIZE_LIMIT);
        if input.multiline {
            // ripgrep's `-U --multiline-dotall`: the whole file is one
            // haystack (bounded by MAX_LINE_BUFFER below).
            builder.multi_line(true).dot_matches_new_line(true);
        } else {
            builder.line_terminator(Some(b'\n'));
        }
        let matcher = builder.build(&input.pattern).map_err(|e| {
            let hint = if !input.multiline && e.to_string().contains("\"\\n\"") {
                "; set `multiline` to true to match across lines"
            } else {
                ""
            };
            ToolError::invalid_input(format!("invalid regex {:?}: {e}{hint}", input.pattern))
        })?;
        let file_glob = match &input.glob {
            None => None,
            Some(g) => {
                let glob = GlobBuilder::new(g)
                    .literal_separator(true)
                    .build()
                    .map_err(|e| ToolError::invalid_input(format!("invalid glob {g:?}: {e}")))?;
                Some((glob.compile_matcher(), g.contains('/')))
            }
        };
        let scope = Scope::open(state, "path", input.path.as_deref(), ctx)?;
        let mut searcher = SearcherBuilder::new();
        searcher
            .heap_limit(Some(MAX_LINE_BUFFER))
            .binary_detection(BinaryDetection::quit(b'\x00'))
            .line_number(true)
            .multi_line(input.multiline)
            .before_context(before)
            .after_context(after);
        let plan = Plan {
            matcher,
            searcher,
            mode,
            max_chars: state.config.max_line_chars,
            file_glob,
            types,
            scope: &scope,
        };
        let mut results: Vec<(PathBuf, Hits)> = Vec::new();
        let mut stopped_early = false;
        let skipped = Skipped::default();
        if scope.is_dir() {
            stopped_early = walk(state, &plan, ctx, &skipped, &mut results)?;
        } else {
            let dup = scope.handle.fd.as_fd().try_clone_to_owned().map_err(|e| {
                ToolError::new(
                    "io_error",
                    format!("cannot search {}: {e}", scope.handle.resolved.display),
                )
            })?;
            let (hits, long_line) = plan.search(&mut plan.searcher.build(), &File::from(dup));
            if long_line {
                skipped.long_line(&scope.base_real);
            }
            if hits.count > 0 {
                results.push((scope.base_real.clone(), hits));
            }
        }
        ctx.check_cancelled()?;
        results.sort_by(|a, b| a.0.cmp(&b.0));
        let page = Page {
            offset,
            head_limit: head_limit as usize,
            line_numbers: input.line_numbers.unwrap_or(true),
        };
        let data = GrepOutput {
            files: results.len() as u64,
            matches: results.iter().map(|(_, hits)| hits.count).sum(),
            complete: !stopped_early,
        };
        let mut out = render(&scope, &input.pattern, mode, page, results, stopped_early);
        let notes = skipped_notes(&scope, &skipped, input.multiline);
        if !notes.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&notes);
        Ok(Structured::new(out, data))
    }
}

/// The parallel walk; returns whether it stopped early at the gather cap.
fn walk(
    state: &State,
    plan: &Plan<'_>,
    ctx: &Context<'_>,
    skipped: &Skipped,
    out: &mut Vec<(PathBuf, Hits)>,
) -> Result<bool, ToolError> {
    let found: Mutex<Vec<(PathBuf, Hits)>> = Mutex::new(Vec::new());
    let gathered = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let cancelled = AtomicBool::new(false);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).min(8);
    let mut builder = plan.scope.walker(state);
    builder.threads(threads);
    let check_cancel = || ctx.is_cancelled();
    builder.build_parallel().run(|| {
        let mut searcher = plan.searcher.build();
        let (found, gathered, stop, cancelled, check_cancel) =
            (&found, &gathered, &stop, &cancelled, &check_cancel);
        let mut seen = 0u32;
        Box::new(move |entry| {
            seen = seen.wrapping_add(1);
            if seen & 0x3f == 0 && check_cancel() {
                cancelled.store(true, Ordering::Relaxed);
            }
            if stop.load(Ordering::Relaxed) || cancelled.load(Ordering::Relaxed) {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) || !plan.wanted(entry.path()) {
                return WalkState::Continue;
            }
            // Opened beneath the root with symlinks refused; a path swapped
            // for a link since the walk saw it is skipped.
            let Some(handle) = plan
                .scope
                .open_found(entry.path(), OFlags::RDONLY | OFlags::NONBLOCK)
            else {
                return WalkState::Continue;
            };
            match rustix::fs::fstat(&handle) {
                Ok(st) if !fd::is_dir(&st) && fd::check_kind(&st).is_ok() => {
                    if !state.policy.serves(&st) {
                        skipped.hard_links.fetch_add(1, Ordering::Relaxed);
                        return WalkState::Continue;
                    }
                }
                _ => return WalkState::Continue,
            }
            let (hits, long_line) = plan.search(&mut searcher, &File::from(handle));
            if long_line {
                skipped.long_line(entry.path());
            }
            if hits.count == 0 {
                return WalkState::Continue;
            }
            let weight = hits.lines.len().max(1);
            if let Ok(mut list) = found.lock() {
                list.push((entry.into_path(), hits));
            }
            if gathered.fetch_add(weight, Ordering::Relaxed) + weight > GATHER_CAP {
                stop.store(true, Ordering::Relaxed);
                return WalkState::Quit;
            }
            WalkState::Continue
        })
    });
    if cancelled.load(Ordering::Relaxed) {
        return Err(ToolError::cancelled());
    }
    *out = found.into_inner().unwrap_or_else(|p| p.into_inner());
    Ok(stop.load(Ordering::Relaxed))
}

/// Notes on files grep did not search (in full): after the results, so a
/// model knows the answer may be incomplete and why.
fn skipped_notes(scope: &Scope, skipped: &Skipped, multiline: bool) -> String {
    let mut out = String::new();
    let long = skipped.long_lines.load(Ordering::Relaxed);
    if long > 0 {
        let first = skipped
            .first_long
            .lock()
            .ok()
            .and_then(|f| f.as_ref().map(|p| scope.show(p)))
            .unwrap_or_default();
        if multiline {
            out.push_str(&format!(
                "[{long} file(s) larger than {} MiB not searched in multiline mode (first: {first}); multiline holds a whole file in memory — search them without multiline]\n",
                MAX_LINE_BUFFER >> 20
            ));
        } else {
            out.push_str(&format!(
                "[{long} file(s) not searched past a line longer than {} MiB (first: {first}); grep holds at most that much of one line — read_file shows such lines cut]\n",
                MAX_LINE_BUFFER >> 20
            ));
        }
    }
    let links = skipped.hard_links.load(Ordering::Relaxed);
    if links > 0 {
        out.push_str(&format!(
            "[{links} hard-linked file(s) skipped: another name of each may be denied or outside the allowed folders ({} = false)]\n",
            crate::policy::links::KEY
        ));
    }
    out.push_str(&scope.secret_note());
    out
}

/// Which part of the results to show, and how.
#[derive(Clone, Copy)]
struct Page {
    /// Entries (lines or files) skipped first.
    offset: usize,
    /// Entries shown after the skipped ones.
    head_limit: usize,
    /// Whether content lines carry their numbers.
    line_numbers: bool,
}

impl Page {
    /// Whether entry `index` (0-based over all entries) is shown.
    fn shows(&self, index: usize) -> bool {
        index >= self.offset && index - self.offset < self.head_limit
    }
}

/// The answer text: the page of entries `offset..offset + head_limit`, and
/// a note saying how to reach the rest.
fn render(
    scope: &Scope,
    pattern: &str,
    mode: Mode,
    page: Page,
    results: Vec<(PathBuf, Hits)>,
    stopped_early: bool,
) -> String {
    if results.is_empty() {
        return format!("no matches for {pattern:?} in {}", scope.handle.resolved.display);
    }
    let mut lines: Vec<String> = Vec::new();
    let mut total = 0usize;
    let files = results.len();
    let mut push = |total: &mut usize, line: &dyn Fn() -> String| {
        if page.shows(*total) {
            lines.push(line());
        }
        *total += 1;
    };
    for (path, hits) in &results {
        let shown = scope.show(path);
        match mode {
            Mode::Files => push(&mut total, &|| shown.clone()),
            Mode::Count => push(&mut total, &|| format!("{shown}:{}", hits.count)),
            Mode::Content => {
                if total > 0 && matches!(hits.lines.first(), Some(Line::Context(..))) {
                    push(&mut total, &|| "--".to_string());
                }
                for line in &hits.lines {
                    push(&mut total, &|| match (line, page.line_numbers) {
                        (Line::Match(n, text), true) => format!("{shown}:{n}:{text}"),
                        (Line::Context(n, text), true) => format!("{shown}-{n}-{text}"),
                        (Line::Match(_, text), false) => format!("{shown}:{text}"),
                        (Line::Context(_, text), false) => format!("{shown}-{text}"),
                        (Line::Break, _) => "--".to_string(),
                    });
                }
            }
        }
    }
    let unit = if mode == Mode::Content { "lines" } else { "files" };
    if lines.is_empty() {
        return format!(
            "[offset {} is past the end: there are {total} {unit} of results for {pattern:?}; use an offset below {total}]\n",
            page.offset
        );
    }
    let mut out = lines.join("\n");
    out.push('\n');
    let end = page.offset + lines.len();
    if total > end {
        out.push_str(&format!(
            "[{} more {unit} not shown (showing {}-{end} of {total}, head_limit = {}); continue with offset={end}, or narrow the search]\n",
            total - end,
            page.offset + 1,
            page.head_limit
        ));
    } else if page.offset > 0 {
        out.push_str(&format!(
            "[showing {unit} {}-{end} of {total}: the last page]\n",
            page.offset + 1
        ));
    }
    if stopped_early {
        out.push_str(&format!(
            "[the search stopped early after {GATHER_CAP} matching lines in {files} files; narrow the pattern or the path]\n"
        ));
    }
    out
}
