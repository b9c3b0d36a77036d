//! Commands that run other commands: `env`, `sudo`, `timeout`, `xargs`,
//! `find -exec`, shells with `-c`, `eval`, `source` and the like. For each,
//! what it runs: more words to check as a command, a string to parse as a
//! script, or a reason it cannot be known (which the policy refuses).
//!
//! Options are read with each program's own option table ([`getopt`]); an
//! option outside the table is refused rather than guessed.

pub use super::inner::{assignment_name, base, joined, Inner};

use super::getopt::{self, Options};
use super::unreadable::Unreadable;
use super::words::Arg;
use super::{builtins, launchers, shells};

/// What a wrapper does when it is given no command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bare {
    /// Nothing more runs (`nohup` fails, `env` prints).
    Nothing,
    /// It starts a shell that reads commands from stdin (`chroot /`, `sudo -s`).
    Shell,
}

/// A program that runs `[positional…] COMMAND ARGS…` after its options.
struct Wrapper {
    names: &'static [&'static str],
    options: Options,
    /// Operands between the options and the command (`timeout 5`, `chroot /`).
    positional: usize,
    /// `NAME=value` words may come before the command (`sudo A=1 cmd`).
    assignments: bool,
    bare: Bare,
}

const NO_OPTIONS: Wrapper = Wrapper {
    names: &["nohup", "eatmydata", "catchsegv", "builtin", "coproc"],
    options: Options {
        long_flag: &["help", "version"],
        ..Options::NONE
    },
    positional: 0,
    assignments: false,
    bare: Bare::Nothing,
};

const WRAPPERS: &[Wrapper] = &[
    NO_OPTIONS,
    Wrapper {
        names: &["timeout"],
        options: Options {
            short_arg: "ks",
            short_flag: "v",
            long_arg: &["kill-after", "signal"],
            long_flag: &["foreground", "preserve-status", "verbose", "help", "version"],
            ..Options::NONE
        },
        positional: 1,
        assignments: false,
        bare: Bare::Nothing,
    },
    Wrapper {
        names: &["nice"],
        options: Options {
            short_arg: "n",
            long_arg: &["adjustment"],
            long_flag: &["help", "version"],
            numeric: true,
            ..Options::NONE
        },
        positional: 0,
        assignments: false,
        bare: Bare::Nothing,
    },
    Wrapper {
        names: &["stdbuf"],
        options: Options {
            short_arg: "ioe",
            long_arg: &["input", "output", "error"],
            long_flag: &["help", "version"],
            ..Options::NONE
        },
        positional: 0,
        assignments: false,
        bare: Bare::Nothing,
    },
    Wrapper {
        names: &["setsid"],
        options: Options {
            short_flag: "cfwhV",
            long_flag: &["ctty", "fork", "wait", "help", "version"],
            ..Options::NONE
        },
        positional: 0,
        assignments: false,
        bare: Bare::Nothing,
    },
    Wrapper {
        names: &["chroot"],
        options: Options {
            long_arg: &["groups", "userspec"],
            long_flag: &["skip-chdir", "help", "version"],
            ..Options::NONE
        },
        positional: 1,
        assignments: false,
        bare: Bare::Shell,
    },
    Wrapper {
        names: &["ionice"],
        options: Options {
            short_arg: "cnpPu",
            short_flag: "thV",
            long_arg: &["class", "classdata", "pid", "pgid", "uid"],
            long_flag: &["ignore", "help", "version"],
            ..Options::NONE
        },
        positional: 0,
        assignments: false,
        bare: Bare::Nothing,
    },
    Wrapper {
        names: &["taskset"],
        options: Options {
            short_flag: "apchV",
            long_flag: &["all-tasks", "pid", "cpu-list", "help", "version"],
            ..Options::NONE
        },
        positional: 1,
        assignments: false,
        bare: Bare::Nothing,
    },
    Wrapper {
        names: &["chrt"],
        options: Options {
            short_arg: "TPD",
            short_flag: "bdfiorRampvhV",
            long_arg: &["sched-runtime", "sched-period", "sched-deadline"],
            long_flag: &[
                "batch",
                "deadline",
                "fifo",
                "idle",
                "other",
                "rr",
                "reset-on-fork",
                "all-tasks",
                "max",
                "pid",
                "verbose",
                "help",
                "version",
            ],
            ..Options::NONE
        },
        positional: 1,
        assignments: false,
        bare: Bare::Nothing,
    },
    Wrapper {
        names: &["time"],
        options: Options {
            short_arg: "fo",
            short_flag: "apqvV",
            long_arg: &["format", "output"],
            long_flag: &["append", "portability", "quiet", "verbose", "help", "version"],
            ..Options::NONE
        },
        positional: 0,
        assignments: false,
        bare: Bare::Nothing,
    },
    Wrapper {
        names: &["sudo"],
        options: Options {
            short_arg: "CDgpRrTtUu",
            short_flag: "AbBEeHiKklnPSsVv",
            long_arg: &[
                "close-from",
                "chdir",
                "group",
                "prompt",
                "chroot",
                "role",
                "type",
                "command-timeout",
                "other-user",
                "user",
            ],
            long_opt: &["preserve-env"],
            long_flag: &[
                "askpass",
                "background",
                "bell",
                "edit",
                "set-home",
                "login",
                "remove-timestamp",
                "reset-timestamp",
                "list",
                "non-interactive",
                "preserve-groups",
                "stdin",
                "shell",
                "validate",
                "version",
            ],
            ..Options::NONE
        },
        positional: 0,
        assignments: true,
        bare: Bare::Nothing,
    },
    Wrapper {
        names: &["doas"],
        options: Options {
            short_arg: "Cu",
            short_flag: "Lns",
            ..Options::NONE
        },
        positional: 0,
        assignments: false,
        bare: Bare::Nothing,
    },
    Wrapper {
        names: &["pkexec"],
        options: Options {
            long_arg: &["user"],
            long_flag: &["disable-internal-agent", "keep-cwd", "help", "version"],
            ..Options::NONE
        },
        positional: 0,
        assignments: false,
        bare: Bare::Shell,
    },
];

