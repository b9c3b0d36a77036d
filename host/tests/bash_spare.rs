//! The spare reaper, the DONE word and the reaper's early
//! close of the output pipes: a hostile command, a hostile concurrent
//! caller or an unlucky race against the zygote and its spare. Each test is
//! bounded; the ones that inspect the zygote's children hold one lock, so
//! that the zygotes of tests running beside them are never mistaken for
//! theirs.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::procs::{
    cgroups_left, exe, fd_count, fd_targets, is_alive, lock, require_cgroup, the_spare, the_zygote,
};
use common::InProcess;
use serde_json::{json, Value};

fn stdout(r: &Value) -> &str {
    r["output"]["stdout"].as_str().unwrap_or("")
}

fn ok(p: &InProcess, command: &str) -> String {
    let r = p.run(command);
    assert_eq!(r["status"], "success", "`{command}`: {r}");
    stdout(&r).to_string()
}

// ---------------------------------------------------------------------------
// Sandbox on: the spare's namespaces are made before the call.

/// A private mount (tmpfs) at `at`, or None when this machine cannot mount.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn at(at: &Path) -> Option<Tmpfs> {
        std::fs::create_dir_all(at).ok()?;
        let src = std::ffi::CString::new("tmpfs").ok()?;
        let dst = std::ffi::CString::new(at.as_os_str().as_encoded_bytes()).ok()?;
        // SAFETY: mount(2) with NUL-terminated strings we own.
        let rc = unsafe {
            libc::mount(
                src.as_ptr(),
                dst.as_ptr(),
                src.as_ptr(),
                0,
                c"size=64k".as_ptr().cast(),
            )
        };
        (rc == 0).then(|| Tmpfs(at.to_path_buf()))
    }

    fn unmount(&self) {
        let dst = std::ffi::CString::new(self.0.as_os_str().as_encoded_bytes()).expect("path");
        // SAFETY: umount2 on a NUL-terminated path we own.
        unsafe { libc::umount2(dst.as_ptr(), libc::MNT_DETACH) };
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        self.unmount();
    }
}

/// The old design forked each reaper (and its mount namespace) when the
/// command came; the spare's mount namespace is copied when the previous
/// command started. A filesystem mounted in between (the working folder's
/// own disk, a FUSE mount, a build cache) must be visible to the command
/// all the same.
#[test]
fn sandbox_a_filesystem_mounted_after_the_last_call_is_seen_by_the_next() {
    let _l = lock();
    let p = InProcess::bash("");
    ok(&p, "true");
    let late = p.path().join("late");
    let _m = Tmpfs::at(&late).expect("mounting a tmpfs (run the suite as root: CI does)");
    std::fs::write(late.join("f"), "mounted-later\n").expect("write into the new mount");
    // Control: the host itself sees it.
    assert_eq!(
        std::fs::read_to_string(late.join("f")).unwrap(),
        "mounted-later\n"
    );
    let r = p.run("cat late/f");
    assert_eq!(
        stdout(&r),
        "mounted-later\n",
        "the command ran in a mount namespace copied before the filesystem was mounted: {r}"
    );
    p.host.shutdown();
}

/// The idle spare keeps a copy of the host's mount table from the last
/// call. A filesystem the host unmounts afterwards (an encrypted volume
/// the user locks, a removable disk) stays mounted in the spare's
/// namespace, and the next command, run on that spare, reads it.
#[test]
fn sandbox_a_filesystem_the_host_unmounted_is_gone_for_the_next_command() {
    let _l = lock();
    let p = InProcess::bash("");
    let dir = p.path().join("vault");
    let m = Tmpfs::at(&dir).expect("mounting a tmpfs (run the suite as root: CI does)");
    std::fs::write(dir.join("secret"), "vault-contents\n").expect("write into the mount");
    ok(&p, "true");
    let zygote = the_zygote();
    let spare = the_spare(zygote);
    // The user locks the vault.
    m.unmount();
    assert!(!dir.join("secret").exists(), "the host still sees it");
    let needle = format!(" {} ", dir.display());
    let pinned = std::fs::read_to_string(format!("/proc/{spare}/mountinfo"))
        .unwrap_or_default()
        .contains(&needle);
    let r = p.run("cat vault/secret");
    assert!(
        !stdout(&r).contains("vault-contents"),
        "the command read a filesystem the host had unmounted (the idle spare {spare} kept it mounted: {pinned}): {r}"
    );
    p.host.shutdown();
}

