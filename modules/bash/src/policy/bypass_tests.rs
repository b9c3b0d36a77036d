//! Adversarial tests: command lines an attacker would try against
//! `denied_commands = ["rm"]` and `allowed_commands`, one table per family
//! of issue #14, and the everyday commands the policy must still let through.

use super::CommandPolicy;

fn deny_rm() -> CommandPolicy {
    CommandPolicy::new(&[], &["rm".to_string()], true)
}

fn allow(list: &[&str]) -> CommandPolicy {
    let list: Vec<String> = list.iter().map(|s| s.to_string()).collect();
    CommandPolicy::new(&list, &[], true)
}

/// Every command must be refused, each with a reason.
fn all_refused(policy: &CommandPolicy, family: &str, cmds: &[&str]) {
    let passed: Vec<&str> = cmds
        .iter()
        .copied()
        .filter(|c| match policy.check(c) {
            Ok(()) => true,
            Err(d) => {
                assert!(d.0.len() > 20, "{family}: {c:?}: reason too thin: {}", d.0);
                false
            }
        })
        .collect();
    assert!(passed.is_empty(), "{family}: allowed {passed:#?}");
}

#[test]
fn builtins_that_execute() {
    all_refused(
        &deny_rm(),
        "builtins",
        &[
            "eval rm x",
            "eval 'rm x'",
            "command rm x",
            "command -p rm x",
            "command -- rm x",
            "exec rm x",
            "exec -a foo rm x",
            "exec -cla foo rm x",
            "builtin eval rm x",
            "hash -p /bin/rm ls; ls x",
            "hash -rp /bin/rm ls; ls x",
            "source f",
            ". f",
            "source <(echo rm x)",
            ". /dev/stdin <<< 'rm x'",
            "enable -f ./x.so rm",
            "mapfile -C rm -c 1 a < f",
            "readarray -tC 'rm' a < f",
            "trap -- 'rm x' EXIT",
            "trap 'rm x' EXIT",
            "compgen -C 'rm x' w",
            "coproc rm x",
            "alias l='rm x'",
            "set -o history; history -s 'rm x'; fc -s",
        ],
    );
}

#[test]
fn wrappers_with_options() {
    all_refused(
        &deny_rm(),
        "wrappers",
        &[
            "timeout -s KILL 5 rm x",
            "timeout -vs KILL 5 rm x",
            "timeout --sig KILL 5 rm x",
            "timeout -sKILL 5 rm x",
            "timeout --kill-after=1 5 rm x",
            "timeout -z 5 rm x",
            "timeout $T rm x",
            "env -S 'rm x'",
            "env -iS 'rm x'",
            "env -vS'rm x'",
            "env -S 'r\\m x'",
            "env -i rm x",
            "env -iu A rm x",
            "env - rm x",
            "env -C / A=1 rm x",
            "nice -n 5 rm x",
            "nice -5 rm x",
            "nice --adj 5 rm x",
            "stdbuf -o0 rm x",
            "stdbuf -oL -e 0 rm x",
            "xargs rm",
            "xargs -I{} rm {}",
            "xargs -0I {} rm {}",
            "echo rm | xargs -I{} {} x",
            "echo rm x | xargs env",
            "echo 5 rm x | xargs timeout",
            "xargs sh -c",
            "xargs -I{} sh -c '{}'",
            "find . -exec rm {} \\;",
            "find . -execdir rm {} +",
            "find . -ok rm {} \\;",
            "find . -okdir rm {} \\;",
            "find /bin -name rm -exec {} x \\;",
            "find . -exec sh -c '{}' \\;",
            "a=-exec; find . $a rm {} \\;",
            "flock f rm x",
            "flock -x f rm x",
            "flock -xc 'rm x' f",
            "flock f -c 'rm x'",
            "setsid -f rm x",
            "setsid -wf rm x",
            "chroot / rm x",
            "chroot --userspec=0:0 / rm x",
            "chroot / <<< 'rm x'",
            "ionice -c3 rm x",
            "ionice -c 3 -n 7 rm x",
            "taskset -c 0 rm x",
            "taskset 1 rm x",
            "chrt -f 1 rm x",
            "watch -n1 rm x",
            "watch -n 1 'rm x'",
            "watch -x rm x",
            "time -p rm x",
            "nohup rm x",
            "sudo rm x",
            "sudo -Eu root rm x",
            "sudo -s <<< 'rm x'",
            "sudo -i",
            "su -c 'rm x'",
            "su root -c 'rm x'",
            "su -s /bin/rm -c x root",
            "su root -- -c 'rm x'",
            "su",
            "script -qc 'rm x'",
            "unshare -r rm x",
            "busybox rm x",
        ],
    );
}