/// Programs that run a command given in their arguments, whose options are
/// too many or too irregular to read here: always refused under a policy.
const OPAQUE: &[&str] = &[
    "unshare",
    "nsenter",
    "firejail",
    "bwrap",
    "systemd-run",
    "run0",
    "strace",
    "ltrace",
    "numactl",
    "torsocks",
    "proxychains",
    "proxychains4",
    "unbuffer",
    "fakeroot",
    "setpriv",
    "capsh",
    "prlimit",
    "runcon",
    "sg",
    "parallel",
    "sem",
    "caffeinate",
    "start-stop-daemon",
    "daemonize",
    "chpst",
    "softlimit",
    "setuidgid",
    "envuidgid",
    "envdir",
    "cgexec",
    "aa-exec",
    "cpulimit",
    "trickle",
    "nocache",
    "faketime",
    "systemd-inhibit",
    "dbus-run-session",
    "dbus-launch",
    "ssh-agent",
    "xvfb-run",
    "valgrind",
    "schedtool",
    // Launchers from busybox, kbd, moreutils, execline and the like: each
    // runs the command in its arguments (or a script given as one).
    "cttyhack",
    "openvt",
    "tcpsvd",
    "udpsvd",
    "inotifyd",
    "chronic",
    "ifne",
    "lckdo",
    "pee",
    "mispipe",
    "rlwrap",
    "gosu",
    "su-exec",
    "sshpass",
    "execlineb",
    "dtach",
    "abduco",
    "entr",
    "tmux",
    "screen",
    "xterm",
    "systemd-nspawn",
    "flatpak-spawn",
    "hwloc-bind",
];

