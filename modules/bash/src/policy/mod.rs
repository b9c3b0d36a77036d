//! The command policy: `allowed_commands` / `denied_commands`, checked on a
//! real parse of the command (see [`parse`]).
//!
//! This is a policy, not a sandbox: it reads what the command says before it
//! runs. It follows shells, `eval`, wrappers (read with their own option
//! tables, [`getopt`]) and executing builtins; anything it cannot read (a
//! parse error, a name or option computed at run time, a shell fed from
//! stdin or a file, arithmetic on a value not known to be a number, see
//! [`values`]) is refused rather than allowed. Interpreters (`python -c`),
//! copies of a binary and programs that run others on their own are beyond
//! any name-based rule; the sandbox contains those.

pub mod arith;
pub mod builtins;
pub mod getopt;
pub mod inner;
pub mod launchers;
pub mod names;
pub mod parse;
pub mod shells;
pub mod unreadable;
pub mod values;
pub mod words;
pub mod wrappers;

#[cfg(test)]
mod bypass_tests;

use parse::Invocation;
use words::Arg;

/// Builtins that run nothing else; allowed under an allow-list unless
/// `allow_builtins` is off. (`eval`, `exec`, `command`, `trap`, `source`
/// are not here: they run other commands or files.)
const HARMLESS_BUILTINS: &[&str] = &[
    ":", "true", "false", "cd", "pwd", "echo", "printf", "test", "[", "export", "unset", "set", "shift",
    "exit", "return", "local", "declare", "typeset", "readonly", "read", "wait", "break", "continue",
    "shopt", "umask",
];

/// One rule: a command name, optionally followed by leading arguments
/// (`git push`).
#[derive(Debug, Clone)]
struct Rule {
    text: String,
    words: Vec<String>,
}

impl Rule {
    fn parse(text: &str) -> Option<Rule> {
        let words: Vec<String> = text.split_whitespace().map(str::to_string).collect();
        (!words.is_empty()).then(|| Rule {
            text: text.trim().to_string(),
            words,
        })
    }

    /// Whether `inv` matches. `dyn_matches` says how a run-time argument
    /// counts: as a match for deny rules (to be safe), not for allow rules.
    fn matches(&self, inv: &Invocation, dyn_matches: bool) -> bool {
        let Some(name) = inv.name().lit() else {
            return dyn_matches;
        };
        let rule_name = &self.words[0];
        let name_ok = if rule_name.contains('/') {
            name == rule_name
        } else {
            wrappers::base(name) == rule_name
        };
        if !name_ok {
            return false;
        }
        self.words[1..]
            .iter()
            .enumerate()
            .all(|(i, want)| match inv.words.get(i + 1) {
                Some(Arg::Lit(got)) => got == want,
                Some(Arg::Dyn(_)) => dyn_matches,
                None => false,
            })
    }
}

/// Why the policy refused a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial(pub String);

/// The configured allow- and deny-lists.
#[derive(Debug, Clone, Default)]
pub struct CommandPolicy {
    allowed: Vec<Rule>,
    denied: Vec<Rule>,
    allow_builtins: bool,
}

impl CommandPolicy {
    /// A policy from the plan's lists.
    pub fn new(allowed: &[String], denied: &[String], allow_builtins: bool) -> Self {
        CommandPolicy {
            allowed: allowed.iter().filter_map(|r| Rule::parse(r)).collect(),
            denied: denied.iter().filter_map(|r| Rule::parse(r)).collect(),
            allow_builtins,
        }
    }

    /// Whether there is anything to check.
    pub fn is_active(&self) -> bool {
        !self.allowed.is_empty() || !self.denied.is_empty()
    }

    /// Checks every command `command` would run.
    pub fn check(&self, command: &str) -> Result<(), Denial> {
        if !self.is_active() {
            return Ok(());
        }
        let (invocations, values) = parse::read(command).map_err(unreadable)?;
        for inv in &invocations {
            self.check_one(inv)?;
        }
        values.check().map_err(|why| unreadable(parse::Unreadable(why)))
    }