/// The pids cgroup of every call is gone when the call returns, although
/// the host now learns the tree is gone (DONE) before the reaper exits.
#[test]
fn sandbox_no_pids_cgroup_outlives_its_call() {
    let _l = lock();
    let p = InProcess::bash("rlimits = { processes = 64 }");
    let r = p.run("true");
    assert_eq!(r["status"], "success", "{r}");
    require_cgroup();
    let left = cgroups_left;
    // Busy CPUs make the reaper's exit (and its namespaces' teardown) slow.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let burners: Vec<_> = (0..3)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut x = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                }
                x
            })
        })
        .collect();
    let mut stale = Vec::new();
    for i in 0..40 {
        let r = p.run("sleep 0.01 & true");
        assert_eq!(r["status"], "success", "{r}");
        let l = left();
        if !l.is_empty() {
            stale.push((i, l));
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for b in burners {
        let _ = b.join();
    }
    p.host.shutdown();
    assert!(
        stale.is_empty(),
        "pids cgroups left when their call returned: {stale:?}"
    );
    assert!(
        left().is_empty(),
        "pids cgroups left after shutdown: {:?}",
        left()
    );
}

/// Every layer still holds for a command run on the spare (namespaces made
/// before the call's Landlock ruleset, cgroup and seccomp filter existed):
/// the first call runs on a reaper the zygote forked, the next ones on
/// spares; all must report the same walls.
#[test]
fn sandbox_every_layer_holds_on_the_spare_as_on_a_fresh_reaper() {
    let _l = lock();
    let p = InProcess::bash("rlimits = { processes = 64 }");
    let outside = tempfile::tempdir().expect("outside");
    let probe = format!(
        r#"echo pid1=$(awk '{{print $4}}' /proc/1/stat);
echo procs=$(ls /proc | grep -c '^[0-9]');
(echo x > {o}/w) 2>/dev/null && echo outside=writable || echo outside=denied;
unshare -U true 2>/dev/null && echo unshare=ok || echo unshare=denied;
cat /proc/1/environ >/dev/null 2>&1 && echo environ=readable || echo environ=denied;
python3 -c "open('/proc/1/mem','rb')" 2>/dev/null && echo mem=readable || echo mem=denied;
echo caps=$(awk '/CapEff/{{print $2}}' /proc/self/status);
echo nnp=$(awk '/NoNewPrivs/{{print $2}}' /proc/self/status);
echo seccomp=$(awk '/^Seccomp:/{{print $2}}' /proc/self/status);
echo lo=$(cat /sys/class/net/lo/operstate 2>/dev/null); ls /sys/class/net | tr '\n' ' '; echo;
echo pidsmax=$(cat /sys/fs/cgroup/pids/$(awk -F: '/:pids:/{{print $3}}' /proc/self/cgroup)/pids.max 2>/dev/null);
echo cg=$(awk -F: '/:pids:/{{print $3}}' /proc/self/cgroup | sed 's/-[0-9]*$//')"#,
        o = outside.path().display()
    );
    let first = ok(&p, &probe);
    assert!(first.contains("outside=denied"), "{first}");
    assert!(first.contains("unshare=denied"), "{first}");
    assert!(first.contains("pid1=0"), "{first}");
    for _ in 0..3 {
        let next = ok(&p, &probe);
        assert_eq!(next, first, "a command on the spare saw other walls");
    }
    assert!(!outside.path().join("w").exists());
    p.host.shutdown();
}

// ---------------------------------------------------------------------------
// Sandbox off: the spare and the zygote are within a command's reach.

/// No fd leaks in the host, the zygote or the spare across many calls.
#[test]
fn fds_of_the_host_the_zygote_and_the_spare_stay_flat_over_200_calls() {
    let _l = lock();
    let p = InProcess::bash("sandbox = \"off\"");
    for _ in 0..5 {
        ok(&p, "true");
    }
    let me = std::process::id() as i32;
    let zygote = the_zygote();
    let host_before = fd_count(me);
    let zygote_before = fd_targets(zygote);
    let spare_before = fd_count(the_spare(zygote));
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
    let spare = the_spare(zygote);
    assert_eq!(fd_targets(zygote), zygote_before, "the zygote's fds changed");
    assert_eq!(
        fd_count(spare),
        spare_before,
        "the spare's fds: {:?}",
        fd_targets(spare)
    );
    let host_after = fd_count(me);
    assert!(
        host_after <= host_before + 2,
        "the host went from {host_before} to {host_after} fds over 200 calls"
    );
    p.host.shutdown();
}

/// The spare holds /dev/null on 0..2 and its own socket, nothing else: no
/// fd of the host's (a non-close-on-exec pipe the embedding process has
/// open, as a jobserver or a parent's pipe would be), none of an earlier
/// command's, none of the zygote's own socket.
#[test]
fn the_spare_holds_nothing_but_dev_null_and_its_socket() {
    let _l = lock();
    // An fd the embedding process holds without close-on-exec.
    let mut pipe = [0; 2];
    // SAFETY: pipe(2) into a local array.
    assert_eq!(unsafe { libc::pipe(pipe.as_mut_ptr()) }, 0);
    let p = InProcess::bash("sandbox = \"off\"");
    ok(&p, "echo hello; echo err >&2");
    let zygote = the_zygote();
    let spare = the_spare(zygote);
    let fds = fd_targets(spare);
    let zfds = fd_targets(zygote);
    let mine = [pipe[0], pipe[1]].map(|fd| {
        std::fs::read_link(format!("/proc/self/fd/{fd}"))
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    });
    // SAFETY: closing the pipe this test opened.
    unsafe {
        libc::close(pipe[0]);
        libc::close(pipe[1]);
    }
    let unexpected: Vec<&String> = fds
        .iter()
        .filter(|f| !f.ends_with("->/dev/null") && !f.contains("->socket:"))
        .collect();
    let sockets = fds.iter().filter(|f| f.contains("->socket:")).count();
    p.host.shutdown();
    assert!(
        unexpected.is_empty(),
        "the spare {spare} holds {unexpected:?} (all: {fds:?}; the zygote {zygote}: {zfds:?}; the test's own pipe: {mine:?})"
    );
    assert_eq!(sockets, 1, "the spare {spare} holds {fds:?}");
}

/// Concurrent callers racing for the one spare: every call gets its own
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

/// The same with the sandbox on (a spare per call in fresh namespaces,
/// a pids cgroup per call).
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

/// A background job that kills every spare it can find, in a loop, while
/// other calls run: no call hangs, and none runs its command twice; a
/// call that fails did not run its command.
#[test]
fn a_job_killing_spares_in_a_loop_never_makes_a_call_hang_or_run_twice() {
    let _l = lock();
    let p = InProcess::bash("sandbox = \"off\"\nmax_concurrent = 4");
    // Warm: the zygote exists from the first command on.
    ok(&p, "true");
    let zygote = the_zygote();
    let host_fds = fd_count(std::process::id() as i32);
    let kills = p.path().join("kills.log");
    // Kills, as fast as it can, every child of the zygote that has no
    // child of its own: the idle spare, or a spare that has just been
    // handed a command and has not started its shell yet.
    let script = p.path().join("killer.py");
    std::fs::write(
        &script,
        format!(
            r#"import os, time
z = {zygote}; mine = os.getppid(); end = time.time() + 60
log = open("{kills}", "a")
while time.time() < end:
    try:
        cs = open("/proc/%d/task/%d/children" % (z, z)).read().split()
    except OSError:
        break
    for c in map(int, cs):
        if c == mine:
            continue
        try:
            if open("/proc/%d/task/%d/children" % (c, c)).read().strip():
                continue
            os.kill(c, 9); log.write("%d\n" % c); log.flush()
        except OSError:
            pass
"#,
            kills = kills.display()
        ),
    )
    .expect("write the killer");
    let killer = format!("exec python3 {}", script.display());
    let job = p.call_json(
        "bash",
        json!({"command": killer, "run_in_background": true, "timeout": 120}),
    );
    assert_eq!(job["status"], "success", "{job}");
    // Until it runs (the interpreter's start).
    let end = Instant::now() + Duration::from_secs(10);
    while !kills.exists() {
        assert!(Instant::now() < end, "the killer never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    let log = p.path().join("ran.log");
    let mut outcomes = BTreeSet::new();
    let mut successes = 0;
    for i in 0..60 {
        let started = Instant::now();
        let r = p.run(&format!("echo {i} >> {}; echo ran-{i}", log.display()));
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "call {i} took {:?}",
            started.elapsed()
        );
        if r["status"] == "success" {
            successes += 1;
            assert_eq!(stdout(&r), format!("ran-{i}\n"), "{r}");
        }
        outcomes.insert(format!("{}/{}", r["status"], r["error"]["code"]));
        if r["status"] != "success" {
            eprintln!("call {i}: {r}");
        }
    }
    let ran = std::fs::read_to_string(&log).unwrap_or_default();
    let mut seen = BTreeSet::new();
    for line in ran.lines() {
        assert!(seen.insert(line.to_string()), "command {line} ran twice: {ran}");
    }
    assert!(seen.len() >= successes, "{seen:?}");
    let kills = std::fs::read_to_string(&kills).unwrap_or_default();
    eprintln!(
        "outcomes: {outcomes:?}, {successes}/60 succeeded, {} ran, {} spares killed",
        seen.len(),
        kills.lines().count()
    );
    let id = job["output"]["id"].as_str().unwrap_or_default();
    let out = p.call_json("bash_output", json!({"id": id}));
    assert!(
        kills.lines().count() > 0,
        "the job killed no spare: the attack did not run: {job} {out}"
    );
    let r = p.call_json("bash_kill", json!({"id": id}));
    assert_eq!(r["status"], "success", "{r}");
    for _ in 0..3 {
        ok(&p, "true");
    }
    let after = fd_count(std::process::id() as i32);
    assert!(
        after <= host_fds + 2,
        "host fds {host_fds} -> {after} after the storm"
    );
    p.host.shutdown();
}

/// Unmount with the spare stopped by a command, and with the zygote and
/// spare both stopped (their process group): nothing is left behind.
#[test]
fn unmount_with_a_stopped_spare_or_zygote_leaves_no_process() {
    let _l = lock();
    for group in [false, true] {
        let p = InProcess::bash("sandbox = \"off\"");
        ok(&p, "true");
        let zygote = the_zygote();
        // From the command: wait for the spare asked for while it runs (a
        // child of the zygote other than its own reaper), then stop it, or
        // the zygote's whole process group (the reapers have their own).
        let target = if group {
            format!("-{zygote}")
        } else {
            "$s".to_string()
        };
        let out = ok(
            &p,
            &format!(
                "z={zygote}; s=; for i in $(seq 500); do s=$(for c in $(cat /proc/$z/task/$z/children); do [ $c != $PPID ] && echo $c; done | head -1); \
                 [ -n \"$s\" ] && break; sleep 0.01; done; kill -STOP {target} && echo spare=$s"
            ),
        );
        let spare: i32 = out
            .trim()
            .strip_prefix("spare=")
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("{out}"));
        let started = Instant::now();
        p.host.shutdown();
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "shutdown took {:?}",
            started.elapsed()
        );
        drop(p);
        let end = Instant::now() + Duration::from_secs(5);
        for pid in [zygote, spare] {
            while is_alive(pid) {
                assert!(
                    Instant::now() < end,
                    "process {pid} ({}) outlived its mount (group={group})",
                    exe(pid)
                );
                std::thread::sleep(Duration::from_millis(10));
            }
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

/// A background job on the spare: its output and exit come through
/// `bash_output`.
#[test]
fn a_background_job_on_the_spare_reports_its_output_and_exit() {
    let _l = lock();
    let p = InProcess::bash("sandbox = \"off\"");
    ok(&p, "true");
    let r = p.call_json(
        "bash",
        json!({"command": "echo one; sleep 0.2; echo two >&2; exit 5", "run_in_background": true}),
    );
    let id = r["output"]["id"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| panic!("{r}"));
    let end = Instant::now() + Duration::from_secs(10);
    let mut all = String::new();
    loop {
        let r = p.call_json("bash_output", json!({"id": id}));
        all.push_str(&r.to_string());
        if r["output"]["running"] == false || r["status"] != "success" {
            break;
        }
        assert!(Instant::now() < end, "{all}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(all.contains("one"), "{all}");
    assert!(all.contains("two"), "{all}");
    assert!(all.contains('5'), "{all}");
    p.host.shutdown();
}
