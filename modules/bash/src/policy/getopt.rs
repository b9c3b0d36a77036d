//! Reads the options of a command that runs another command (`timeout -s
//! KILL 5 rm …`), the way its own `getopt_long` would, to find where the
//! wrapped command starts. Option clusters (`-vs KILL`), attached values
//! (`-sKILL`, `--signal=KILL`) and abbreviated long options (`--sig KILL`)
//! are read as the program reads them. An option the table does not know, or
//! one computed at run time, is an error: guessing its arity could make the
//! policy check the wrong word as the command.

use super::unreadable::Unreadable;
use super::words::Arg;

/// The options one program accepts.
#[derive(Debug)]
pub struct Options {
    /// Short options that take a value (`-s KILL`, `-sKILL`).
    pub short_arg: &'static str,
    /// Short options whose value is optional and can only be attached (`-i{}`).
    pub short_opt: &'static str,
    /// Short options without a value.
    pub short_flag: &'static str,
    /// Long options that take a value (`--signal KILL`, `--signal=KILL`).
    pub long_arg: &'static [&'static str],
    /// Long options whose value is optional and can only follow `=`.
    pub long_opt: &'static [&'static str],
    /// Long options without a value.
    pub long_flag: &'static [&'static str],
    /// `-5` is an option (`nice -5 cmd`).
    pub numeric: bool,
}

impl Options {
    /// A program that takes no options at all.
    pub const NONE: Options = Options {
        short_arg: "",
        short_opt: "",
        short_flag: "",
        long_arg: &[],
        long_opt: &[],
        long_flag: &[],
        numeric: false,
    };
}

/// One option as given: its canonical name (`-s`, `--signal`) and value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Given {
    /// `-s` or `--signal`, whichever was written (long names in full).
    pub name: String,
    /// Its value, if it has one.
    pub value: Option<Arg>,
}

/// The options found, and the index of the first word after them.
#[derive(Debug)]
pub struct Parsed {
    /// The options, in order.
    pub given: Vec<Given>,
    /// Index of the first operand.
    pub rest: usize,
}

impl Parsed {
    /// The value of the last `short` or `long` option, if given.
    pub fn value(&self, short: &str, long: &str) -> Option<&Option<Arg>> {
        self.given
            .iter()
            .rev()
            .find(|g| g.name == short || g.name == long)
            .map(|g| &g.value)
    }

    /// Whether `short` or `long` was given.
    pub fn has(&self, short: &str, long: &str) -> bool {
        self.value(short, long).is_some()
    }
}

/// Reads `args` (the words after the program name) until the first word that
/// is not an option, as `getopt_long` with a leading `+` does.
pub fn parse(program: &str, opts: &Options, args: &[Arg]) -> Result<Parsed, Unreadable> {
    let mut given = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let Some(w) = args[i].lit() else {
            return Err(Unreadable::from(format!(
                "`{program}` is given a word computed at run time (`{}`) where an option or the command \
                 would be, so the command policy cannot tell what it runs; write it literally",
                args[i].display()
            )));
        };
        if w == "--" {
            i += 1;
            break;
        }
        if !w.starts_with('-') || w == "-" {
            break;
        }
        if opts.numeric && w[1..].trim_start_matches('-').bytes().all(|b| b.is_ascii_digit()) {
            given.push(Given {
                name: w.to_string(),
                value: None,
            });
            i += 1;
            continue;
        }
        if let Some(long) = w.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            let (full, kind) = long_option(program, opts, name)?;
            let value = match (kind, attached) {
                (Kind::Flag, Some(_)) => {
                    return Err(Unreadable::from(format!("`{program} --{full}` takes no value")));
                }
                (Kind::Flag, None) | (Kind::Optional, None) => None,
                (_, Some(v)) => Some(Arg::Lit(v.to_string())),
                (Kind::Value, None) => {
                    i += 1;
                    Some(value_word(program, &format!("--{full}"), args.get(i))?)
                }
            };
            given.push(Given {
                name: format!("--{full}"),
                value,
            });
            i += 1;
            continue;
        }
        let cluster = &w[1..];
        for (at, c) in cluster.char_indices() {
            let name = format!("-{c}");
            let tail = &cluster[at + c.len_utf8()..];
            if opts.short_arg.contains(c) {
                let value = if tail.is_empty() {
                    i += 1;
                    value_word(program, &name, args.get(i))?
                } else {
                    Arg::Lit(tail.to_string())
                };
                given.push(Given {
                    name,
                    value: Some(value),
                });
                break;
            }
            if opts.short_opt.contains(c) {
                let value = (!tail.is_empty()).then(|| Arg::Lit(tail.to_string()));
                given.push(Given { name, value });
                break;
            }
            if !opts.short_flag.contains(c) {
                return Err(Unreadable::from(unknown(program, &name)));
            }
            given.push(Given { name, value: None });
        }
        i += 1;
    }
    Ok(Parsed {
        given,
        rest: i.min(args.len()),
    })
}

