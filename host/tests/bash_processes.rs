//! The processes behind a call (the zygote, the reaper, the command's tree)
//! against a hostile command or concurrent callers: what the host and the
//! zygote hold, when a tree counts as ended (DONE), what reaches the host,
//! what is left at unmount. Each test is bounded; the ones that inspect the
//! zygote hold one lock, so that the zygotes of tests running beside them
//! are never mistaken for theirs.

mod common;

use std::time::{Duration, Instant};

use common::procs::{exe, fd_count, fd_targets, is_alive, lock, the_zygote};
use common::InProcess;
use serde_json::Value;

fn stdout(r: &Value) -> &str {
    r["output"]["stdout"].as_str().unwrap_or("")
}

fn ok(p: &InProcess, command: &str) -> String {
    let r = p.run(command);
    assert_eq!(r["status"], "success", "`{command}`: {r}");
    stdout(&r).to_string()
}

/// No fd leaks in the host or the zygote across many calls.
#[test]
fn fds_of_the_host_and_the_zygote_stay_flat_over_200_calls() {
    let _l = lock();
    let p = InProcess::bash("sandbox = \"off\"");
    for _ in 0..5 {
        ok(&p, "true");
    }
    let me = std::process::id() as i32;
    let zygote = the_zygote();
    let host_before = fd_count(me);
    let zygote_before = fd_targets(zygote);
    for i in 0..200 {
        let command = match i % 4 {
            0 => "true",
            1 => "echo out; echo err >&2",
            2 => "sleep 0.01 & exit 3",
            _ => "(setsid sleep 5 &) ; echo x",
        };
        let _ = p.run(command);
    }
    assert_eq!(the_zygote(), zygote, "the zygote was replaced");
    assert_eq!(fd_targets(zygote), zygote_before, "the zygote's fds changed");
    let host_after = fd_count(me);
    assert!(
        host_after <= host_before + 2,
        "the host went from {host_before} to {host_after} fds over 200 calls"
    );
    p.host.shutdown();
}

/// fds the host holds without close-on-exec when the zygote starts (low
/// numbers the reaper's slots use, and high ones) reach neither the
/// zygote nor a command; a reader of such a pipe sees EOF as soon as the
/// host closes its end.
#[test]
fn inherited_fds_reach_neither_the_zygote_nor_a_command() {
    let _l = lock();
    let p = InProcess::bash("sandbox = \"off\"");
    let mut pipes = Vec::new();
    for _ in 0..8 {
        let mut fds = [0; 2];
        // SAFETY: pipe(2) into a local array (no O_CLOEXEC on purpose).
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        pipes.push(fds);
    }
    // One at a high number too.
    // SAFETY: fcntl on our own fd; the duplicate has no close-on-exec.
    let high = unsafe { libc::fcntl(pipes[0][1], libc::F_DUPFD, 900) };
    assert!(high >= 900);
    let mine: Vec<String> = pipes
        .iter()
        .flat_map(|f| f.iter())
        .chain(std::iter::once(&high))
        .map(|fd| {
            std::fs::read_link(format!("/proc/self/fd/{fd}"))
                .unwrap()
                .display()
                .to_string()
        })
        .collect();
    let r = p.run("ls -l /proc/$$/fd | awk '{print $NF}' | grep pipe | tr '\\n' ' '; echo");
    let seen = stdout(&r).to_string();
    let zygote = the_zygote();
    let held = fd_targets(zygote);
    for m in &mine {
        assert!(
            !held.iter().any(|h| h.ends_with(&format!("->{m}"))),
            "the zygote {zygote} holds the host's {m}: {held:?}"
        );
    }
    for m in &mine {
        assert!(
            !seen.contains(m.as_str()),
            "the command holds the host's {m}: {seen}"
        );
    }
    // SAFETY: closing our own fds.
    unsafe {
        for f in &pipes {
            libc::close(f[1]);
        }
        libc::close(high);
    }
    let mut buf = [0u8; 1];
    for f in &pipes {
        // SAFETY: a non-blocking read on our own fd.
        unsafe { libc::fcntl(f[0], libc::F_SETFL, libc::O_NONBLOCK) };
        // SAFETY: reading one byte into a local buffer.
        let n = unsafe { libc::read(f[0], buf.as_mut_ptr().cast(), 1) };
        assert_eq!(n, 0, "a write end is still held somewhere (read gave {n})");
        // SAFETY: closing our own fd.
        unsafe { libc::close(f[0]) };
    }
    p.host.shutdown();
}

