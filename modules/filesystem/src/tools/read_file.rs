//! read_file: numbered lines of a text file, paged by line.

use std::fs::File;
use std::io::{BufReader, Cursor, Read};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_core::{AccessMode, Context, Effect, Structured, Tool, ToolError, ToolSpec};

use base64::Engine;
use toolhost_core::ContentBlock;

use crate::media;
use crate::policy::fd;
use crate::state::State;
use crate::text::binary;
use crate::text::lines::{numbered, numbered_slice, Window};

/// Input of read_file.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileInput {
    /// The file to read: absolute, or relative to the working directory.
    pub file_path: String,
    /// The first line to show, 1-based (default 1). Use it to page through long files.
    #[serde(default)]
    pub offset: Option<u64>,
    /// How many lines to show (default 2000).
    #[serde(default)]
    pub limit: Option<u64>,
    /// PDF only: the page or pages to read, like "3" or "1-5" (at most 50 pages per call).
    #[serde(default)]
    #[schemars(length(max = 32))]
    pub pages: Option<String>,
}

/// Reads a text file as numbered lines.
pub struct ReadFile {
    /// Shared mount state.
    pub state: State,
}

/// read_file's structured output.
#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileOutput {
    /// The path as asked for.
    pub file_path: String,
    /// Lines in the text answer.
    pub lines: u64,
    /// Bytes in the text answer.
    pub bytes: u64,
}

impl Tool for ReadFile {
    type Input = ReadFileInput;
    type Output = Structured<ReadFileOutput>;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "read_file",
            "Reads a text file and returns its lines numbered like `cat -n`. Pages with `offset` \
             (1-based line) and `limit` (lines, default 2000); long lines are cut with a marker. \
             Images (PNG, JPEG, GIF, WebP, up to 20 MiB) come back as an image, downscaled to at \
             most 1568 px on the long side and 1 MiB; PDFs (up to 32 MiB) as text by page, chosen \
             with `pages` (\"3\", \"1-5\"; 50 pages per call); Jupyter notebooks (.ipynb) as cells \
             with their outputs. Other binary files are refused with their type and size; a folder \
             path returns its listing. Read a file before you overwrite or edit it.",
        )
        .effect(Effect::ReadOnly)
        .resource_key("/file_path", AccessMode::Read)
        .alias("Read")
        .structured_output::<ReadFileOutput>()
    }

    fn execute(&self, input: ReadFileInput, ctx: &Context<'_>) -> Result<Self::Output, ToolError> {
        let file_path = input.file_path.clone();
        let text = self.read(input, ctx)?;
        let data = ReadFileOutput {
            file_path,
            lines: text.lines().count() as u64,
            bytes: text.len() as u64,
        };
        Ok(Structured::new(text, data))
    }
}