/// What `words` (a command with its arguments) runs besides itself.
pub fn inner(words: &[Arg]) -> Vec<Inner> {
    let Some(name) = words.first().and_then(Arg::lit) else {
        return Vec::new();
    };
    let name = base(name);
    let args = &words[1..];
    if let Some(found) = builtins::inner(name, args) {
        return found;
    }
    if shells::SHELLS.contains(&name) {
        return shells::shell(name, args);
    }
    if let Some(found) = launchers::inner(name, args) {
        return found.unwrap_or_else(|why| vec![Inner::Unknowable(why.0)]);
    }
    let found = match name {
        "env" => env(args),
        "find" => find(args),
        "xargs" => xargs(args),
        "watch" => watch(args),
        "flock" => flock(args),
        "su" | "runuser" => return shells::su(name, args),
        "script" => return shells::script(args),
        "busybox" => Ok(args
            .first()
            .map(|_| Inner::Command(args.to_vec()))
            .into_iter()
            .collect()),
        _ if OPAQUE.contains(&name) => Err(Unreadable::from(format!(
            "`{name}` runs a command whose options the command policy does not read; run the command \
             directly (containment belongs to the sandbox, not to the policy)"
        ))),
        _ => match WRAPPERS.iter().find(|w| w.names.contains(&name)) {
            Some(w) => wrapped(name, w, args),
            None => Ok(Vec::new()),
        },
    };
    found.unwrap_or_else(|why| vec![Inner::Unknowable(why.0)])
}

/// A wrapper from the table: options, operands, then the command.
fn wrapped(name: &str, w: &Wrapper, args: &[Arg]) -> Result<Vec<Inner>, Unreadable> {
    let parsed = getopt::parse(name, &w.options, args)?;
    let mut rest = &args[parsed.rest..];
    if rest.len() < w.positional {
        return Ok(Vec::new());
    }
    if let Some(dynamic) = rest[..w.positional].iter().find(|a| a.lit().is_none()) {
        return Err(Unreadable::from(format!(
            "`{name}` is given an operand computed at run time (`{}`), so the command policy cannot tell \
             where its command starts; write it literally",
            dynamic.display()
        )));
    }
    rest = &rest[w.positional..];
    if w.assignments {
        rest = skip_assignments(rest);
    }
    // `sudo -s`/`-i` and `doas -s` start a shell when given no command.
    let shell_flag =
        matches!(name, "sudo" | "doas") && (parsed.has("-s", "--shell") || parsed.has("-i", "--login"));
    match (rest.is_empty(), w.bare, shell_flag) {
        (false, _, _) => Ok(vec![Inner::Command(rest.to_vec())]),
        (true, Bare::Shell, _) | (true, _, true) => Err(Unreadable::from(shells::stdin_shell(name))),
        (true, Bare::Nothing, false) => Ok(Vec::new()),
    }
}

/// `NAME=value` words before a command (`env A=1 cmd`, `sudo A=1 cmd`).
/// `env` takes any word with a `=` for one (`env 'a-b=1' cmd` runs `cmd`),
/// whether or not NAME is a shell identifier, and so does this.
pub fn skip_assignments(args: &[Arg]) -> &[Arg] {
    let n = args
        .iter()
        .take_while(|a| a.lit().is_some_and(|w| w.find('=').is_some_and(|at| at > 0)))
        .count();
    &args[n..]
}

const ENV: Options = Options {
    short_arg: "uCS",
    short_flag: "i0v",
    long_arg: &["unset", "chdir", "split-string"],
    long_opt: &["block-signal", "default-signal", "ignore-signal"],
    long_flag: &[
        "ignore-environment",
        "null",
        "debug",
        "list-signal-handling",
        "help",
        "version",
    ],
    ..Options::NONE
};

