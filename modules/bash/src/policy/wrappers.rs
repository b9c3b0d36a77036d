//! Commands that run other commands: `env`, `sudo`, `nohup`, `time`,
//! `xargs`, `find -exec`, shells with `-c`, `eval` and the like. For each,
//! what it runs: more words to check as a command, a string to parse as a
//! script, or a reason it cannot be known.

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

/// Shells whose `-c STRING` is parsed as a script.
const SHELLS: &[&str] = &[
    "bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "rbash", "yash", "posh",
];

/// Option spec for a plain wrapper: options that take a separate argument,
/// and how many positional words come before the wrapped command.
struct Spec {
    names: &'static [&'static str],
    with_arg: &'static [&'static str],
    positional: usize,
}

const SPECS: &[Spec] = &[
    Spec {
        names: &["sudo", "doas", "pkexec", "run0"],
        with_arg: &[
            "-u",
            "-g",
            "-C",
            "-D",
            "-h",
            "-p",
            "-r",
            "-t",
            "-T",
            "-U",
            "-R",
            "--user",
            "--group",
            "--chdir",
            "--host",
            "--prompt",
            "--role",
            "--type",
            "--other-user",
            "--close-from",
            "--command-timeout",
        ],
        positional: 0,
    },
    Spec {
        names: &[
            "nohup",
            "setsid",
            "unbuffer",
            "eatmydata",
            "fakeroot",
            "catchsegv",
            "torsocks",
            "proxychains",
            "proxychains4",
            "builtin",
            "caffeinate",
        ],
        with_arg: &[],
        positional: 0,
    },
    Spec {
        names: &["time"],
        with_arg: &["-f", "-o", "--format", "--output"],
        positional: 0,
    },
    Spec {
        names: &["nice"],
        with_arg: &["-n", "--adjustment"],
        positional: 0,
    },
    Spec {
        names: &["stdbuf"],
        with_arg: &["-i", "-o", "-e", "--input", "--output", "--error"],
        positional: 0,
    },
    Spec {
        names: &["ionice"],
        with_arg: &[
            "-c",
            "-n",
            "-p",
            "-P",
            "-u",
            "--class",
            "--classdata",
            "--pid",
            "--pgid",
            "--uid",
        ],
        positional: 0,
    },
    Spec {
        names: &["command"],
        with_arg: &[],
        positional: 0,
    },
    Spec {
        names: &["exec"],
        with_arg: &["-a"],
        positional: 0,
    },
    Spec {
        names: &["timeout"],
        with_arg: &["-s", "-k", "--signal", "--kill-after"],
        positional: 1,
    },
    Spec {
        names: &["chroot"],
        with_arg: &["--userspec", "--groups"],
        positional: 1,
    },
    Spec {
        names: &["taskset", "chrt"],
        with_arg: &[],
        positional: 1,
    },
    Spec {
        names: &["numactl"],
        with_arg: &[
            "-C",
            "-N",
            "-m",
            "-p",
            "-i",
            "--physcpubind",
            "--cpunodebind",
            "--membind",
            "--preferred",
            "--interleave",
        ],
        positional: 0,
    },
    Spec {
        names: &["strace", "ltrace"],
        with_arg: &[
            "-o", "-p", "-e", "-s", "-u", "-E", "-a", "-P", "-b", "-I", "-X", "-O", "-S", "-U",
        ],
        positional: 0,
    },
    Spec {
        names: &["xargs"],
        with_arg: &[
            "-a",
            "-d",
            "-E",
            "-I",
            "-L",
            "-n",
            "-P",
            "-s",
            "--arg-file",
            "--delimiter",
            "--eof",
            "--replace",
            "--max-lines",
            "--max-args",
            "--max-procs",
            "--max-chars",
            "--process-slot-var",
        ],
        positional: 0,
    },
    Spec {
        names: &["systemd-run", "unshare", "nsenter", "firejail", "bwrap"],
        with_arg: &[
            "-u",
            "-p",
            "-t",
            "-S",
            "-G",
            "--unit",
            "--property",
            "-p",
            "--uid",
            "--gid",
            "--setuid",
            "--setgid",
            "--target",
            "--bind",
            "--ro-bind",
            "--chdir",
        ],
        positional: 0,
    },
    Spec {
        names: &["flock"],
        with_arg: &["-w", "-E", "--timeout", "--conflict-exit-code"],
        positional: 1,
    },
];

