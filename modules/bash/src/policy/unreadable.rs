//! Why a command string could not be checked, as every part of the
//! checker reports it: its own file, below the parser and the wrapper
//! tables, so that each of them can report without naming the others.

/// Why a command string could not be checked: what the policy cannot
/// decide, with what to write instead. Every part of the checker (words,
/// wrapper options, builtins) reports with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unreadable(pub String);

impl From<String> for Unreadable {
    fn from(why: String) -> Unreadable {
        Unreadable(why)
    }
}

impl From<&str> for Unreadable {
    fn from(why: &str) -> Unreadable {
        Unreadable(why.to_string())
    }
}

/// The first 80 characters of a command, for messages.
pub fn short(text: &str) -> String {
    let mut s: String = text.chars().take(80).collect();
    if s.len() < text.len() {
        s.push('…');
    }
    s
}