fn env(args: &[Arg]) -> Result<Vec<Inner>, Unreadable> {
    let parsed = getopt::parse("env", &ENV, args)?;
    let mut rest = &args[parsed.rest..];
    if rest.first().and_then(Arg::lit) == Some("-") {
        rest = &rest[1..];
    }
    if let Some(split) = parsed.value("-S", "--split-string") {
        // `env -S STRING` splits STRING into words and reads them as its own
        // arguments, options and assignments included (`env -S '-i rm x'`
        // runs `rm`): they are read as `env WORDS… REST…` in turn.
        if parsed
            .given
            .iter()
            .filter(|g| matches!(g.name.as_str(), "-S" | "--split-string"))
            .count()
            > 1
        {
            return Err(Unreadable::from(
                "`env` is given `-S` more than once; give it one string to split".to_string(),
            ));
        }
        let split = split.as_ref().and_then(Arg::lit).unwrap_or("\\");
        let mut words = vec![Arg::Lit("env".to_string())];
        words.extend(split_string(split)?.into_iter().map(Arg::Lit));
        words.extend(rest.iter().cloned());
        return Ok(vec![Inner::Command(words)]);
    }
    let rest = skip_assignments(rest);
    Ok(if rest.is_empty() {
        Vec::new()
    } else {
        vec![Inner::Command(rest.to_vec())]
    })
}

/// The words `env -S` makes of `text`: split at blanks, with `'…'` and
/// `"…"` quoting; `#` at the start of a word ends the string. Escapes and
/// `${VAR}` (env's own expansion) are refused: only plain text is read.
fn split_string(text: &str) -> Result<Vec<String>, Unreadable> {
    if text.contains(['\\', '$']) {
        return Err(Unreadable::from(
            "`env -S` is given a string with escapes or `${…}`, which the command policy does not \
             expand; write the command without `env -S`"
                .to_string(),
        ));
    }
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c' => words.extend(word.take()),
            '#' if word.is_none() => break,
            '\'' | '"' => {
                let quoted = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some(q) if q == c => break,
                        Some(q) => quoted.push(q),
                        None => {
                            return Err(Unreadable::from(format!(
                                "`env -S` is given a string with an unterminated {c} quote"
                            )))
                        }
                    }
                }
            }
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

const XARGS: Options = Options {
    short_arg: "adEILnPs",
    short_opt: "eil",
    short_flag: "0oprtx",
    long_arg: &[
        "arg-file",
        "delimiter",
        "max-lines",
        "max-args",
        "max-procs",
        "max-chars",
        "process-slot-var",
    ],
    long_opt: &["eof", "replace"],
    long_flag: &[
        "null",
        "open-tty",
        "interactive",
        "no-run-if-empty",
        "show-limits",
        "verbose",
        "exit",
        "help",
        "version",
    ],
    numeric: false,
};

/// `xargs CMD ARGS…` runs CMD with more arguments read from its input; with
/// `-I R`, every R in the words is replaced by input.
fn xargs(args: &[Arg]) -> Result<Vec<Inner>, Unreadable> {
    let parsed = getopt::parse("xargs", &XARGS, args)?;
    let replace = parsed
        .given
        .iter()
        .rev()
        .find(|g| matches!(g.name.as_str(), "-I" | "-i" | "--replace"))
        .map(|g| {
            g.value
                .as_ref()
                .map_or(Some("{}".to_string()), |v| v.lit().map(str::to_string))
        });
    let mut words: Vec<Arg> = args[parsed.rest..].to_vec();
    if words.is_empty() {
        words.push(Arg::Lit("echo".into()));
    }
    match replace {
        Some(None) => {
            return Err(Unreadable::from(
                "`xargs -I` is given a replace string computed at run time",
            ))
        }
        Some(Some(r)) => {
            for w in &mut words {
                if w.display().contains(r.as_str()) {
                    *w = Arg::Dyn(w.display().to_string());
                }
            }
        }
        None => words.push(Arg::Dyn("(arguments read from input by xargs)".into())),
    }
    Ok(vec![Inner::Command(words)])
}

/// The primaries of `find` whose next word is a value, not an expression.
const FIND_VALUES: &[&str] = &[
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-wholename",
    "-iwholename",
    "-regex",
    "-iregex",
    "-lname",
    "-ilname",
    "-type",
    "-xtype",
    "-newer",
    "-anewer",
    "-cnewer",
    "-user",
    "-group",
    "-uid",
    "-gid",
    "-perm",
    "-size",
    "-mtime",
    "-mmin",
    "-atime",
    "-amin",
    "-ctime",
    "-cmin",
    "-maxdepth",
    "-mindepth",
    "-links",
    "-inum",
    "-samefile",
    "-fstype",
    "-printf",
    "-fprintf",
    "-fprint",
    "-fprint0",
    "-fls",
    "-used",
    "-context",
    "-regextype",
    "-newerXY",
];