/// Programs that run a command and were missing from the wrapper tables
/// (the dynamic loader, `setarch` and its per-architecture names,
/// `start-stop-daemon`), `--` before `eval`'s words, and code in files a
/// wrapper reads (`xargs -a <(…)`).
#[test]
fn loaders_and_less_common_wrappers() {
    all_refused(
        &deny_rm(),
        "loaders and wrappers",
        &[
            "eval -- rm x",
            "eval -- 'rm x'",
            "builtin eval -- rm x",
            "builtin eval rm x",
            "builtin -- eval rm x",
            "builtin builtin eval -- rm x",
            "command eval -- rm x",
            "command builtin eval rm x",
            "exec -- rm x",
            "setarch x86_64 rm x",
            "setarch x86_64 -R rm x",
            "setarch x86_64 --addr-no-randomize rm x",
            "setarch -R rm x",
            "setarch x86_64 -- rm x",
            "setarch x86_64",
            "setarch x86_64 <<< 'rm x'",
            "linux64 rm x",
            "linux32 -3 rm x",
            "x86_64 rm x",
            "i386 rm x",
            "uname26 rm x",
            "/usr/bin/setarch $(uname -m) rm x",
            "/lib64/ld-linux-x86-64.so.2 /bin/rm x",
            "/lib/ld-linux-aarch64.so.1 /bin/rm x",
            "/lib/ld-musl-x86_64.so.1 /bin/rm x",
            "ld.so /bin/rm x",
            "/usr/bin/ld.so --library-path /lib /bin/rm x",
            "ld.so --preload y.so --argv0 ls /bin/rm x",
            "/lib64/ld-linux-x86-64.so.2 --list /bin/rm",
            "start-stop-daemon -S -x /bin/rm -- x",
            "start-stop-daemon --start --exec /bin/rm",
            "start-stop-daemon -S -a /bin/rm -- x",
            "/sbin/start-stop-daemon -Sx /bin/rm",
            "xargs -a <(rm x) echo",
            "xargs -a <(echo x) rm",
            "xargs --arg-file=<(echo x) rm",
            "xargs -a f rm",
            "[[ -v 'a[$(rm x)]' ]]",
            "[[ -v a[$(rm x)] ]]",
            "[[ -R 'a[$(rm x)]' ]]",
            "[[ ! -v 'a[$(rm x)]' ]]",
            "[[ -n x && -v 'a[`rm x`]' ]]",
            "x='a[$(rm x)]'; [[ -v $x ]]",
            "[ -v 'a[$(rm x)]' ]",
            "nice -- rm x",
            "nohup -- rm x",
            "timeout -- 5 rm x",
            "stdbuf -o0 -- rm x",
            "setsid -- rm x",
            "taskset -- 1 rm x",
            "ionice -- rm x",
            "chroot -- / rm x",
            "flock -- f rm x",
            "env -- rm x",
            "env -S'rm x' --",
            "nsenter -t 1 rm x",
            "parallel rm ::: x",
            "watch -- rm x",
            "busybox sh -c 'rm x'",
            "busybox env rm x",
            "find . -exec busybox rm {} \\;",
            "bash -c -- 'rm x'",
            "sh -ec 'rm x'",
            "time -- rm x",
            "time -p -- rm x",
            "command -- eval -- rm x",
            "builtin -- eval -- rm x",
            "nice -n1 -- eval -- rm x",
            "env -S 'eval -- rm x'",
            "busybox setarch x86_64 rm x",
            "find . -exec setarch x86_64 rm {} \\;",
            "find . -execdir /lib64/ld-linux-x86-64.so.2 /bin/rm {} +",
            "ld.so /bin/sh -c 'rm x'",
            "setarch x86_64 -R bash <<< 'rm x'",
            "xargs -a <(echo x) -- rm",
            "[[ x -eq 'a[$(rm x)]' ]]",
        ],
    );
}

