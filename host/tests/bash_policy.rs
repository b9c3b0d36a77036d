//! The bash command policy end to end, through the host and the real
//! cdylib: each bypass family of issue #14 really runs the denied program
//! on this machine's bash when no policy is set, and is refused, with
//! nothing run, when it is.

mod common;

use std::path::Path;

use common::{module_file, InProcess};
use serde_json::json;
use toolhost_core::Status;

/// Command lines that run `touch {f}` while naming `touch` only in ways a
/// name-matching rule would miss. `{f}` is replaced by a fresh file name.
const BYPASSES: &[&str] = &[
    // builtins that execute
    "eval 'touch {f}'",
    "command touch {f}",
    "(exec -a x touch {f})",
    "builtin eval 'touch {f}'",
    "hash -p /usr/bin/touch ls; ls {f}",
    "echo 'touch {f}' > s1.sh; source s1.sh",
    "echo 'touch {f}' > s2.sh; . ./s2.sh",
    "trap -- 'touch {f}' EXIT",
    "compgen -C 'touch {f}' w",
    "coproc touch {f}; wait",
    // wrappers with options
    "timeout -vs KILL 5 touch {f}",
    "timeout --sig KILL 5 touch {f}",
    "env -iS'touch {f}'",
    "env -iu HOME touch {f}",
    "nice -n 5 touch {f}",
    "stdbuf -oL -e0 touch {f}",
    "echo {f} | xargs -I{} touch {}",
    "echo touch {f} | xargs env",
    "printf {f} | xargs -0I {} touch {}",
    "find . -maxdepth 0 -exec touch {f} \\;",
    "find . -maxdepth 0 -execdir touch {f} \\;",
    "flock lock touch {f}",
    "flock -x lock -c 'touch {f}'",
    "setsid -w touch {f}",
    "ionice -c3 touch {f}",
    "taskset -c 0 touch {f}",
    // launchers, `--` before eval's words, a wrapper's file argument
    "eval -- touch {f}",
    "builtin eval -- touch {f}",
    "setarch x86_64 touch {f}",
    "setarch x86_64 -R touch {f}",
    "linux64 touch {f}",
    "/lib64/ld-linux-x86-64.so.2 /usr/bin/touch {f}",
    "ld.so --argv0 ls /usr/bin/touch {f}",
    "/usr/sbin/start-stop-daemon -S -x /usr/bin/touch -- \"$PWD/{f}\"",
    "xargs -a <(echo {f}) touch",
    "time -p -- touch {f}",
    // env's split string read as its own options, words with `=` taken as
    // assignments, functions imported from the environment, `jobs -x`
    "env -S '-i touch {f}'",
    "env -S '-u HOME' touch {f}",
    "env 'A-B=1' touch {f}",
    "env 'BASH_FUNC_ls%%=() { touch {f}; }' bash -c ls",
    "jobs -x touch {f}",
    // bash's integer variables evaluate what they are given
    "RANDOM='a[$(touch {f})]'",
    "OPTIND='a[$(touch {f})]'; : $((OPTIND))",
    "declare -i v; read v <<< 'a[$(touch {f})]'",
    // shells fed code from elsewhere
    "bash <<< 'touch {f}'",
    "echo 'touch {f}' | sh",
    "bash <(echo 'touch {f}')",
    "sh <<EOF\ntouch {f}\nEOF\n",
    "echo 'touch {f}' > s3.sh; bash s3.sh",
    "bash -eo pipefail -c 'touch {f}'",
    // arithmetic and evaluated names
    "x='a[$(touch {f})]'; echo $((x))",
    "x='a[$(touch {f})]'; [[ $x -eq 1 ]]",
    "x='a[$(touch {f})]'; s=abc; echo ${s:x}",
    "x=$(printf 'a[\\x24(touch {f})]'); : $((x))",
    "x=1; env 'x=a[$(touch {f})]' bash -c ': $((x))'",
    "r='a[$(touch {f})]'; echo ${!r}",
    "x='$(touch {f})'; echo ${x@P}",
    "printf -v 'a[$(touch {f})]' %s 1",
    "read 'a[$(touch {f})]' <<< 1",
    "declare 'a[$(touch {f})]=1'",
    "test -v 'a[$(touch {f})]'",
    "[[ -v 'a[$(touch {f})]' ]]",
    "PS4='$(touch {f})'; set -x; :",
    "v=PS4; declare -n r=$v; r='$(touch {f})'; set -x; :",
    "declare -n r; r=PS4; r='$(touch {f})'; set -x; :",
];