impl ReadFile {
    /// The text answer (see the spec's description).
    fn read(&self, input: ReadFileInput, ctx: &Context<'_>) -> Result<String, ToolError> {
        let config = &self.state.config;
        let offset = usize::try_from(input.offset.unwrap_or(1).max(1)).unwrap_or(usize::MAX);
        let limit = match input.limit {
            Some(0) => return Err(ToolError::invalid_input("limit must be at least 1 line")),
            Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
            None => config.max_read_lines,
        };
        let policy = &self.state.policy;
        let handle = policy.open_read("file_path", &input.file_path, ctx.working_dir())?;
        let display = handle.resolved.display.as_str();
        if fd::is_dir(&handle.stat) {
            let crate::listing::Listing { text, omitted, .. } =
                super::list_directory::list_opened(&self.state, &handle, 1, ctx)?;
            let more = if omitted > 0 {
                format!("\n[{omitted} more entries not shown]")
            } else {
                String::new()
            };
            return Ok(format!(
                "{display} is a folder; its entries (kind, size, path):\n{text}{more}"
            ));
        }
        crate::records::Records::new(&self.state, ctx).record_read(&handle.real, &handle.stat, &handle.fd);
        let size = handle.stat.st_size.max(0) as u64;
        let mut file = File::from(handle.fd);
        // A file the stat says is shorter than the sniff is read at that
        // size, in one read and without a second one to meet the end: the
        // answer is the file as of the stat the guard recorded. (A size of 0
        // may be a kernel file that does not know its size: read on.)
        let want = match usize::try_from(size) {
            Ok(n) if n > 0 && n < binary::SNIFF_BYTES => n,
            _ => binary::SNIFF_BYTES,
        };
        let mut head = vec![0u8; want];
        let got = read_up_to(&mut file, &mut head)
            .map_err(|e| ToolError::new("io_error", format!("cannot read {display}: {e}")))?;
        head.truncate(got);
        let kind = media::sniff(&head);
        if input.pages.is_some() && kind != Some(media::Kind::Pdf) {
            return Err(ToolError::invalid_input(format!(
                "pages applies to PDF files only, and {display} is not a PDF; page text files with offset and limit"
            )));
        }
        match kind {
            Some(media::Kind::Image) => {
                let bytes = media::read_all(head, file, media::image::MAX_FILE_BYTES, "an image", display)?;
                let prepared =
                    media::unpanicked("image", display, || media::image::prepare(&bytes, display))?;
                ctx.add_content(ContentBlock::image(
                    prepared.mime,
                    base64::engine::general_purpose::STANDARD.encode(&prepared.data),
                ));
                ctx.set_metadata("image_size", [prepared.size.0, prepared.size.1]);
                return Ok(prepared.summary(display, bytes.len()));
            }
            Some(media::Kind::Pdf) => {
                let bytes = media::read_all(head, file, media::pdf::MAX_FILE_BYTES, "a PDF", display)?;
                return media::pdf::read(bytes, input.pages.as_deref(), config.max_read_bytes, display, ctx);
            }
            None => {}
        }
        let notebook = handle
            .resolved
            .abs
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("ipynb"));
        if notebook && !binary::looks_binary(&head) {
            let bytes = media::read_all(head, file, media::notebook::MAX_FILE_BYTES, "a notebook", display)?;
            return notebook_window(&bytes, offset, limit, config.max_read_bytes, display, ctx);
        }
        if binary::looks_binary(&head) {
            return Err(ToolError::new(
                "binary_file",
                format!(
                    "{display} is a binary file ({}, {size} bytes); read_file shows text only",
                    binary::kind(&head)
                ),
            ));
        }
        if size == 0 && head.is_empty() {
            ctx.set_metadata("total_lines", 0);
            return Ok(format!("[{display} is empty: 0 bytes]"));
        }
        let window = Window {
            offset,
            limit,
            max_line_chars: config.max_line_chars,
            max_bytes: config.max_read_bytes,
        };
        let cancelled = || ctx.is_cancelled();
        // A file shorter than the sniffed head is already in memory.
        let numbered = if head.len() < binary::SNIFF_BYTES {
            drop(file);
            numbered_slice(&head, window, &cancelled)
        } else {
            let reader = BufReader::with_capacity(64 * 1024, Cursor::new(head).chain(file));
            numbered(reader, window, &cancelled)
        };
        let n = numbered.map_err(|e| {
            if ctx.is_cancelled() {
                ToolError::cancelled()
            } else {
                ToolError::new("io_error", format!("cannot read {display}: {e}"))
            }
        })?;
        if n.first == 0 {
            return Err(ToolError::invalid_input(format!(
                "offset {offset} is past the end of {display}, which has {} lines; use an offset from 1 to {}",
                n.lines_seen,
                n.lines_seen.max(1)
            )));
        }
        let mut text = n.text;
        if n.byte_capped {
            text.push_str(&format!(
                "[output reached max_read_bytes ({} bytes) after line {}; continue with offset={}]\n",
                config.max_read_bytes,
                n.last,
                n.last + 1
            ));
        } else if n.more {
            text.push_str(&format!(
                "[showing lines {}-{}; the file goes on: continue with offset={}]\n",
                n.first,
                n.last,
                n.last + 1
            ));
        }
        if n.cut_lines > 0 {
            text.push_str(&format!(
                "[{} long line(s) cut at {} characters]\n",
                n.cut_lines, config.max_line_chars
            ));
        }
        if n.lossy {
            text.push_str("[the file is not valid UTF-8: invalid bytes are shown as U+FFFD]\n");
        }
        ctx.set_metadata("first_line", n.first);
        ctx.set_metadata("last_line", n.last);
        if !n.more {
            ctx.set_metadata("total_lines", n.lines_seen);
        }
        if n.crlf {
            ctx.set_metadata("line_endings", "crlf");
        }
        Ok(text)
    }
}

/// A notebook's rendering, paged like a text file by line, with the image
/// outputs of the lines shown (at most [`media::notebook::MAX_IMAGES`]).
fn notebook_window(
    bytes: &[u8],
    offset: usize,
    limit: usize,
    max_bytes: usize,
    display: &str,
    ctx: &Context<'_>,
) -> Result<String, ToolError> {
    let rendered = media::unpanicked("notebook", display, || media::notebook::render(bytes, display))?;
    let total = rendered.lines.len();
    if offset > total.max(1) {
        return Err(ToolError::invalid_input(format!(
            "offset {offset} is past the end of {display}, whose rendering has {total} lines; use an offset from 1 to {}",
            total.max(1)
        )));
    }
    let mut text = String::new();
    let first = offset - 1;
    let mut end = first;
    for line in rendered.lines.iter().skip(first).take(limit) {
        if text.len() + line.len() + 1 > max_bytes && end > first {
            break;
        }
        text.push_str(line);
        text.push('\n');
        end += 1;
    }
    let mut attached = 0;
    let mut skipped = 0;
    let mut bytes_out = 0;
    for (at, mime, data) in &rendered.images {
        if *at < first || *at >= end {
            continue;
        }
        if attached >= media::notebook::MAX_IMAGES || bytes_out >= media::notebook::MAX_IMAGE_BYTES {
            skipped += 1;
            continue;
        }
        match media::notebook::image_block(mime, data, display) {
            Ok(image) if bytes_out + image.data.len() > media::notebook::MAX_IMAGE_BYTES => skipped += 1,
            Ok(image) => {
                bytes_out += image.data.len();
                ctx.add_content(ContentBlock::image(
                    image.mime,
                    base64::engine::general_purpose::STANDARD.encode(&image.data),
                ));
                attached += 1;
            }
            Err(e) => text.push_str(&format!(
                "[an image output on line {} was not attached: {}]\n",
                at + 1,
                e.message()
            )),
        }
    }
    if attached > 0 {
        text.push_str(&format!(
            "[{attached} image output(s) attached as image blocks, in order]\n"
        ));
    }
    if skipped > 0 {
        text.push_str(&format!(
            "[{skipped} more image output(s) not attached: at most {} images and {} MiB per call; page on with offset]\n",
            media::notebook::MAX_IMAGES,
            media::notebook::MAX_IMAGE_BYTES >> 20
        ));
    }
    if end < total {
        text.push_str(&format!(
            "[showing lines {offset}-{end} of {total} of the notebook's {} cells; continue with offset={}]\n",
            rendered.cells,
            end + 1
        ));
    }
    ctx.set_metadata("cells", rendered.cells);
    Ok(text)
}

/// Reads until `buf` is full or the file ends.
fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}