/// `env -S` reads its string as more of its own arguments (options and
/// assignments included); `env` takes any word with `=` for an assignment;
/// `BASH_FUNC_*` entries define functions in the bash it starts; bash's
/// own integer variables evaluate what they are given; `jobs -x` runs a
/// command; and launchers outside the wrapper table.
#[test]
fn split_strings_assignments_and_integer_variables() {
    all_refused(
        &deny_rm(),
        "env, integers, launchers",
        &[
            "env -S '-i rm x'",
            "env -S '-u X rm x'",
            "env -S '-- rm x'",
            "env -S '-C / rm x'",
            "env --split-string='-i rm x'",
            "env -S '-S rm x'",
            "env -S '-i' rm x",
            "env -S 'x' -S 'rm x'",
            "env -S \"'-i' rm x\"",
            "env 'A-B=1' rm x",
            "env '1=1' rm x",
            "env -i 'x y=1' rm x",
            "sudo 'A-B=1' rm x",
            "env 'BASH_FUNC_ls%%=() { rm x; }' bash -c ls",
            "sudo 'BASH_FUNC_ls%%=() { rm x; }' bash -c ls",
            "jobs -x rm x",
            "jobs -lx rm x",
            "RANDOM='a[$(rm x)]'",
            "SRANDOM='a[$(rm x)]'",
            "OPTIND='a[$(rm x)]'",
            "HISTCMD='a[$(rm x)]'",
            "OPTIND='a[$(rm x)]'; echo $((OPTIND))",
            "PIPESTATUS='a[$(rm x)]'; echo $((PIPESTATUS))",
            "read OPTIND < f; echo $((OPTIND))",
            "read RANDOM < f",
            "printf -v OPTIND %s 'a[$(rm x)]'",
            "for RANDOM in 'a[$(rm x)]'; do :; done",
            "declare -i v; read v < f",
            "declare -i v; printf -v v %s 'a[$(rm x)]'",
            "declare -i v; for v in 'a[$(rm x)]'; do :; done",
            "declare -i v; mapfile v < f",
            "cttyhack rm x",
            "busybox cttyhack rm x",
            "openvt -s -w rm x",
            "tcpsvd 0 1234 rm x",
            "busybox inotifyd rm x",
            "chronic rm x",
            "ifne rm x",
            "lckdo l rm x",
            "pee 'rm x'",
            "mispipe true 'rm x'",
            "rlwrap rm x",
            "gosu root rm x",
            "su-exec root rm x",
            "sshpass -p x rm x",
            "execlineb -c 'rm x'",
            "tmux new-session -d 'rm x'",
            "screen -dm rm x",
            "dtach -n s rm x",
            "xterm -e rm x",
            "entr rm x",
            "systemd-nspawn rm x",
            "flatpak-spawn rm x",
            "hwloc-bind 0 rm x",
        ],
    );
    let p = deny_rm();
    for ok in [
        "env -S 'echo hi'",
        "env -S 'A=1 printenv A'",
        "env -iS 'PATH=/bin ls -l'",
        "env 'LANG=C.UTF-8' sort f",
        "jobs -l",
        "RANDOM=42; echo $((RANDOM % 6))",
        "OPTIND=1; while getopts ab o; do :; done; echo $((OPTIND))",
        "echo $((OPTIND + 1))",
    ] {
        assert!(p.check(ok).is_ok(), "{ok}: {:?}", p.check(ok));
    }
}

#[test]
fn shells_reading_code_from_elsewhere() {
    all_refused(
        &deny_rm(),
        "shells",
        &[
            "bash < f",
            "bash <<< 'rm x'",
            "bash <<EOF\nrm x\nEOF\n",
            "sh <<'EOF'\nrm x\nEOF\n",
            "bash <(echo rm x)",
            "cat f | sh",
            "echo 'rm x' | bash -s",
            "sh -s < f",
            "bash -i < f",
            "bash f.sh",
            "bash /dev/stdin <<< 'rm x'",
            "bash -- f",
            "bash -eo pipefail -c 'rm x'",
            "bash -c \"$(echo rm x)\"",
            "bash -c '$0 x' rm",
            "BASH_ENV=f bash -c ls",
            "env BASH_ENV=f bash -c ls",
            "export BASH_ENV=f; bash -c ls",
            "ENV=f sh -c ls",
            "SHELL=/bin/rm script -qc x",
            "cat <(rm x)",
            "tee >(rm x) < /dev/null",
        ],
    );
}