/// What `words` (a command with its arguments) runs besides itself.
pub fn inner(words: &[Arg]) -> Vec<Inner> {
    let Some(name) = words.first().and_then(Arg::lit) else {
        return Vec::new();
    };
    let name = base(name);
    let args = &words[1..];
    if SHELLS.contains(&name) {
        return shell(name, args);
    }
    match name {
        "env" => env(args),
        "eval" => joined(args, "eval").into_iter().collect(),
        "trap" => trap(args),
        "alias" => alias(args),
        "find" => find(args),
        "su" | "runuser" | "script" => dash_c(name, args),
        "watch" => after_options(args, &["-n", "-d", "--interval", "-q", "--equexit"], 0)
            .map(|rest| joined(rest, "watch"))
            .into_iter()
            .flatten()
            .collect(),
        "busybox" => args
            .first()
            .map(|_| Inner::Command(args.to_vec()))
            .into_iter()
            .collect(),
        "flock" if has_flag(args, "-c", "--command") => dash_c(name, args),
        "command" if has_flag(args, "-v", "-V") => Vec::new(),
        "xargs" => Vec::from([Inner::Command(
            after_options(args, spec("xargs").map(|s| s.with_arg).unwrap_or(&[]), 0)
                .filter(|r| !r.is_empty())
                .map(<[Arg]>::to_vec)
                .unwrap_or_else(|| vec![Arg::Lit("echo".into())]),
        )]),
        _ => match spec(name) {
            Some(spec) => after_options(args, spec.with_arg, spec.positional)
                .filter(|rest| !rest.is_empty())
                .map(|rest| Inner::Command(skip_assignments(rest).to_vec()))
                .into_iter()
                .collect(),
            None => Vec::new(),
        },
    }
}

fn spec(name: &str) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.names.contains(&name))
}

fn has_flag(args: &[Arg], short: &str, long: &str) -> bool {
    args.iter()
        .any(|a| a.lit() == Some(short) || a.lit() == Some(long))
}

/// The words after the options (and `positional` leading operands).
/// `None` when an option word is computed at run time.
fn after_options<'a>(args: &'a [Arg], with_arg: &[&str], positional: usize) -> Option<&'a [Arg]> {
    let mut i = 0;
    while i < args.len() {
        let w = args[i].lit()?;
        if w == "--" {
            i += 1;
            break;
        }
        if !w.starts_with('-') || w == "-" {
            break;
        }
        let opt = w.split('=').next().unwrap_or(w);
        i += if with_arg.contains(&opt) && !w.contains('=') {
            2
        } else {
            1
        };
    }
    let start = (i + positional).min(args.len());
    Some(&args[start..])
}

/// `NAME=value` words before a command (`env A=1 cmd`, `sudo A=1 cmd`).
fn skip_assignments(args: &[Arg]) -> &[Arg] {
    let n = args
        .iter()
        .take_while(|a| {
            a.lit().is_some_and(|w| {
                w.split_once('=').is_some_and(|(name, _)| {
                    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                })
            })
        })
        .count();
    &args[n..]
}

fn joined(args: &[Arg], what: &str) -> Option<Inner> {
    if args.is_empty() {
        return None;
    }
    let mut text = Vec::new();
    for a in args {
        match a {
            Arg::Lit(s) => text.push(s.as_str()),
            Arg::Dyn(s) => {
                return Some(Inner::Unknowable(format!(
                    "`{what}` runs text computed at run time (`{s}`), which cannot be checked"
                )))
            }
        }
    }
    Some(Inner::Script(text.join(" ")))
}

fn shell(name: &str, args: &[Arg]) -> Vec<Inner> {
    let mut i = 0;
    let mut dash_c = false;
    while i < args.len() {
        let Some(w) = args[i].lit() else {
            return vec![Inner::Unknowable(format!(
                "`{name}` is given an option computed at run time (`{}`)",
                args[i].display()
            ))];
        };
        if w == "--" || w == "-" {
            i += 1;
            break;
        }
        if matches!(w, "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file") {
            i += 2;
            continue;
        }
        if w.starts_with("--") {
            i += 1;
            continue;
        }
        if (w.starts_with('-') || w.starts_with('+')) && w.len() > 1 {
            if w.starts_with('-') && w[1..].contains('c') {
                dash_c = true;
            }
            if w.starts_with('-') && w[1..].contains('s') && !dash_c {
                return vec![stdin_shell(name)];
            }
            i += 1;
            continue;
        }
        break;
    }
    match (dash_c, args.get(i)) {
        (true, Some(Arg::Lit(script))) => vec![Inner::Script(script.clone())],
        (true, Some(Arg::Dyn(s))) => vec![Inner::Unknowable(format!(
            "`{name} -c` is given a script computed at run time (`{s}`), which cannot be checked"
        ))],
        (true, None) => vec![Inner::Unknowable(format!("`{name} -c` has no script"))],
        // A script file: its content is not read (see the README).
        (false, Some(_)) => Vec::new(),
        (false, None) => vec![stdin_shell(name)],
    }
}

fn stdin_shell(name: &str) -> Inner {
    Inner::Unknowable(format!(
        "`{name}` would read its commands from stdin (a pipe or here-document), which the command policy \
         cannot check; pass them with `{name} -c '…'` instead"
    ))
}

