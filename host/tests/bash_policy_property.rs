//! Property test of the bash command policy against real execution: for
//! generated command lines (wrappers, shells, substitutions, builtins that
//! execute, arithmetic, here-strings, name obfuscations…), a command the
//! policy lets through never runs a denied program. The denied programs are
//! logging shims on PATH, so "ran" is observed, not inferred.
//!
//! CI runs a fixed seed and a bounded case count; `TOOLHOST_LONG_TESTS=1`
//! (`cargo xtask test --long`) runs many more cases.

mod common;

use std::cell::Cell;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::{module_file, InProcess};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use serde_json::json;
use toolhost_core::Status;

/// Denied by the plan; each exists only as a shim that logs its run.
const DENIED: &[&str] = &["zap", "nuke"];
/// Allowed shim, to see that allowed commands do run.
const ALLOWED: &str = "safe";

/// Case counts: bounded in CI, large under `TOOLHOST_LONG_TESTS=1`.
fn cases() -> u32 {
    if std::env::var("TOOLHOST_LONG_TESTS").as_deref() == Ok("1") {
        5000
    } else {
        256
    }
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Ways to name a program on a command line.
fn name() -> impl Strategy<Value = String> {
    let program = prop::sample::select(vec![
        "zap", "nuke", "safe", "safe", "safe", "echo", "echo", "true",
    ]);
    (program, 0..14usize).prop_map(|(p, form)| match form {
        0 => format!("'{p}'"),
        1 => format!("\"{}\"{}", &p[..1], &p[1..]),
        2 => format!("{}\\{}", &p[..1], &p[1..]),
        3 => format!("shims/{p}"),
        4 => format!("$(echo {p})"),
        5 => format!("${{N:-{p}}}"),
        6 => format!("{{{p},}}"),
        _ => p.to_string(),
    })
}

/// A simple command: a name and an argument.
fn simple() -> impl Strategy<Value = String> {
    (name(), prop::sample::select(vec!["a", "-x", "\"b c\"", "$HOME"])).prop_map(|(n, a)| format!("{n} {a}"))
}

/// Prefixes that run the command after them.
fn wrapper() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "env ",
        "env -i ",
        "env -u HOME ",
        "env A=1 ",
        "timeout 5 ",
        "timeout -s KILL 5 ",
        "timeout -vs KILL 5 ",
        "timeout --sig=KILL 5 ",
        "nice -n 1 ",
        "nice -1 ",
        "nohup ",
        "command ",
        "builtin ",
        "stdbuf -o0 ",
        "stdbuf -oL -e0 ",
        "setarch x86_64 ",
        "linux64 -R ",
        "setsid -w ",
        "flock lock ",
        "time ",
        "taskset -c 0 ",
        "ionice -c3 ",
        "exec ",
        "eval ",
        "eval -- ",
        "coproc ",
        "echo x | xargs ",
        "echo x | xargs -I{} ",
        "find . -maxdepth 0 -exec ",
    ])
}