/// Concurrent callers sharing the one zygote: every call gets its own
/// command's output and exit code.
#[test]
fn concurrent_callers_each_get_their_own_command() {
    let _l = lock();
    let p = std::sync::Arc::new(InProcess::bash("sandbox = \"off\"\nmax_concurrent = 8"));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let p = p.clone();
            std::thread::spawn(move || {
                for i in 0..40 {
                    let code = (t * 40 + i) % 7;
                    let r = p.run(&format!("echo t{t}-{i}; exit {code}"));
                    assert_eq!(stdout(&r), format!("t{t}-{i}\n"), "{r}");
                    let got = r["output"]["exit_code"]
                        .as_i64()
                        .or(r["error"]["details"]["exit_code"].as_i64());
                    let whole = r.to_string();
                    assert!(
                        got == Some(code as i64) || whole.contains(&format!("\"exit_code\":{code}")),
                        "exit {code} misreported: {r}"
                    );
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a caller failed");
    }
    p.host.shutdown();
}

/// The same with the sandbox on (fresh namespaces, a temp folder and a
/// pids cgroup per call).
#[test]
fn sandbox_concurrent_callers_each_get_their_own_command() {
    let _l = lock();
    let p = std::sync::Arc::new(InProcess::bash(
        "max_concurrent = 8\nrlimits = { processes = 64 }",
    ));
    let threads: Vec<_> = (0..3)
        .map(|t| {
            let p = p.clone();
            std::thread::spawn(move || {
                for i in 0..15 {
                    let r = p.run(&format!("echo t{t}-{i} > $TMPDIR/x; cat $TMPDIR/x; echo $$"));
                    let out = stdout(&r);
                    assert!(out.starts_with(&format!("t{t}-{i}\n")), "{r}");
                    // The shell is PID 2 of its own namespace (the reaper is 1).
                    assert!(out.ends_with("\n2\n") || out.ends_with("\n1\n"), "{r}");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a caller failed");
    }
    p.host.shutdown();
}

/// Unmount with the zygote stopped by a command, alone or with its whole
/// process group: nothing is left behind, and unmount does not wait out
/// the stopped zygote.
#[test]
fn unmount_with_a_stopped_zygote_leaves_no_process() {
    let _l = lock();
    for target in ["$z", "-$z"] {
        let p = InProcess::bash("sandbox = \"off\"");
        // The command's reaper is its parent, the zygote the reaper's
        // (the reapers have their own process groups).
        let out = ok(
            &p,
            &format!("z=$(awk '{{print $4}}' /proc/$PPID/stat); kill -STOP {target} && echo zygote=$z"),
        );
        let zygote: i32 = out
            .trim()
            .strip_prefix("zygote=")
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("{out}"));
        assert_eq!(zygote, the_zygote(), "{out}");
        let started = Instant::now();
        p.host.shutdown();
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "shutdown took {:?}",
            started.elapsed()
        );
        drop(p);
        let end = Instant::now() + Duration::from_secs(5);
        while is_alive(zygote) {
            assert!(
                Instant::now() < end,
                "the zygote {zygote} ({}) outlived its mount (kill -STOP {target})",
                exe(zygote)
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// DONE is written only once every process of the tree is gone: leftovers
/// that ignore SIGTERM, double-forked and setsid'd, never write after the
/// call returned.
#[test]
fn nothing_of_the_tree_runs_after_the_call_returns() {
    let _l = lock();
    let p = InProcess::bash("sandbox = \"off\"\nkill_grace_ms = 200");
    let dir = p.path().join("late");
    std::fs::create_dir(&dir).expect("mkdir");
    for round in 0..5 {
        let r = p.run(&format!(
            "for i in $(seq 20); do (setsid sh -c 'trap \"\" TERM HUP; sleep 0.6; touch {d}/r{round}-$i' &) ; \
             sh -c 'trap \"\" TERM; sleep 0.6; touch {d}/c{round}-$i' & done; echo spawned",
            d = dir.display()
        ));
        assert_eq!(stdout(&r), "spawned\n", "{r}");
    }
    std::thread::sleep(Duration::from_millis(1200));
    let late: Vec<_> = std::fs::read_dir(&dir)
        .expect("read")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(late.is_empty(), "processes of finished calls ran on: {late:?}");
    p.host.shutdown();
}

/// All output reaches the host, including what leftovers printed before
/// they were ended and a big burst from the last process.
#[test]
fn every_byte_printed_before_the_tree_ends_reaches_the_host() {
    let _l = lock();
    let p = InProcess::bash("sandbox = \"off\"\nmax_output_bytes = 10000000");
    for _ in 0..10 {
        // The shell exits first; its child prints 1 MB and exits by itself
        // a moment later (reaped by the reaper as an orphan).
        let r = p.run("(sleep 0.05; head -c 1000000 /dev/zero | tr '\\0' a; echo END) & exit 0");
        let out = stdout(&r);
        // The leftover may be ended (TERM) by the host once the shell is
        // gone; what matters: what it printed is not cut short by DONE.
        if out.ends_with("END\n") {
            assert_eq!(
                r["output"]["stdout_bytes"],
                1_000_004,
                "{}",
                &r.to_string()[..200]
            );
        }
        let r = p.run("head -c 1000000 /dev/zero | tr '\\0' b; echo END");
        assert_eq!(
            r["output"]["stdout_bytes"],
            1_000_004,
            "{}",
            &r.to_string()[..200]
        );
        assert!(stdout(&r).ends_with("END\n"));
    }
    p.host.shutdown();
}