fn env(args: &[Arg]) -> Vec<Inner> {
    let mut i = 0;
    while i < args.len() {
        let Some(w) = args[i].lit() else { break };
        if w == "--" {
            i += 1;
            break;
        }
        if matches!(w, "-S" | "--split-string")
            || w.starts_with("--split-string=")
            || (w.starts_with("-S") && w.len() > 2)
        {
            let (script, next) = match w.split_once('=') {
                Some((_, v)) => (Some(Arg::Lit(v.to_string())), i + 1),
                None if w.len() > 2 && !w.starts_with("--") => (Some(Arg::Lit(w[2..].to_string())), i + 1),
                None => (args.get(i + 1).cloned(), i + 2),
            };
            let mut words: Vec<Arg> = script.into_iter().collect();
            words.extend(args.iter().skip(next).cloned());
            return joined(&words, "env -S").into_iter().collect();
        }
        if matches!(w, "-u" | "--unset" | "-C" | "--chdir" | "-a" | "--argv0") {
            i += 2;
            continue;
        }
        if w.starts_with('-') && w.len() > 1 {
            i += 1;
            continue;
        }
        break;
    }
    let rest = skip_assignments(&args[i.min(args.len())..]);
    if rest.is_empty() {
        Vec::new()
    } else {
        vec![Inner::Command(rest.to_vec())]
    }
}

fn dash_c(name: &str, args: &[Arg]) -> Vec<Inner> {
    for (i, a) in args.iter().enumerate() {
        if matches!(a.lit(), Some("-c" | "--command")) {
            return match args.get(i + 1) {
                Some(Arg::Lit(s)) => vec![Inner::Script(s.clone())],
                Some(Arg::Dyn(s)) => vec![Inner::Unknowable(format!(
                    "`{name} -c` is given a script computed at run time (`{s}`)"
                ))],
                None => Vec::new(),
            };
        }
        if let Some(s) = a.lit().and_then(|w| w.strip_prefix("--command=")) {
            return vec![Inner::Script(s.to_string())];
        }
    }
    if name == "flock" {
        // `flock FILE cmd args…`
        return after_options(args, &["-w", "-E", "--timeout", "--conflict-exit-code"], 1)
            .filter(|r| !r.is_empty())
            .map(|r| vec![Inner::Command(r.to_vec())])
            .unwrap_or_default();
    }
    Vec::new()
}

fn trap(args: &[Arg]) -> Vec<Inner> {
    match args.first() {
        Some(Arg::Lit(w)) if w.starts_with('-') => Vec::new(),
        Some(first) if args.len() >= 2 => joined(std::slice::from_ref(first), "trap").into_iter().collect(),
        _ => Vec::new(),
    }
}

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

fn find(args: &[Arg]) -> Vec<Inner> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        if matches!(args[i].lit(), Some("-exec" | "-execdir" | "-ok" | "-okdir")) {
            let start = i + 1;
            let mut end = start;
            while end < args.len() && !matches!(args[end].lit(), Some(";" | "+")) {
                end += 1;
            }
            if end > start {
                out.push(Inner::Command(args[start..end].to_vec()));
            }
            i = end;
        }
        i += 1;
    }
    out
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

    #[test]
    fn wrappers_expose_their_command() {
        assert_eq!(first_command("env -i A=1 -u B sudo ls")[0], "-u");
        assert_eq!(first_command("env -i -u B A=1 sudo ls")[0], "sudo");
        assert_eq!(first_command("sudo -u root -E rm -rf /")[0], "rm");
        assert_eq!(first_command("nohup sudo ls")[0], "sudo");
        assert_eq!(first_command("time -p sudo ls")[0], "sudo");
        assert_eq!(first_command("timeout -s KILL 5 sudo ls")[0], "sudo");
        assert_eq!(first_command("nice -n 5 sudo ls")[0], "sudo");
        assert_eq!(first_command("xargs -n 1 sudo")[0], "sudo");
        assert_eq!(first_command("find . -name x -exec sudo rm {} ;")[0], "sudo");
        assert_eq!(first_command("/usr/bin/env sudo ls")[0], "sudo");
    }

    #[test]
    fn shells_expose_their_script() {
        assert_eq!(inner(&words("bash -c x")), [Inner::Script("x".into())]);
        assert_eq!(inner(&words("sh -ec x")), [Inner::Script("x".into())]);
        assert_eq!(inner(&words("bash -o errexit -c x")), [Inner::Script("x".into())]);
        assert!(matches!(inner(&words("bash")).as_slice(), [Inner::Unknowable(_)]));
        assert!(matches!(
            inner(&words("bash -s")).as_slice(),
            [Inner::Unknowable(_)]
        ));
        assert!(inner(&words("bash script.sh")).is_empty());
        assert_eq!(inner(&words("eval sudo ls")), [Inner::Script("sudo ls".into())]);
        assert_eq!(inner(&words("su -c x root")), [Inner::Script("x".into())]);
        assert_eq!(inner(&words("env -S x")), [Inner::Script("x".into())]);
    }
}