fn host(dir: &Path, config: &str) -> InProcess {
    module_file("toolhost_bash");
    InProcess::with_host(
        &format!("working_dir = {:?}", dir.display().to_string()),
        &format!("[[tools]]\nmodule = \"bash\"\n[tools.config]\n{config}\n"),
    )
}

#[test]
fn every_bypass_runs_without_the_policy_and_is_refused_with_it() {
    let open_dir = tempfile::tempdir().expect("tempdir");
    let guarded_dir = tempfile::tempdir().expect("tempdir");
    let open = host(open_dir.path(), "");
    let guarded = host(guarded_dir.path(), "denied_commands = [\"touch\"]");
    let mut not_real = Vec::new();
    let mut got_through = Vec::new();
    for (i, template) in BYPASSES.iter().enumerate() {
        let f = format!("ran-{i}");
        let cmd = template.replace("{f}", &f);
        open.call("bash", json!({"command": cmd, "timeout": 20}));
        if !open_dir.path().join(&f).exists() {
            not_real.push(cmd.clone());
        }
        let r = guarded.call("bash", json!({"command": cmd, "timeout": 20}));
        let message = r.error.as_ref().map(|e| e.message.clone()).unwrap_or_default();
        if r.status != Status::PolicyDenied || message.len() < 20 || guarded_dir.path().join(&f).exists() {
            got_through.push(format!("{cmd}: {:?} {message}", r.status));
        }
    }
    assert!(
        not_real.is_empty(),
        "these do not run touch without a policy (the test is wrong): {not_real:#?}"
    );
    assert!(got_through.is_empty(), "not refused, or ran: {got_through:#?}");
}

/// With `allowed_commands`, builtin-only command lines that run code are
/// refused, executing builtins count as commands, and listed ones still run.
#[test]
fn an_allow_list_runs_only_listed_commands() {
    let dir = tempfile::tempdir().expect("tempdir");
    let guarded = host(dir.path(), "allowed_commands = [\"ls\"]");
    for (i, template) in [
        "x='a[$(touch {f})]'; echo $((x))",
        "PS4='$(touch {f})'; set -x; :",
        "v=PS4; declare -n r=$v; r='$(touch {f})'; set -x; :",
        "declare -n r; r=PS4; r='$(touch {f})'; set -x; :",
        "read 'a[$(touch {f})]' <<< 1",
        "[[ -v 'a[$(touch {f})]' ]]",
        "eval 'ls {f}'",
        "command ls",
        "trap 'ls' EXIT",
        "ls | xargs touch",
    ]
    .iter()
    .enumerate()
    {
        let f = format!("ran-{i}");
        let cmd = template.replace("{f}", &f);
        let r = guarded.call("bash", json!({"command": cmd}));
        assert_eq!(r.status, Status::PolicyDenied, "{cmd}: {r:?}");
        assert!(!dir.path().join(&f).exists(), "{cmd} ran");
    }
    let r = guarded.call(
        "bash",
        json!({"command": "n=2; echo $((n + 1)) && cd . && ls -a"}),
    );
    assert_eq!(r.status, Status::Success, "{r:?}");
    assert!(
        r.output["stdout"].as_str().unwrap_or("").starts_with("3\n"),
        "{r:?}"
    );
}
