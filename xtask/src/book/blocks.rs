//! Fenced code blocks of a Markdown file, with the line each starts on, so
//! a failing snippet can be named as `FILE:LINE`.

/// One fenced block: its info string's first word (`sh`, `rust`, …), the
/// 1-based line of its opening fence, and its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub lang: String,
    pub line: usize,
    pub body: String,
}

/// Every block fenced by three or more backticks at the start of a line
/// (an indented block inside a list item included). A fence's info string
/// may carry attributes after a comma (`rust,ignore`): only the word
/// before it is kept. A block left open at the end of the file is an
/// error, since a reader would see the rest of the file as code.
pub fn blocks(text: &str) -> Result<Vec<Block>, String> {
    let mut found = Vec::new();
    // The open block: language, fence length, fence indentation, line, body.
    let mut open: Option<(String, usize, usize, usize, String)> = None;
    for (index, raw) in text.lines().enumerate() {
        let line = raw.trim_start();
        let ticks = line.bytes().take_while(|&b| b == b'`').count();
        match &mut open {
            // An info string with a backtick is inline code at the start of
            // a line (```` ```sh ```` in prose), not a fence (CommonMark).
            None if ticks >= 3 && !line[ticks..].contains('`') => {
                let info = line[ticks..].trim();
                let lang = info.split([',', ' ']).next().unwrap_or("").to_string();
                open = Some((lang, ticks, raw.len() - line.len(), index + 1, String::new()));
            }
            None => {}
            Some((lang, fence, indent, start, body)) => {
                if ticks >= *fence && line[ticks..].trim().is_empty() {
                    found.push(Block {
                        lang: std::mem::take(lang),
                        line: *start,
                        body: std::mem::take(body),
                    });
                    open = None;
                } else {
                    // A block inside a list item is indented like its fence:
                    // drop that much, keep the block's own indentation.
                    let own = raw.len() - line.len();
                    body.push_str(&raw[own.min(*indent)..]);
                    body.push('\n');
                }
            }
        }
    }
    match open {
        Some((_, _, _, start, _)) => Err(format!("the block opened on line {start} is never closed")),
        None => Ok(found),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_carry_their_language_line_and_body() {
        let text = "# T\n\n```sh\necho one\necho two\n```\n\ntext\n\n````rust,ignore\nfn f() {}\n````\n";
        let found = blocks(text).unwrap();
        assert_eq!(
            found,
            vec![
                Block {
                    lang: "sh".into(),
                    line: 3,
                    body: "echo one\necho two\n".into()
                },
                Block {
                    lang: "rust".into(),
                    line: 10,
                    body: "fn f() {}\n".into()
                },
            ]
        );
    }

    #[test]
    fn a_shorter_fence_inside_does_not_close_a_block() {
        let text = "````md\n```sh\nx\n```\n````\n";
        let found = blocks(text).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].lang, "md");
        assert_eq!(found[0].body, "```sh\nx\n```\n");
    }

    #[test]
    fn an_indented_block_loses_its_fence_indentation_only() {
        let found = blocks("- item:\n\n  ```toml\n  [a]\n    b = 1\n  ```\n").unwrap();
        assert_eq!(found[0].body, "[a]\n  b = 1\n");
    }

    #[test]
    fn inline_code_at_the_start_of_a_line_is_not_a_fence() {
        let found = blocks("```` ```sh ```` blocks run.\n\n```sh\ntrue\n```\n").unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].line, 3);
    }

    #[test]
    fn an_unclosed_block_is_an_error() {
        assert!(blocks("```sh\necho\n").unwrap_err().contains("line 1"));
    }
}