#[test]
fn arithmetic_and_evaluated_names() {
    all_refused(
        &deny_rm(),
        "arithmetic",
        &[
            "echo $(( $(rm x) ))",
            "(( $(rm x) ))",
            "let 'x=$(rm y)'",
            "[[ $(rm x) -eq 1 ]]",
            "echo ${x:$(rm y)}",
            "echo $[ $(rm x) ]",
            "echo $[x]",
            "a[$(rm x)]=1",
            "x='a[$(rm y)]'; echo $((x))",
            "x='a[$(rm y)]'; echo $(($x))",
            "x='a[$(rm y)]'; ((x))",
            "x='a[$(rm y)]'; let x",
            "x='a[$(rm y)]'; [[ $x -eq 1 ]]",
            "x='a[$(rm y)]'; echo ${s:x}",
            "x='a[$(rm y)]'; echo ${s:0:x}",
            "x='a[$(rm y)]'; echo ${a[x]}",
            "x='a[$(rm y)]'; echo ${a[$x]}",
            "x='a[$(rm y)]'; declare -i y=x",
            "x='a[$(rm y)]'; declare -i y; y=$x",
            "x='a[$(rm y)]'; for ((i=x;0;)); do :; done",
            "x=1; x='a[$(rm y)]'; echo $((x))",
            "x=1; read x < f; echo $((x))",
            "x=1; env x='a[$(rm y)]' bash -c 'echo $((x))'",
            "x=1; env 'x=a[$(rm y)]' bash -c 'echo $((x))'",
            "x=1; sudo 'x=a[$(rm y)]' bash -c 'echo $((x))'",
            "x=$(cat f); echo $((x + 1))",
            "for x in 'a[$(rm y)]'; do echo $((x)); done",
            "echo 'a[$(rm y)]' >/dev/null; : $((_))",
            "set -- 'a[$(rm x)]'; : $(($1))",
            "f() { echo $(( $1 + 1 )); }; f 'a[$(rm x)]'",
            "echo ${x:='a[$(rm y)]'} $((x))",
            "declare -n r=x; x=1; r='a[$(rm y)]'; echo $((x))",
            "v=PS4; declare -n r=$v; r='$(rm y)'; set -x; :",
            "declare -n r; r=PS4; r='$(rm y)'; set -x; :",
            "local -n r=\"$1\"",
            "r='a[$(rm y)]'; echo ${!r}",
            "x='$(rm y)'; echo ${x@P}",
            "printf -v 'a[$(rm y)]' %s 1",
            "printf -v \"$n\" %s 1",
            "read 'a[$(rm y)]' <<< 1",
            "read -a 'a[$(rm y)]' <<< 1",
            "declare 'a[$(rm y)]=1'",
            "test -v 'a[$(rm y)]'",
            "[ -v 'a[$(rm y)]' ]",
            "PS4='$(rm y)'; set -x; :",
            "export PS4='$(rm y)'",
            "read PS4 < f; set -x; :",
            "PROMPT_COMMAND='rm x' bash -i",
        ],
    );
}