/// `find … -exec CMD {} ;` (and `-execdir`, `-ok`, `-okdir`) runs CMD for
/// each file found, with `{}` replaced by its name.
fn find(args: &[Arg]) -> Result<Vec<Inner>, Unreadable> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let Some(w) = args[i].lit() else {
            let after_value = i > 0 && args[i - 1].lit().is_some_and(|p| FIND_VALUES.contains(&p));
            if !after_value {
                return Err(Unreadable::from(format!(
                    "`find` is given a word computed at run time (`{}`) that could be an action such as \
                     `-exec`; write find's expression literally",
                    args[i].display()
                )));
            }
            i += 1;
            continue;
        };
        if matches!(w, "-exec" | "-execdir" | "-ok" | "-okdir") {
            let start = i + 1;
            let mut end = start;
            while end < args.len() && !matches!(args[end].lit(), Some(";" | "+")) {
                end += 1;
            }
            let words: Vec<Arg> = args[start..end]
                .iter()
                .map(|a| match a {
                    Arg::Lit(s) if s.contains("{}") => Arg::Dyn(s.clone()),
                    other => other.clone(),
                })
                .collect();
            if !words.is_empty() {
                out.push(Inner::Command(words));
            }
            i = end;
        } else if FIND_VALUES.contains(&w) {
            i += 1;
        }
        i += 1;
    }
    Ok(out)
}

const WATCH: Options = Options {
    short_arg: "nq",
    short_opt: "d",
    short_flag: "bceghptwxv",
    long_arg: &["interval", "equexit"],
    long_opt: &["differences"],
    long_flag: &[
        "beep", "color", "errexit", "chgexit", "precise", "no-title", "no-wrap", "exec", "help", "version",
        "no-color",
    ],
    numeric: false,
};

/// `watch CMD…` runs its words joined through `sh -c`; `-x` runs them as is.
fn watch(args: &[Arg]) -> Result<Vec<Inner>, Unreadable> {
    let parsed = getopt::parse("watch", &WATCH, args)?;
    let rest = &args[parsed.rest..];
    if parsed.has("-x", "--exec") {
        return Ok(if rest.is_empty() {
            Vec::new()
        } else {
            vec![Inner::Command(rest.to_vec())]
        });
    }
    Ok(joined(rest, "watch")?.into_iter().collect())
}

const FLOCK: Options = Options {
    short_arg: "wEc",
    short_flag: "sxeunoFhV",
    long_arg: &["timeout", "conflict-exit-code", "command"],
    long_flag: &[
        "shared",
        "exclusive",
        "unlock",
        "nonblock",
        "close",
        "no-fork",
        "verbose",
        "help",
        "version",
    ],
    ..Options::NONE
};

