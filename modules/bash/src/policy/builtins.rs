//! Bash builtins that run code: `eval`, `command`, `exec`, `builtin`,
//! `jobs -x`, `trap`, `alias`, `compgen -C`, and the ones whose code the policy cannot
//! see (`source`/`.` of a file, `hash -p`, `enable -f`, `mapfile -C`), which
//! are refused.

use super::getopt::{self, Options};
use super::inner::{joined, Inner};
use super::unreadable::Unreadable;
use super::words::Arg;

const COMMAND: Options = Options {
    short_flag: "pvV",
    ..Options::NONE
};

/// `jobs`: with `-x`, the words after the options are a command to run.
const JOBS: Options = Options {
    short_flag: "lnprsx",
    ..Options::NONE
};

const EXEC: Options = Options {
    short_arg: "a",
    short_flag: "cl",
    ..Options::NONE
};

/// What the builtin `name` runs, or `None` if `name` is not one of these.
pub fn inner(name: &str, args: &[Arg]) -> Option<Vec<Inner>> {
    let found = match name {
        // `eval -- WORDS` runs WORDS: bash reads `--` as the end of options.
        "eval" => joined(after_dashes(args), "eval").map(|s| s.into_iter().collect()),
        "command" => getopt::parse(name, &COMMAND, args).map(|p| {
            let rest = &args[p.rest..];
            // `command -v/-V NAME` only prints what NAME is.
            if rest.is_empty() || p.has("-v", "") || p.has("-V", "") {
                Vec::new()
            } else {
                vec![Inner::Command(rest.to_vec())]
            }
        }),
        "exec" => getopt::parse(name, &EXEC, args).map(|p| {
            let rest = &args[p.rest..];
            if rest.is_empty() {
                Vec::new()
            } else {
                vec![Inner::Command(rest.to_vec())]
            }
        }),
        // `jobs -x COMMAND ARGS…` runs COMMAND (job specs in ARGS replaced).
        "jobs" => getopt::parse(name, &JOBS, args).map(|p| {
            let rest = &args[p.rest..];
            if p.has("-x", "") && !rest.is_empty() {
                vec![Inner::Command(rest.to_vec())]
            } else {
                Vec::new()
            }
        }),
        "source" | "." => Err(Unreadable(format!(
            "`{name}` runs the commands in a file, which the command policy cannot check before they run; \
             run those commands directly"
        ))),
        "hash" if has_short(args, 'p') => Err(Unreadable::from(
            "`hash -p` makes a command name run another program, which the command policy cannot follow; \
             call the program by its own name"
                .to_string(),
        )),
        "enable" if has_short(args, 'f') => Err(Unreadable::from(
            "`enable -f` loads a builtin from a shared library, which the command policy cannot check"
                .to_string(),
        )),
        "mapfile" | "readarray" if has_short(args, 'C') => Err(Unreadable::from(format!(
            "`{name} -C` runs a callback with the lines it reads spliced into it, which the command policy \
             cannot check; read the lines, then run the command"
        ))),
        "fc" => Err(Unreadable::from(
            "`fc` runs commands from the shell's history, which the command policy cannot see; run them directly"
                .to_string(),
        )),
        "trap" => trap(args),
        "compgen" | "complete" => Ok(dash_big_c(args)),
        "alias" => Ok(alias(args)),
        _ => return None,
    };
    Some(found.unwrap_or_else(|why| vec![Inner::Unknowable(why.0)]))
}

/// `args` without a leading `--` (the end of a builtin's options).
fn after_dashes(args: &[Arg]) -> &[Arg] {
    match args.first().and_then(Arg::lit) {
        Some("--") => &args[1..],
        _ => args,
    }
}

/// Whether a short option cluster among `args` holds `c` (`-p`, `-rp`).
fn has_short(args: &[Arg], c: char) -> bool {
    args.iter().any(|a| match a {
        Arg::Lit(w) => w.starts_with('-') && !w.starts_with("--") && w[1..].contains(c),
        // An option computed at run time could be anything.
        Arg::Dyn(_) => true,
    })
}

