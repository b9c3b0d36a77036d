//! Text handling shared by the tools: binary sniffing, streaming numbered
//! lines, similarity for "did you mean" answers.

pub mod binary;
pub mod lines;
pub mod similar;

/// Cuts `line` to `max_chars` characters (on a char boundary), returning the
/// kept part and how many characters were cut.
pub fn cut_line(line: &str, max_chars: usize) -> (&str, usize) {
    match line.char_indices().nth(max_chars) {
        Some((at, _)) => (&line[..at], line[at..].chars().count()),
        None => (line, 0),
    }
}
