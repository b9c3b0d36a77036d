//! read_file for files that are not plain text: images (returned as image
//! content blocks), PDFs (text by page) and Jupyter notebooks (cells with
//! their outputs). Each has its own bounds on input size, memory and work,
//! so a hostile file ends in a clear error, never a hang or an exhausted host.

pub mod image;
pub mod notebook;
pub mod pdf;

use std::io::Read;

use toolhost_core::ToolError;

/// What kind of non-text file a head of bytes starts, judged by content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// PNG, JPEG, GIF or WebP.
    Image,
    /// `%PDF-`.
    Pdf,
}

/// The kind of `head`, if read_file renders it specially.
pub fn sniff(head: &[u8]) -> Option<Kind> {
    if head.starts_with(b"%PDF-") {
        return Some(Kind::Pdf);
    }
    image::format_of(head).map(|_| Kind::Image)
}

/// The whole file: `head` (already read) and the rest, refused past `cap`
/// bytes without reading further.
pub fn read_all(
    head: Vec<u8>,
    file: impl Read,
    cap: u64,
    what: &str,
    display: &str,
) -> Result<Vec<u8>, ToolError> {
    let mut bytes = head;
    let room = cap.saturating_add(1).saturating_sub(bytes.len() as u64);
    file.take(room)
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::new("io_error", format!("cannot read {display}: {e}")))?;
    if bytes.len() as u64 > cap {
        return Err(ToolError::new(
            "file_too_large",
            format!(
                "{display} is larger than {} MiB, the most read_file loads for {what}",
                cap >> 20
            ),
        ));
    }
    Ok(bytes)
}

/// Runs a third-party parser, turning a panic inside it into a clear error:
/// a malformed file is the file's fault, not a bug to crash the call on.
pub fn unpanicked<T>(
    what: &str,
    display: &str,
    f: impl FnOnce() -> Result<T, ToolError>,
) -> Result<T, ToolError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|_| {
        Err(ToolError::new(
            "malformed_file",
            format!("{display} is a malformed {what}: its parser gave up on it"),
        ))
    })
}