#[derive(Clone, Copy)]
enum Kind {
    Value,
    Optional,
    Flag,
}

/// Resolves a long option, abbreviations included, as `getopt_long` does.
fn long_option(program: &str, opts: &Options, name: &str) -> Result<(&'static str, Kind), Unreadable> {
    let all = opts
        .long_arg
        .iter()
        .map(|n| (*n, Kind::Value))
        .chain(opts.long_opt.iter().map(|n| (*n, Kind::Optional)))
        .chain(opts.long_flag.iter().map(|n| (*n, Kind::Flag)));
    let mut found: Vec<(&'static str, Kind)> = Vec::new();
    for (full, kind) in all {
        if full == name {
            found = vec![(full, kind)];
            break;
        }
        if !name.is_empty() && full.starts_with(name) {
            found.push((full, kind));
        }
    }
    match found.as_slice() {
        [(full, kind)] => Ok((full, *kind)),
        [] => Err(Unreadable::from(unknown(program, &format!("--{name}")))),
        _ => Err(Unreadable::from(format!(
            "`{program} --{name}` is ambiguous; write the option in full"
        ))),
    }
}

fn value_word(program: &str, option: &str, word: Option<&Arg>) -> Result<Arg, Unreadable> {
    word.cloned()
        .ok_or_else(|| Unreadable(format!("`{program} {option}` is missing its value")))
}

fn unknown(program: &str, option: &str) -> String {
    format!(
        "`{program}` is given the option `{option}`, which the command policy does not know, so it cannot \
         tell where the command `{program}` runs starts; drop the option or run the command directly"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMEOUT: Options = Options {
        short_arg: "ks",
        short_opt: "",
        short_flag: "v",
        long_arg: &["kill-after", "signal"],
        long_opt: &[],
        long_flag: &["foreground", "preserve-status", "verbose"],
        numeric: false,
    };

    fn rest(args: &str) -> Result<usize, Unreadable> {
        let words: Vec<Arg> = args.split_whitespace().map(|w| Arg::Lit(w.to_string())).collect();
        parse("timeout", &TIMEOUT, &words).map(|p| p.rest)
    }

    #[test]
    fn clusters_attached_values_and_abbreviations() {
        assert_eq!(rest("-s KILL 5 rm"), Ok(2));
        assert_eq!(rest("-vs KILL 5 rm"), Ok(2));
        assert_eq!(rest("-sKILL 5 rm"), Ok(1));
        assert_eq!(rest("--signal=KILL 5 rm"), Ok(1));
        assert_eq!(rest("--sig KILL 5 rm"), Ok(2));
        assert_eq!(rest("--fore -- 5 rm"), Ok(2));
        assert!(rest("-z 5 rm").is_err(), "unknown option");
        assert!(rest("--kill 5 rm").is_ok());
        assert!(rest("-s").is_err(), "missing value");
    }
}
