//! Programs that start another program's image under changed conditions,
//! named in ways the wrapper table's fixed names cannot cover: the dynamic
//! loader run directly (`/lib64/ld-linux-x86-64.so.2 /usr/bin/rm x`, `ld.so
//! rm`), and `setarch` with its per-architecture names (`setarch x86_64 rm
//! x`, `linux64 rm x`).
//!
//! Each is read with its own option table ([`getopt`]), like the wrappers,
//! so the program it starts is checked as a command in turn.

use super::getopt::{self, Options};
use super::inner::Inner;
use super::shells;
use super::unreadable::Unreadable;
use super::words::Arg;

/// The loader's options (`ld.so --help`); those with a value take it as the
/// next word.
const LOADER: Options = Options {
    long_arg: &[
        "library-path",
        "inhibit-rpath",
        "audit",
        "preload",
        "argv0",
        "glibc-hwcaps-prepend",
        "glibc-hwcaps-mask",
    ],
    long_flag: &[
        "list",
        "verify",
        "inhibit-cache",
        "list-tunables",
        "list-diagnostics",
        "help",
        "version",
    ],
    ..Options::NONE
};

/// `setarch`'s options (util-linux).
const SETARCH: Options = Options {
    short_flag: "BFILRSTXZ3vhV",
    long_opt: &["show"],
    long_flag: &[
        "32bit",
        "fdpic-funcptrs",
        "short-inode",
        "addr-compat-layout",
        "addr-no-randomize",
        "whole-seconds",
        "sticky-timeouts",
        "read-implies-exec",
        "mmap-page-zero",
        "3gb",
        "4gb",
        "uname-2.6",
        "verbose",
        "list",
        "help",
        "version",
    ],
    ..Options::NONE
};

/// The names util-linux installs as links to `setarch`, each taking the
/// architecture from its own name.
const ARCH_NAMES: &[&str] = &[
    "linux32",
    "linux64",
    "uname26",
    "i386",
    "i486",
    "i586",
    "i686",
    "x86_64",
    "ia64",
    "aarch64",
    "arm64",
    "arm",
    "armh",
    "armv7l",
    "armv8l",
    "ppc",
    "ppc32",
    "ppc64",
    "ppcle",
    "ppc64le",
    "s390",
    "s390x",
    "sparc",
    "sparc32",
    "sparc32bash",
    "sparc64",
    "mips",
    "mips32",
    "mips64",
    "parisc",
    "parisc32",
    "parisc64",
    "alpha",
    "loongarch",
    "loongarch64",
];

/// Whether a base name is the dynamic loader's: `ld.so`, `ld-linux*.so*`,
/// `ld64.so*`, `ld-musl-*.so*`.
pub fn is_loader(name: &str) -> bool {
    name == "ld.so" || ((name.starts_with("ld-") || name.starts_with("ld64.")) && name.contains(".so"))
}

/// What a launcher named `name` (a base name) runs, or `None` when `name`
/// is no launcher.
pub fn inner(name: &str, args: &[Arg]) -> Option<Result<Vec<Inner>, Unreadable>> {
    if is_loader(name) {
        return Some(loader(name, args));
    }
    if name == "setarch" {
        // `setarch [ARCH] [options] [program…]`: the architecture, when
        // given, comes first; whatever it is (even computed at run time:
        // an option or a name), the program starts after the options.
        let arch = usize::from(
            args.first()
                .is_some_and(|a| a.lit().is_none_or(|w| !w.starts_with('-'))),
        );
        return Some(setarch(name, &args[arch..]));
    }
    ARCH_NAMES.contains(&name).then(|| setarch(name, args))
}

/// `ld.so [options] PROGRAM [ARGS…]` runs PROGRAM (with `--list` or
/// `--verify` it still loads it: read as running it).
fn loader(name: &str, args: &[Arg]) -> Result<Vec<Inner>, Unreadable> {
    let parsed = getopt::parse(name, &LOADER, args)?;
    let rest = &args[parsed.rest..];
    Ok(if rest.is_empty() {
        Vec::new()
    } else {
        vec![Inner::Command(rest.to_vec())]
    })
}

/// The options, then the program; with no program, a shell that reads its
/// commands from stdin.
fn setarch(name: &str, args: &[Arg]) -> Result<Vec<Inner>, Unreadable> {
    let parsed = getopt::parse(name, &SETARCH, args)?;
    let rest = &args[parsed.rest..];
    if parsed.has("", "--list") || parsed.has("-h", "--help") || parsed.has("-V", "--version") {
        return Ok(Vec::new());
    }
    if rest.is_empty() {
        return Err(Unreadable::from(shells::stdin_shell(name)));
    }
    Ok(vec![Inner::Command(rest.to_vec())])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<Arg> {
        s.split_whitespace().map(|w| Arg::Lit(w.to_string())).collect()
    }

    fn command(name: &str, args: &str) -> Vec<String> {
        match inner(name, &words(args)) {
            Some(Ok(found)) => match found.as_slice() {
                [Inner::Command(w)] => w.iter().map(|a| a.display().to_string()).collect(),
                other => panic!("{name} {args}: {other:?}"),
            },
            other => panic!("{name} {args}: {other:?}"),
        }
    }

    #[test]
    fn the_loader_is_known_by_its_names() {
        for name in [
            "ld.so",
            "ld-linux-x86-64.so.2",
            "ld-linux-aarch64.so.1",
            "ld-linux.so.2",
            "ld64.so.2",
            "ld-musl-x86_64.so.1",
        ] {
            assert!(is_loader(name), "{name}");
        }
        for name in ["ld", "ldd", "ldconfig", "ld.gold", "old-ls.so"] {
            assert!(!is_loader(name), "{name}");
        }
    }

    #[test]
    fn launchers_expose_the_program_they_start() {
        assert_eq!(command("ld.so", "/bin/rm x"), ["/bin/rm", "x"]);
        assert_eq!(
            command("ld-linux-x86-64.so.2", "--library-path /lib --argv0 ls /bin/rm x"),
            ["/bin/rm", "x"]
        );
        assert_eq!(command("setarch", "x86_64 -R rm x"), ["rm", "x"]);
        assert_eq!(command("setarch", "-R rm x"), ["rm", "x"]);
        assert_eq!(command("setarch", "x86_64 --uname-2.6 -- rm x"), ["rm", "x"]);
        assert_eq!(command("linux32", "-3 rm x"), ["rm", "x"]);
        assert_eq!(command("x86_64", "rm x"), ["rm", "x"]);
        assert!(matches!(inner("setarch", &words("x86_64")), Some(Err(_))));
        assert!(matches!(inner("setarch", &words("x86_64 -Q rm")), Some(Err(_))));
        assert!(matches!(inner("setarch", &words("--list")), Some(Ok(v)) if v.is_empty()));
        assert!(inner("ls", &words("x")).is_none());
    }
}
