//! Shells and the programs that start one: `bash -c 'script'` is parsed in
//! turn; a shell that would read its commands from stdin, a here-string, a
//! here-document, a pipe or a script file is refused, because that text is
//! not in the command the policy reads (or can change before it runs).

use super::getopt::{self, Options};
use super::inner::{joined, Inner};
use super::words::Arg;

/// Shells whose `-c STRING` is parsed as a script.
pub const SHELLS: &[&str] = &[
    "bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "rbash", "yash", "posh", "lksh", "pdksh",
];

/// The refusal for a shell that reads code from stdin.
pub fn stdin_shell(name: &str) -> String {
    format!(
        "`{name}` would read its commands from stdin (a pipe, here-string, here-document or redirection), \
         which the command policy cannot check; pass them with `bash -c '…'` or run them directly"
    )
}

/// `bash [options] -c SCRIPT [name args…]`, `bash FILE`, or `bash` reading stdin.
pub fn shell(name: &str, args: &[Arg]) -> Vec<Inner> {
    let mut i = 0;
    let mut dash_c = false;
    while i < args.len() {
        let Some(w) = args[i].lit() else {
            return vec![Inner::Unknowable(format!(
                "`{name}` is given a word computed at run time (`{}`) where an option or its script would be; \
                 write it literally",
                args[i].display()
            ))];
        };
        if w == "--" || w == "-" {
            i += 1;
            break;
        }
        if matches!(w, "--rcfile" | "--init-file") {
            i += 2;
            continue;
        }
        if w.starts_with("--") {
            i += 1;
            continue;
        }
        if !(w.starts_with('-') || w.starts_with('+')) || w.len() < 2 {
            break;
        }
        // A cluster such as `-eo pipefail` or `-xc`: `o`/`O` take the next word.
        let mut takes = 0;
        for c in w[1..].chars() {
            match c {
                'c' if w.starts_with('-') => dash_c = true,
                's' | 'i' if w.starts_with('-') && !dash_c => {
                    return vec![Inner::Unknowable(stdin_shell(name))];
                }
                'o' | 'O' => takes += 1,
                _ => {}
            }
        }
        i += 1 + takes;
    }
    let i = i.min(args.len());
    match (dash_c, args.get(i)) {
        (true, Some(Arg::Lit(script))) => vec![Inner::Script(script.clone())],
        (true, Some(Arg::Dyn(s))) => vec![Inner::Unknowable(format!(
            "`{name} -c` is given a script computed at run time (`{s}`), which the command policy cannot \
             check; write the script literally"
        ))],
        (true, None) => vec![Inner::Unknowable(format!("`{name} -c` has no script"))],
        (false, Some(file)) => vec![Inner::Unknowable(format!(
            "`{name} {}` runs a script file, whose content the command policy cannot check before it runs; \
             run its commands directly or with `{name} -c '…'`",
            file.display()
        ))],
        (false, None) => vec![Inner::Unknowable(stdin_shell(name))],
    }
}

const SU: Options = Options {
    short_arg: "cCgGsw",
    short_flag: "flmpPT",
    long_arg: &[
        "command",
        "session-command",
        "group",
        "supp-group",
        "shell",
        "whitelist-environment",
    ],
    long_flag: &["fast", "login", "preserve-environment", "pty", "help", "version"],
    ..Options::NONE
};