/// `flock FILE CMD…`, `flock FILE -c 'script'`, or `flock FD`.
fn flock(args: &[Arg]) -> Result<Vec<Inner>, Unreadable> {
    let parsed = getopt::parse("flock", &FLOCK, args)?;
    let rest = &args[parsed.rest..];
    let script = match (parsed.value("-c", "--command"), rest.get(1).and_then(Arg::lit)) {
        (Some(v), _) => v.clone(),
        (None, Some("-c" | "--command")) => rest.get(2).cloned(),
        (None, Some(w)) if w.starts_with("--command=") => Some(Arg::Lit(w["--command=".len()..].to_string())),
        (None, _) => {
            return Ok(if rest.len() > 1 {
                vec![Inner::Command(rest[1..].to_vec())]
            } else {
                Vec::new()
            })
        }
    };
    match script {
        Some(s) => Ok(joined(&[s], "flock -c")?.into_iter().collect()),
        None => Err(Unreadable::from("`flock -c` has no command")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<Arg> {
        s.split_whitespace().map(|w| Arg::Lit(w.to_string())).collect()
    }

    fn first_command(s: &str) -> Vec<String> {
        match inner(&words(s)).into_iter().next() {
            Some(Inner::Command(w)) => w.iter().map(|a| a.display().to_string()).collect(),
            other => panic!("{s}: {other:?}"),
        }
    }

    fn unknowable(s: &str) -> bool {
        matches!(inner(&words(s)).as_slice(), [Inner::Unknowable(_)])
    }

    #[test]
    fn wrappers_expose_their_command() {
        assert_eq!(first_command("env -i A=1 -u B sudo ls")[0], "-u");
        assert_eq!(first_command("env -i -u B A=1 sudo ls")[0], "sudo");
        assert_eq!(first_command("env -iu B sudo ls")[0], "sudo");
        assert_eq!(first_command("sudo -u root -E rm -rf /")[0], "rm");
        assert_eq!(first_command("sudo -Eu root rm -rf /")[0], "rm");
        assert_eq!(first_command("nohup sudo ls")[0], "sudo");
        assert_eq!(first_command("time -p sudo ls")[0], "sudo");
        assert_eq!(first_command("timeout -s KILL 5 sudo ls")[0], "sudo");
        assert_eq!(first_command("timeout -vs KILL 5 sudo ls")[0], "sudo");
        assert_eq!(first_command("timeout --sig KILL 5 sudo ls")[0], "sudo");
        assert_eq!(first_command("nice -n 5 sudo ls")[0], "sudo");
        assert_eq!(first_command("nice -5 sudo ls")[0], "sudo");
        assert_eq!(first_command("nice --adj 5 sudo ls")[0], "sudo");
        assert_eq!(first_command("stdbuf -oL -e 0 sudo ls")[0], "sudo");
        assert_eq!(first_command("ionice -c3 sudo ls")[0], "sudo");
        assert_eq!(first_command("taskset -c 0 sudo ls")[0], "sudo");
        assert_eq!(first_command("chroot / sudo ls")[0], "sudo");
        assert_eq!(first_command("setsid -wf sudo ls")[0], "sudo");
        assert_eq!(first_command("flock -x f sudo ls")[0], "sudo");
        assert_eq!(
            first_command("xargs -n 1 sudo"),
            ["sudo", "(arguments read from input by xargs)"]
        );
        assert_eq!(first_command("xargs -0I {} sudo {}"), ["sudo", "{}"]);
        assert_eq!(first_command("find . -name x -exec sudo rm {} ;")[0], "sudo");
        assert_eq!(first_command("/usr/bin/env sudo ls")[0], "sudo");
        assert_eq!(first_command("watch -x sudo ls")[0], "sudo");
    }

    #[test]
    fn what_cannot_be_read_is_unknowable() {
        assert!(unknowable("timeout -z 5 rm"), "unknown option");
        assert!(unknowable("chroot /"), "a shell reading stdin");
        assert!(unknowable("sudo -s"));
        assert!(unknowable("unshare -r rm"));
        assert!(unknowable("env -S r\\m"));
        let dynamic = [
            Arg::Lit("timeout".into()),
            Arg::Dyn("$T".into()),
            Arg::Lit("rm".into()),
        ];
        assert!(matches!(inner(&dynamic).as_slice(), [Inner::Unknowable(_)]));
        let find = [
            Arg::Lit("find".into()),
            Arg::Lit(".".into()),
            Arg::Dyn("$A".into()),
        ];
        assert!(matches!(inner(&find).as_slice(), [Inner::Unknowable(_)]));
    }

    #[test]
    fn scripts_are_exposed() {
        let env = |w: &[&str]| Inner::Command(w.iter().map(|w| Arg::Lit(w.to_string())).collect());
        assert_eq!(inner(&words("env -S x")), [env(&["env", "x"])]);
        assert_eq!(inner(&words("env -iSx y")), [env(&["env", "x", "y"])]);
        assert_eq!(inner(&words("watch -n1 a b")), [Inner::Script("a b".into())]);
        assert_eq!(inner(&words("flock -xc x f")), [Inner::Script("x".into())]);
        assert_eq!(inner(&words("flock f -c x")), [Inner::Script("x".into())]);
    }
}