/// With an allow-list, builtins that execute code are commands like any
/// other, and builtin-only command lines cannot run code.
#[test]
fn allow_list_counts_executing_builtins_as_commands() {
    let p = allow(&["ls", "cat"]);
    all_refused(
        &p,
        "allow-list",
        &[
            "eval ls",
            "command ls",
            "builtin cd .",
            "exec ls",
            "source f",
            ". f",
            "trap 'ls' EXIT",
            "hash -p /bin/rm ls; ls",
            "let x=1",
            "compgen -C ls w",
            "x='a[$(rm y)]'; echo $((x))",
            "x='a[$(rm y)]'; [[ $x -eq 1 ]]",
            "PS4='$(rm y)'; set -x; :",
            "read 'a[$(rm y)]' <<< 1",
            "printf -v 'a[$(rm y)]' %s 1",
            "declare 'a[$(rm y)]=1'",
            "test -v 'a[$(rm y)]'",
            "[[ -v 'a[$(rm y)]' ]]",
            "[[ -R 'a[$(rm y)]' ]] || ls",
            "time -p -- rm y",
            "eval -- rm y",
            "ls | xargs rm",
            "find . -exec rm {} +",
            "timeout 5 rm x",
            "ls $(rm x)",
        ],
    );
    for ok in [
        "ls -la && cat f | cat",
        "cd src && ls",
        "n=3; echo $((n + 1))",
        "[ -f x ] && cat x",
        "test -d x || echo no",
    ] {
        assert!(p.check(ok).is_ok(), "{ok}: {:?}", p.check(ok));
    }
}

/// The hardening must not refuse what agents run every day.
#[test]
fn everyday_commands_still_pass() {
    let p = deny_rm();
    let refused: Vec<(&str, String)> = [
        "ls -la",
        "cargo build --release 2>&1 | tail -20",
        "git status && git diff --stat",
        "cd src && grep -rn 'fn main' .",
        "for f in *.rs; do wc -l \"$f\"; done",
        "find . -name '*.rs' -type f | head",
        "find . -name '*.o' -exec ls -l {} \\;",
        "x=$(wc -l < f); echo $x",
        "for ((i=0;i<3;i++)); do echo $i; done",
        "n=5; echo $((n*2))",
        "echo $((RANDOM % 6))",
        "i=0; while ((i<3)); do ((i++)); done",
        "timeout 10 cargo test",
        "timeout -s KILL 10 cargo test",
        "env RUST_LOG=debug cargo run",
        "nice -n 10 make -j2",
        "echo hi | xargs -n1 echo",
        "xargs -I{} echo {} < f",
        "cat <<EOF > f\nhello $USER\nEOF\n",
        "bash -c 'echo hi'",
        "bash -euo pipefail -c 'ls | wc -l'",
        "sudo -u nobody ls",
        "[ -f x ] && echo y",
        "[[ -n $x && $y == z ]]",
        "[[ $# -eq 0 ]] && echo none",
        "export FOO=bar; echo $FOO",
        "read -r line < f; echo \"$line\"",
        "echo ${#arr[@]} ${#s}",
        "echo \"${HOME}/x\"",
        "declare -a arr=(1 2 3); echo ${arr[0]}",
        "local_var=1; echo $((local_var + 1))",
        "set -euo pipefail; ls",
        "trap 'echo bye' EXIT; ls",
        "command -v cargo",
        "printf '%s\\n' a b",
        "s=abc; echo ${s:1:2}",
        "time ls",
        "exec 3>&1",
        "stdbuf -oL tail -n1 log",
        "watch -n 1 ls",
        "flock /tmp/l ls",
        "a=(x y); for i in \"${a[@]}\"; do echo $i; done",
        "printf -v out '%s' hi; echo $out",
        "echo '$(rm x) is only text'",
        "[[ -v HOME ]] && echo set",
        "[[ -v 'arr[0]' ]]",
        "diff <(ls a) <(ls b)",
        "xargs -a f echo",
        "eval -- echo hi",
        "setarch x86_64 -R ./prog",
    ]
    .into_iter()
    .filter_map(|c| p.check(c).err().map(|d| (c, d.0)))
    .collect();
    assert!(refused.is_empty(), "refused: {refused:#?}");
}

/// Any text at all gets an answer, never a panic: the policy reads input
/// the model wrote.
#[test]
fn any_text_gets_an_answer() {
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    let cases = if std::env::var("TOOLHOST_LONG_TESTS").as_deref() == Ok("1") {
        20_000
    } else {
        2_000
    };
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &[20; 32]));
    let policy = deny_rm();
    let text = "[a-z0-9 $(){}\\[\\]'\"`;|&<>=#!*?~@%+:,.\\\\/\n\t-]{0,60}|\\PC{0,30}";
    runner
        .run(&text, |cmd| {
            let _ = policy.check(&cmd);
            Ok(())
        })
        .expect("no panic");
}