/// `su [options] [-] [user [args]]`: options may come after the user (su
/// permutes its arguments). `-c` is a script for the user's shell; `-s`
/// names the program that runs as the shell; without `-c` the shell reads
/// stdin.
pub fn su(name: &str, args: &[Arg]) -> Vec<Inner> {
    let mut out = Vec::new();
    let mut script = None;
    let mut operands = 0;
    let mut i = 0;
    while i < args.len() {
        let chunk = &args[i..];
        let parsed = match getopt::parse(name, &SU, chunk) {
            Ok(p) => p,
            Err(why) => return vec![Inner::Unknowable(why.0)],
        };
        for g in &parsed.given {
            match (g.name.as_str(), &g.value) {
                ("-c" | "--command" | "-C" | "--session-command", Some(v)) => script = Some(v.clone()),
                ("-s" | "--shell", Some(v)) => out.push(Inner::Command(vec![v.clone()])),
                _ => {}
            }
        }
        let ended = parsed.rest > 0 && chunk[parsed.rest - 1].lit() == Some("--");
        // The operands: `-`, then the user, then words handed to the shell.
        let rest = &chunk[parsed.rest..];
        let taken = if ended { rest.len() } else { rest.len().min(1) };
        operands += rest[..taken].iter().filter(|a| a.lit() != Some("-")).count();
        i += parsed.rest + taken.max(1);
    }
    if operands > 1 {
        return vec![Inner::Unknowable(format!(
            "`{name}` hands the words after the user name to the user's shell, which the command policy does \
             not follow; use `{name} USER -c '…'` alone"
        ))];
    }
    match script {
        Some(s) => match joined(&[s], &format!("{name} -c")) {
            Ok(found) => out.extend(found),
            Err(why) => return vec![Inner::Unknowable(why.0)],
        },
        None => out.push(Inner::Unknowable(stdin_shell(name))),
    }
    out
}

const SCRIPT: Options = Options {
    short_arg: "cIOBTmEo",
    short_opt: "t",
    short_flag: "aefqhV",
    long_arg: &[
        "command",
        "log-in",
        "log-out",
        "log-io",
        "log-timing",
        "logging-format",
        "echo",
        "output-limit",
    ],
    long_opt: &["timing"],
    long_flag: &["append", "return", "flush", "force", "quiet", "help", "version"],
    numeric: false,
};

/// `script -c CMD` runs CMD through `$SHELL -c`; without `-c` a shell reads stdin.
pub fn script(args: &[Arg]) -> Vec<Inner> {
    match getopt::parse("script", &SCRIPT, args) {
        Err(why) => vec![Inner::Unknowable(why.0)],
        Ok(parsed) => match parsed.value("-c", "--command") {
            Some(Some(cmd)) => match joined(std::slice::from_ref(cmd), "script -c") {
                Ok(found) => found.into_iter().collect(),
                Err(why) => vec![Inner::Unknowable(why.0)],
            },
            _ => vec![Inner::Unknowable(stdin_shell("script"))],
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<Arg> {
        s.split_whitespace().map(|w| Arg::Lit(w.to_string())).collect()
    }

    fn unknowable(found: &[Inner]) -> bool {
        found.iter().any(|f| matches!(f, Inner::Unknowable(_)))
    }

    #[test]
    fn shells_expose_their_script() {
        assert_eq!(shell("bash", &words("-c x")), [Inner::Script("x".into())]);
        assert_eq!(shell("sh", &words("-ec x")), [Inner::Script("x".into())]);
        assert_eq!(
            shell("bash", &words("-o errexit -c x")),
            [Inner::Script("x".into())]
        );
        assert_eq!(
            shell("bash", &words("-eo pipefail -c x")),
            [Inner::Script("x".into())]
        );
        assert!(unknowable(&shell("bash", &[])));
        assert!(unknowable(&shell("bash", &words("-s"))));
        assert!(unknowable(&shell("bash", &words("-i"))));
        assert!(unknowable(&shell("bash", &words("script.sh"))));
        assert!(unknowable(&shell("bash", &words("/dev/stdin"))));
    }

    #[test]
    fn su_and_script() {
        assert_eq!(su("su", &words("-c x root")), [Inner::Script("x".into())]);
        assert_eq!(su("su", &words("root -c x")), [Inner::Script("x".into())]);
        assert_eq!(su("su", &words("- root -lc x")), [Inner::Script("x".into())]);
        let shell = su("su", &words("-s /bin/rm -c x root"));
        assert_eq!(shell[0], Inner::Command(vec![Arg::Lit("/bin/rm".into())]));
        assert!(unknowable(&su("su", &words("root"))));
        assert_eq!(script(&words("-qc x")), [Inner::Script("x".into())]);
        assert!(unknowable(&script(&words("-q log"))));
    }
}