    fn check_one(&self, inv: &Invocation) -> Result<(), Denial> {
        let via = if inv.via.is_empty() {
            String::new()
        } else {
            format!(" (reached through {})", inv.via.join(" → "))
        };
        if inv.name().lit().is_none() {
            return Err(Denial(format!(
                "the command name `{}` is computed at run time{via}, so the command policy cannot tell what \
                 would run; write the command name literally",
                inv.name().display()
            )));
        }
        if let Some(rule) = self.denied.iter().find(|r| r.matches(inv, true)) {
            return Err(Denial(format!(
                "`{}` is refused by the denied_commands rule `{}`{via}",
                parse::short(&inv.text()),
                rule.text
            )));
        }
        if self.allowed.is_empty() {
            return Ok(());
        }
        let name = inv.name().lit().map(wrappers::base).unwrap_or("");
        if self.allow_builtins && HARMLESS_BUILTINS.contains(&name) {
            return Ok(());
        }
        if self.allowed.iter().any(|r| r.matches(inv, false)) {
            return Ok(());
        }
        let allowed: Vec<&str> = self.allowed.iter().map(|r| r.text.as_str()).collect();
        Err(Denial(format!(
            "`{}` is not in allowed_commands{via}; allowed: {}",
            parse::short(&inv.text()),
            allowed.join(", ")
        )))
    }
}

fn unreadable(e: parse::Unreadable) -> Denial {
    Denial(format!(
        "the command policy could not check this command: {}. While allowed_commands or denied_commands \
         is set, commands that cannot be read are refused.",
        e.0
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deny(list: &[&str]) -> CommandPolicy {
        let list: Vec<String> = list.iter().map(|s| s.to_string()).collect();
        CommandPolicy::new(&[], &list, true)
    }

    fn allow(list: &[&str]) -> CommandPolicy {
        let list: Vec<String> = list.iter().map(|s| s.to_string()).collect();
        CommandPolicy::new(&list, &[], true)
    }

    /// Every bypass of a substring blocklist named in the issue, and more.
    #[test]
    fn denied_sudo_is_caught_everywhere() {
        let p = deny(&["sudo"]);
        for cmd in [
            "sudo ls",
            "bash -c 'sudo ls'",
            "sh -c \"sudo ls\"",
            "bash -lc 'echo hi; sudo ls'",
            "true & sudo ls",
            "true && sudo ls",
            "false || sudo ls",
            "true; sudo ls",
            "true\nsudo ls",
            "echo hi | sudo tee x",
            "/usr/bin/sudo ls",
            "'sudo' ls",
            "s\\udo ls",
            "\"su\"do ls",
            "env sudo ls",
            "env -i FOO=1 /usr/bin/sudo ls",
            "time sudo ls",
            "nohup sudo ls &",
            "nice -n 5 sudo ls",
            "timeout 5 sudo ls",
            "echo $(sudo ls)",
            "echo `sudo ls`",
            "x=$(sudo ls)",
            "(sudo ls)",
            "{ sudo ls; }",
            "if true; then sudo ls; fi",
            "for i in 1; do sudo ls; done",
            "f() { sudo ls; }; f",
            "cat <(sudo ls)",
            "eval sudo ls",
            "eval 'sudo ls'",
            "bash -c \"bash -c 'sudo ls'\"",
            "xargs sudo < /dev/null",
            "find . -exec sudo ls \\;",
            "echo ${x:-$(sudo ls)}",
            "cat <<EOF\n$(sudo ls)\nEOF\n",
            "env -S 'sudo ls'",
            "su -c 'sudo ls'",
            "command sudo ls",
            "exec sudo ls",
        ] {
            let result = p.check(cmd);
            assert!(result.is_err(), "not caught: {cmd:?}");
        }
        assert!(p.check("ls -la; echo pseudo sudo-free").is_ok());
        assert!(p.check("echo 'sudo is only text here'").is_ok());
    }

    #[test]
    fn unreadable_commands_are_refused() {
        let p = deny(&["sudo"]);
        for cmd in [
            "echo 'unterminated",
            "$CMD ls",
            "$(echo sudo) ls",
            "/usr/bin/su?o ls",
            "echo sudo ls | bash",
            "bash <<< 'sudo ls'",
        ] {
            assert!(p.check(cmd).is_err(), "allowed: {cmd:?}");
        }
    }

    #[test]
    fn allow_list_covers_every_command() {
        let p = allow(&["ls", "git status", "cat"]);
        assert!(p.check("ls -la && git status; cd src && cat x | cat").is_ok());
        assert!(p.check("git status --short").is_ok());
        let err = p.check("git push").expect_err("git push is not allowed");
        assert!(err.0.contains("allowed_commands"), "{}", err.0);
        assert!(p.check("ls $(rm -rf x)").is_err());
        assert!(p.check("bash -c ls").is_err(), "bash itself is not allowed");
    }

    #[test]
    fn deny_rules_with_arguments() {
        let p = deny(&["git push"]);
        assert!(p.check("git status").is_ok());
        assert!(p.check("git push origin").is_err());
        assert!(
            p.check("git \"$(echo push)\"").is_err(),
            "a run-time argument counts as a match"
        );
    }

    #[test]
    fn no_policy_means_no_parse() {
        let p = CommandPolicy::default();
        assert!(p.check("echo 'unterminated").is_ok());
    }
}