/// A command line built from smaller ones.
fn command() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        24 => simple(),
        1 => Just("hash -p shims/zap safe; safe a".to_string()),
        1 => Just("PS4='$(zap a)'; set -x; :".to_string()),
        1 => Just("N=zap; $N a".to_string()),
        1 => Just("echo zap a | xargs".to_string()),
        1 => Just("echo zap | xargs -I{} {} a".to_string()),
        1 => Just("x='a[$(zap a)]'; echo $((x))".to_string()),
        1 => Just("declare -i y; x='a[$(nuke)]'; y=x".to_string()),
        1 => Just("[[ -v 'a[$(zap a)]' ]]".to_string()),
        1 => Just("xargs -a <(echo a) zap".to_string()),
    ];
    leaf.prop_recursive(3, 24, 2, |inner| {
        prop_oneof![
            (wrapper(), inner.clone()).prop_map(|(w, c)| {
                match w {
                    "exec " | "coproc " => format!("( {w}{c} ); wait"),
                    "find . -maxdepth 0 -exec " => format!("{w}sh -c {} \\;", quote(&c)),
                    "eval " => format!("eval {}", quote(&c)),
                    "eval -- " => format!("eval -- {}", quote(&c)),
                    _ => format!("{w}{c}"),
                }
            }),
            (inner.clone(), inner.clone(), 0..4usize).prop_map(|(a, b, op)| {
                let op = ["; ", " && ", " || ", " | "][op];
                format!("{a}{op}{b}")
            }),
            (inner.clone(), 0..24usize).prop_map(|(c, form)| match form {
                0 => format!("( {c} )"),
                1 => format!("{{ {c}; }}"),
                2 => format!("if true; then {c}; fi"),
                3 => format!("for i in 1; do {c}; done"),
                4 => format!("f() {{ {c}; }}; f"),
                5 => format!("echo $( {c} )"),
                6 => format!("bash -c {}", quote(&c)),
                7 => format!("sh -c {}", quote(&c)),
                8 => format!("{c} & wait"),
                9 => format!("cat <( {c} )"),
                10 => format!("bash <<< {}", quote(&c)),
                11 => format!("echo {} | bash", quote(&c)),
                12 => format!("x=$( {c} ); echo \"$x\""),
                13 => format!("trap {} EXIT", quote(&c)),
                14 => format!(": $(( $( {c} ) ))"),
                15 => format!("source <(echo {})", quote(&c)),
                16..=19 => format!("bash -c {}", quote(&c)),
                _ => format!("echo $( {c} )"),
            }),
        ]
    })
}

fn shim(dir: &Path, name: &str, log: &Path) {
    let path = dir.join(name);
    let body = format!("#!/bin/sh\necho {name} \"$@\" >> '{}'\n", log.display());
    fs::write(&path, body).expect("write shim");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod shim");
}

#[test]
fn an_allowed_command_never_runs_a_denied_program() {
    module_file("toolhost_bash");
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let shims = root.join("shims");
    fs::create_dir(&shims).expect("shims dir");
    let log = root.join("ran.log");
    for name in DENIED.iter().chain([&ALLOWED]) {
        shim(&shims, name, &log);
    }
    let denied: Vec<String> = DENIED.iter().map(|d| format!("{d:?}")).collect();
    let plan = format!(
        "[[tools]]\nmodule = \"bash\"\n[tools.config]\ndenied_commands = [{}]\nenv_set = {{ PATH = {:?} }}\n",
        denied.join(", "),
        format!("{}:/usr/bin:/bin", shims.display()),
    );
    let host = InProcess::with_host(&format!("working_dir = {:?}", root.display().to_string()), &plan);

    let ran_allowed = Cell::new(0u32);
    let refused = Cell::new(0u32);
    let config = Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &[14; 32]));
    let outcome = runner.run(&command(), |cmd| {
        fs::write(&log, "").map_err(|e| TestCaseError::fail(e.to_string()))?;
        let result = host.call("bash", json!({"command": cmd, "timeout": 20}));
        let ran = fs::read_to_string(&log).unwrap_or_default();
        if result.status == Status::PolicyDenied {
            refused.set(refused.get() + 1);
            prop_assert!(ran.is_empty(), "a refused command ran: {cmd:?}\n{ran}");
            return Ok(());
        }
        prop_assert!(
            !matches!(result.status, Status::ValidationError | Status::Timeout),
            "{cmd:?}: {:?}",
            result
        );
        for line in ran.lines() {
            let program = line.split_whitespace().next().unwrap_or("");
            prop_assert!(
                !DENIED.contains(&program),
                "the policy allowed {cmd:?}, and it ran the denied `{program}`:\n{ran}"
            );
        }
        if ran.lines().any(|l| l.starts_with(ALLOWED)) {
            ran_allowed.set(ran_allowed.get() + 1);
        }
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
    // Not vacuous: some commands were refused, and some allowed ones ran a shim.
    assert!(refused.get() > 0, "nothing was refused");
    assert!(ran_allowed.get() > 0, "no allowed command ran the allowed shim");
    eprintln!(
        "{} cases: {} refused, {} allowed ones ran `{ALLOWED}`",
        cases(),
        refused.get(),
        ran_allowed.get()
    );
}
