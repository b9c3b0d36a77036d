//! What a wrapper runs, and the word helpers the wrapper tables share:
//! below the tables (`wrappers`, `builtins`, `launchers`, `shells`) so
//! that the table that dispatches to the others needs none of them back.

use super::unreadable::Unreadable;
use super::words::Arg;

/// What a wrapper runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inner {
    /// These words, as a command (itself checked for wrappers in turn).
    Command(Vec<Arg>),
    /// This text, as a shell script.
    Script(String),
    /// Something that cannot be read before it runs.
    Unknowable(String),
}

/// The base name of a command word: `/usr/bin/sudo` → `sudo`.
pub fn base(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// The variable a `NAME=value` word sets.
pub fn assignment_name(word: &str) -> Option<&str> {
    let (name, _) = word.split_once('=')?;
    let name = name.strip_suffix('+').unwrap_or(name);
    let ok = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    ok.then_some(name)
}

/// The words as one script (`eval a b` runs `a b`), or why not.
pub fn joined(args: &[Arg], what: &str) -> Result<Option<Inner>, Unreadable> {
    if args.is_empty() {
        return Ok(None);
    }
    let mut text = Vec::new();
    for a in args {
        match a {
            Arg::Lit(s) => text.push(s.as_str()),
            Arg::Dyn(s) => {
                return Err(Unreadable::from(format!(
                    "`{what}` runs text computed at run time (`{s}`), which the command policy cannot check; \
                     write the command literally"
                )))
            }
        }
    }
    Ok(Some(Inner::Script(text.join(" "))))
}