/// `trap [--] ACTION SIGNAL…`: ACTION is a script run later.
fn trap(args: &[Arg]) -> Result<Vec<Inner>, Unreadable> {
    let args = match args.first().and_then(Arg::lit) {
        Some("--") => &args[1..],
        // `-p`/`-l` only print.
        Some("-p" | "-l" | "-lp" | "-pl") => return Ok(Vec::new()),
        _ => args,
    };
    // One word, or `-` as the action, resets the signals.
    if args.len() < 2 || args[0].lit() == Some("-") {
        return Ok(Vec::new());
    }
    Ok(joined(&args[..1], "trap")?.into_iter().collect())
}

/// `compgen -C COMMAND` runs COMMAND to produce completions.
fn dash_big_c(args: &[Arg]) -> Vec<Inner> {
    let mut out = Vec::new();
    for (i, a) in args.iter().enumerate() {
        if a.lit() == Some("-C") {
            match args.get(i + 1) {
                Some(Arg::Lit(s)) => out.push(Inner::Script(s.clone())),
                Some(Arg::Dyn(s)) => out.push(Inner::Unknowable(format!(
                    "`compgen -C` is given a command computed at run time (`{s}`)"
                ))),
                None => {}
            }
        } else if a
            .lit()
            .is_some_and(|w| w.starts_with('-') && w[1..].contains('C'))
        {
            out.push(Inner::Unknowable(
                "write `-C COMMAND` on its own for the command policy to read it".into(),
            ));
        }
    }
    out
}

/// `alias name='text'`: the text runs where the alias is used.
fn alias(args: &[Arg]) -> Vec<Inner> {
    args.iter()
        .filter_map(|a| match a {
            Arg::Lit(w) => w.split_once('=').map(|(_, v)| Inner::Script(v.to_string())),
            Arg::Dyn(s) => Some(Inner::Unknowable(format!(
                "`alias` is given a value computed at run time (`{s}`)"
            ))),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<Arg> {
        s.split_whitespace().map(|w| Arg::Lit(w.to_string())).collect()
    }

    fn unknowable(name: &str, args: &str) -> bool {
        matches!(inner(name, &words(args)).as_deref(), Some([Inner::Unknowable(_)]))
    }

    #[test]
    fn builtins_that_run_code() {
        assert_eq!(
            inner("eval", &words("rm x")),
            Some(vec![Inner::Script("rm x".into())])
        );
        assert_eq!(
            inner("command", &words("-p rm x")),
            Some(vec![Inner::Command(words("rm x"))])
        );
        assert_eq!(
            inner("eval", &words("-- rm x")),
            Some(vec![Inner::Script("rm x".into())])
        );
        assert_eq!(inner("command", &words("-v rm")), Some(vec![]));
        assert_eq!(
            inner("exec", &words("-cla name rm x")),
            Some(vec![Inner::Command(words("rm x"))])
        );
        assert_eq!(
            inner("trap", &words("-- x EXIT")),
            Some(vec![Inner::Script("x".into())])
        );
        assert_eq!(
            inner("compgen", &words("-C x w")),
            Some(vec![Inner::Script("x".into())])
        );
        assert_eq!(inner("ls", &words("-C")), None);
    }

    #[test]
    fn builtins_whose_code_is_hidden_are_refused() {
        assert!(unknowable("source", "f"));
        assert!(unknowable(".", "f"));
        assert!(unknowable("hash", "-p /bin/rm ls"));
        assert!(unknowable("enable", "-f x.so rm"));
        assert!(unknowable("mapfile", "-C cb -c 1 a"));
        assert!(unknowable("readarray", "-tC cb a"));
        assert!(!unknowable("hash", "-r"));
    }
}
