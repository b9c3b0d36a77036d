//! Red team: the sandbox layers on every call of a mount alike (the same
//! walls as its first call), as root and as an unprivileged user (user
//! namespace); the host's mounts as they are when a command starts; and the
//! per-call pids cgroup removed after the reaper's own exit. Every test is
//! bounded; all hold one lock so that cgroups of tests running beside them
//! are never mistaken for theirs.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::procs::{cgroups_left, children, is_alive, is_root, lock, require_cgroup, the_zygote};
use common::{module_file, target_dir, InProcess};
use serde_json::{json, Value};

const SECRET: &str = "thsecret_walls_9d41_do_not_leak";

fn stdout(r: &Value) -> &str {
    r["output"]["stdout"].as_str().unwrap_or("")
}

// ---------------------------------------------------------------------------
// Pids cgroups of this test process.

/// Threads spinning on every core until dropped (a slow reaper exit).
struct Burners(Arc<AtomicBool>, Vec<std::thread::JoinHandle<()>>);

impl Burners {
    fn start(n: usize) -> Burners {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..n)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                    }
                    std::hint::black_box(x);
                })
            })
            .collect();
        Burners(stop, threads)
    }
}

impl Drop for Burners {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
        for t in self.1.drain(..) {
            let _ = t.join();
        }
    }
}

// ---------------------------------------------------------------------------
// 1. Every layer on every call as on the first.

/// What a command sees of its walls, printed in a form that does not
/// depend on the namespace's inode numbers or mount ids.
fn walls_probe(hidden_dir: &Path, hidden_file: &Path, outside: &Path) -> String {
    format!(
        r#"cat {hd}/key 2>/dev/null && echo dir-key=READ || echo dir-key=hidden;
ls -A {hd} | tr '\n' ' '; echo;
cat {hf} 2>/dev/null | grep -q {secret} && echo file=READ || echo file=hidden;
awk '{{ for (i = 1; i <= NF; i++) if ($i == "-") {{ print $5, $(i+1), $4; break }} }}' /proc/self/mountinfo \
  | grep -E '^({hd}|{hf}|/proc|/dev) ' | sort;
umount {hd} 2>/dev/null && echo umount-dir=DONE || echo umount-dir=refused;
umount -l {hd} 2>/dev/null && echo lumount-dir=DONE || echo lumount-dir=refused;
umount -l {hf} 2>/dev/null && echo lumount-file=DONE || echo lumount-file=refused;
umount -l /proc 2>/dev/null && echo lumount-proc=DONE || echo lumount-proc=refused;
python3 -c 'import ctypes; l = ctypes.CDLL(None, use_errno=True); print("umount2-dir=" + ("DONE" if l.umount2(b"{hd}", 2) == 0 else "refused"))';
cat {hd}/key 2>/dev/null && echo after-dir-key=READ || echo after-dir-key=hidden;
(echo x > {o}/w) 2>/dev/null && echo outside=WRITTEN || echo outside=denied;
echo pid1=$(awk '{{print $4}}' /proc/1/stat) procs=$([ "$(ls /proc | grep -c '^[0-9]')" -lt 20 ] && echo few || echo many);
echo uidmap=$(awk '{{print $1, $2, $3}}' /proc/self/uid_map);
echo caps=$(awk '/CapEff/{{print $2}}' /proc/self/status) bnd=$(awk '/CapBnd/{{print $2}}' /proc/self/status);
echo nnp=$(awk '/NoNewPrivs/{{print $2}}' /proc/self/status) seccomp=$(awk '/^Seccomp:/{{print $2}}' /proc/self/status);
unshare -U true 2>/dev/null && echo unshare=ok || echo unshare=denied;
[ "$(readlink /proc/self/ns/mnt)" = "$(readlink /proc/1/ns/mnt)" ] && echo same-mnt-as-init=yes || echo same-mnt-as-init=no;
[ "$(readlink /proc/self/ns/user)" = "$(readlink /proc/1/ns/user)" ] && echo same-user-as-init=yes || echo same-user-as-init=no;
ls /dev | tr '\n' ' '; echo; ls /sys/class/net | tr '\n' ' '; echo"#,
        hd = hidden_dir.display(),
        hf = hidden_file.display(),
        o = outside.display(),
        secret = SECRET,
    )
}

fn assert_walls(view: &str, hidden_dir: &Path, hidden_file: &Path, which: &str) {
    for want in [
        "dir-key=hidden",
        "file=hidden",
        "umount-dir=refused",
        "lumount-dir=refused",
        "lumount-file=refused",
        "lumount-proc=refused",
        "umount2-dir=refused",
        "after-dir-key=hidden",
        "outside=denied",
        "pid1=0 procs=few",
        "caps=0000000000000000",
        "nnp=1",
        "seccomp=2",
        "unshare=denied",
    ] {
        assert!(view.contains(want), "{which}: lacks {want}:\n{view}");
    }
    assert!(!view.contains(SECRET), "{which}: the secret leaked:\n{view}");
    let dir_line = format!("{} tmpfs ", hidden_dir.display());
    let file_line = format!("{} ", hidden_file.display());
    assert!(
        view.contains(&dir_line),
        "{which}: no tmpfs over the hidden folder:\n{view}"
    );
    assert!(
        view.lines().any(|l| l.starts_with(&file_line)),
        "{which}: nothing bound over the hidden file:\n{view}"
    );
}

/// As root: the first command and later ones (each a reaper the same
/// zygote cloned into fresh namespaces) see exactly the same walls, hidden
/// paths included, and none can unmount what covers them.
#[test]
fn sandbox_hidden_paths_and_mounts_are_the_same_on_every_call() {
    let _l = lock();
    let secrets = tempfile::tempdir().expect("secrets");
    let hidden_dir = secrets.path().join("dotssh");
    std::fs::create_dir(&hidden_dir).expect("dir");
    std::fs::write(hidden_dir.join("key"), SECRET).expect("key");
    let hidden_file = secrets.path().join("token.txt");
    std::fs::write(&hidden_file, SECRET).expect("file");
    let outside = tempfile::tempdir().expect("outside");
    let p = InProcess::bash(&format!(
        "hidden_paths = [{:?}, {:?}]",
        hidden_dir.display().to_string(),
        hidden_file.display().to_string()
    ));
    let probe = walls_probe(&hidden_dir, &hidden_file, outside.path());
    let first = stdout(&p.run(&probe)).to_string();
    assert_walls(&first, &hidden_dir, &hidden_file, "the first call");
    for i in 0..3 {
        let next = stdout(&p.run(&probe)).to_string();
        assert_walls(&next, &hidden_dir, &hidden_file, "a later call");
        assert_eq!(next, first, "call {i} saw other walls than the first");
    }
    assert!(!outside.path().join("w").exists());
    p.host.shutdown();
}

/// A copy of the binary, the module and the reaper program that uid 65534
/// can run, in a world-writable folder with a plan; and the `toolhost
/// batch` of `commands` run there as uid 65534 (its results, its stderr).
struct Unprivileged {
    dir: tempfile::TempDir,
}

impl Unprivileged {
    fn new(config: &str) -> Unprivileged {
        module_file("toolhost_bash");
        let dir = tempfile::tempdir().expect("dir");
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).expect("bin");
        std::fs::copy(target_dir().join("toolhost"), bin.join("toolhost")).expect("copy toolhost");
        std::fs::copy(
            target_dir().join("libtoolhost_bash.so"),
            bin.join("libtoolhost_bash.so"),
        )
        .expect("copy module");
        std::fs::copy(
            target_dir().join("toolhost-bash-reaper"),
            bin.join("toolhost-bash-reaper"),
        )
        .expect("copy reaper");
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join(".ssh")).expect(".ssh");
        std::fs::write(home.join(".ssh/id_ed25519"), SECRET).expect("key");
        std::fs::write(
            dir.path().join("plan.toml"),
            format!(
                "[host]\ndefault_timeout_secs = 60\nworking_dir = \"work\"\n\n[[tools]]\nmodule = \"bash\"\n\
                 [tools.config]\n{config}\n"
            ),
        )
        .expect("plan");
        std::fs::create_dir(dir.path().join("work")).expect("work");
        std::fs::create_dir(dir.path().join("outside")).expect("outside");
        for p in ["", "work", "outside"] {
            std::fs::set_permissions(dir.path().join(p), std::fs::Permissions::from_mode(0o777))
                .expect("chmod");
        }
        // Readable by uid 65534, writable by its owner only (the owner
        // check refuses a plan others can write).
        std::fs::set_permissions(
            dir.path().join("plan.toml"),
            std::fs::Permissions::from_mode(0o644),
        )
        .expect("chmod");
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        for f in ["toolhost", "toolhost-bash-reaper", "libtoolhost_bash.so"] {
            std::fs::set_permissions(bin.join(f), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        let chown = |p: &Path| {
            std::os::unix::fs::chown(p, Some(65534), Some(65534)).expect("chown");
        };
        chown(&home);
        chown(&home.join(".ssh"));
        chown(&home.join(".ssh/id_ed25519"));
        std::fs::set_permissions(home.join(".ssh"), std::fs::Permissions::from_mode(0o700)).expect("chmod");
        Unprivileged { dir }
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn toolhost(&self, args: &[&str], input: &[u8]) -> std::process::Output {
        let mut cmd = std::process::Command::new("setpriv");
        cmd.args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
            .arg(self.dir.path().join("bin/toolhost"))
            .arg("--plan")
            .arg(self.dir.path().join("plan.toml"))
            .args(args)
            .current_dir(self.dir.path())
            .env("TOOLHOST_MODULE_PATH", self.dir.path().join("bin"))
            .env("HOME", self.home())
            .env("RUST_LOG", "info")
            .env_remove("TOOLHOST_PLAN");
        common::output_with_stdin(cmd, input)
    }

    fn batch(&self, commands: &[String]) -> (Vec<Value>, String) {
        let mut input = String::new();
        for c in commands {
            input.push_str(&json!({"name": "bash", "input": {"command": c}}).to_string());
            input.push('\n');
        }
        let out = self.toolhost(&["batch", "-"], input.as_bytes());
        let results = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        (results, String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// As an unprivileged user the sandbox must get its user namespace (and
/// with it the mount, PID and /dev layers): `toolhost check` must not
/// report them unavailable.
#[test]
fn unprivileged_check_reports_the_user_namespace_layers_active() {
    assert!(
        is_root(),
        "this test switches to uid 65534: run the suite as root (CI does)"
    );
    let _l = lock();
    let u = Unprivileged::new("hidden_paths = [\"~/.ssh\"]");
    let out = u.toolhost(&["check"], b"");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !text.contains("id maps failed"),
        "as uid 65534 every namespace layer is dropped: the reaper cannot write its own id maps:\n{text}"
    );
    assert!(
        !text.contains("unavailable"),
        "layers unavailable as uid 65534:\n{text}"
    );
}

/// As an unprivileged user, the first command and the next ones see the
/// same walls: a hidden path is covered, a locked mount cannot be undone,
/// /proc is the namespace's own.
#[test]
fn unprivileged_hidden_paths_hold_on_every_call() {
    assert!(
        is_root(),
        "this test switches to uid 65534: run the suite as root (CI does)"
    );
    let _l = lock();
    let u = Unprivileged::new("hidden_paths = [\"~/.ssh\", \"~/token\"]");
    let token = u.home().join("token");
    std::fs::write(&token, SECRET).expect("token");
    std::os::unix::fs::chown(&token, Some(65534), Some(65534)).expect("chown");
    let probe = walls_probe(&u.home().join(".ssh"), &token, &u.dir.path().join("outside"));
    let probe = probe.replace(
        &format!("{}/key", u.home().join(".ssh").display()),
        &format!("{}/id_ed25519", u.home().join(".ssh").display()),
    );
    let (results, stderr) = u.batch(&vec![probe; 3]);
    assert_eq!(results.len(), 3, "{results:?}\n{stderr}");
    let views: Vec<String> = results.iter().map(|r| stdout(r).to_string()).collect();
    for (i, v) in views.iter().enumerate() {
        let which = if i == 0 { "the first call" } else { "a later call" };
        assert_walls(v, &u.home().join(".ssh"), &token, which);
        assert!(
            v.contains("uidmap=65534 65534 1"),
            "{which}: not in its own user namespace:\n{v}"
        );
    }
    assert_eq!(
        views[1], views[0],
        "the second call saw other walls than the first"
    );
    assert_eq!(
        views[2], views[0],
        "the third call saw other walls than the first"
    );
    assert!(!u.dir.path().join("outside/w").exists());
}

// ---------------------------------------------------------------------------
// 2. The host's mounts as they are when the command starts.

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

/// A command's mount namespace is a copy of the host's mounts as they are
/// when it starts: a filesystem mounted since the last call (the working
/// folder's own disk, a FUSE mount, a build cache) is visible to it.
#[test]
fn sandbox_a_filesystem_mounted_after_the_last_call_is_seen_by_the_next() {
    let _l = lock();
    let p = InProcess::bash("");
    assert_eq!(p.run("true")["status"], "success");
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

/// A filesystem the host unmounted since the last call (an encrypted
/// volume the user locks, a removable disk) is gone for the next command:
/// nothing of the mount keeps a mount table from an earlier call.
#[test]
fn sandbox_a_filesystem_the_host_unmounted_is_gone_for_the_next_command() {
    let _l = lock();
    let p = InProcess::bash("");
    let dir = p.path().join("vault");
    let m = Tmpfs::at(&dir).expect("mounting a tmpfs (run the suite as root: CI does)");
    std::fs::write(dir.join("secret"), "vault-contents\n").expect("write into the mount");
    let r = p.run("cat vault/secret");
    assert_eq!(
        stdout(&r),
        "vault-contents\n",
        "control: mounted, it is read: {r}"
    );
    // The user locks the vault.
    m.unmount();
    assert!(!dir.join("secret").exists(), "the host still sees it");
    let r = p.run("cat vault/secret");
    assert!(
        !stdout(&r).contains("vault-contents"),
        "the command read a filesystem the host had unmounted: {r}"
    );
    p.host.shutdown();
}

// ---------------------------------------------------------------------------
// 3. The per-call pids cgroup.

const CG: &str = "rlimits = { processes = 24 }";

/// Waits up to `bound` for every per-call cgroup to be gone; returns what
/// is left.
fn cgroups_gone_within(bound: Duration) -> Vec<String> {
    let end = Instant::now() + bound;
    loop {
        let l = cgroups_left();
        if l.is_empty() || Instant::now() >= end {
            return l;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A fork bomb against pids.max: the call ends in bounded time, the next
/// call is not slowed, no cgroup is left.
#[test]
fn sandbox_a_fork_bomb_against_pids_max_leaves_no_cgroup_and_no_slow_call() {
    require_cgroup();
    let _l = lock();
    let p = InProcess::bash(CG);
    let t = Instant::now();
    let r = p.call_json(
        "bash",
        json!({"command": "b() { b | b & }; b; sleep 1; echo survived", "timeout": 10}),
    );
    let took = t.elapsed();
    assert!(
        took < Duration::from_secs(15),
        "the fork bomb's call took {took:?}: {r}"
    );
    let left = cgroups_left();
    assert!(
        left.is_empty(),
        "pids cgroups left when the bomb's call returned: {left:?}"
    );
    for _ in 0..5 {
        let t = Instant::now();
        let r = p.run("echo ok");
        assert_eq!(r["status"], "success", "{r}");
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "a call after the bomb took {:?}",
            t.elapsed()
        );
    }
    assert!(cgroups_left().is_empty(), "{:?}", cgroups_left());
    p.host.shutdown();
}

/// Processes left behind (setsid, disowned, double fork) are ended; the call
/// returns promptly and its cgroup is gone when it does.
#[test]
fn sandbox_leftover_processes_leave_no_cgroup_and_no_delay() {
    require_cgroup();
    let _l = lock();
    let p = InProcess::bash(CG);
    for i in 0..5 {
        let t = Instant::now();
        let r = p.run("sleep 300 & disown; setsid sleep 300 & (sleep 300 &) ; trap '' TERM; echo $!");
        assert_eq!(r["status"], "success", "{r}");
        let took = t.elapsed();
        assert!(took < Duration::from_secs(4), "call {i} took {took:?}: {r}");
        let left = cgroups_left();
        assert!(left.is_empty(), "call {i}: pids cgroups left: {left:?}");
    }
    p.host.shutdown();
}

/// Every per-call cgroup under CPU load, 40 quick calls: none is slower
/// than a second (no seconds-long wait on the reaper's exit), none left.
#[test]
fn sandbox_quick_calls_with_a_cgroup_stay_quick_under_load() {
    require_cgroup();
    let _l = lock();
    let p = InProcess::bash(CG);
    let _b = Burners::start(3);
    let mut slow = Vec::new();
    let mut stale = Vec::new();
    for i in 0..40 {
        let t = Instant::now();
        let r = p.run("true");
        assert_eq!(r["status"], "success", "{r}");
        if t.elapsed() > Duration::from_secs(1) {
            slow.push((i, t.elapsed()));
        }
        let l = cgroups_left();
        if !l.is_empty() {
            stale.push((i, l));
        }
    }
    drop(_b);
    p.host.shutdown();
    assert!(slow.is_empty(), "calls slower than 1 s: {slow:?}");
    assert!(
        stale.is_empty(),
        "cgroups left when their call returned: {stale:?}"
    );
}

/// The reaper SIGKILLed from outside while its command runs: the call ends
/// promptly, its cgroup goes, and the next call works.
#[test]
fn sandbox_a_reaper_killed_from_outside_leaves_no_cgroup() {
    require_cgroup();
    let _l = lock();
    let p = Arc::new(InProcess::bash(CG));
    // Warm: the zygote runs.
    assert_eq!(p.run("true")["status"], "success");
    let zygote = the_zygote();
    for round in 0..3 {
        let caller = {
            let p = p.clone();
            std::thread::spawn(move || {
                let t = Instant::now();
                let r = p.run("sleep 60 & sleep 60; echo finished");
                (r, t.elapsed())
            })
        };
        // The reaper: the zygote's child that has children.
        let end = Instant::now() + Duration::from_secs(10);
        let reaper = loop {
            let found = children(zygote)
                .into_iter()
                .find(|&c| is_alive(c) && !children(c).is_empty());
            if let Some(r) = found {
                break r;
            }
            assert!(Instant::now() < end, "round {round}: no running reaper found");
            std::thread::sleep(Duration::from_millis(10));
        };
        std::thread::sleep(Duration::from_millis(100));
        // SAFETY: kill(2) on a process we found as the zygote's child.
        unsafe { libc::kill(reaper, libc::SIGKILL) };
        let (r, took) = caller.join().expect("caller");
        assert!(
            took < Duration::from_secs(10),
            "round {round}: the call took {took:?}: {r}"
        );
        assert!(!stdout(&r).contains("finished"), "{r}");
        let left = cgroups_gone_within(Duration::from_millis(500));
        assert!(left.is_empty(), "round {round}: pids cgroups left: {left:?}");
        let t = Instant::now();
        assert_eq!(p.run("echo ok")["status"], "success");
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "next call took {:?}",
            t.elapsed()
        );
    }
    p.host.shutdown();
}

/// Background jobs with a cgroup: one killed with bash_kill, one that ends
/// by itself, one left at shutdown: no cgroup survives any of them.
#[test]
fn sandbox_background_jobs_leave_no_cgroup() {
    require_cgroup();
    let _l = lock();
    let p = InProcess::bash(CG);
    let start = |command: &str| -> String {
        let r = p.call_json("bash", json!({"command": command, "run_in_background": true}));
        r["output"]["id"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| panic!("{r}"))
    };
    let killed = start("sleep 300 & sleep 300");
    let ends = start("sleep 0.3 & echo bye");
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    let r = p.call_json("bash_kill", json!({"id": killed}));
    assert_eq!(r["status"], "success", "{r}");
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "bash_kill took {:?}",
        t.elapsed()
    );
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let r = p.call_json("bash_output", json!({"id": ends}));
        if r["output"]["running"] == false || r["status"] != "success" {
            break;
        }
        assert!(Instant::now() < end, "the job did not end: {r}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = cgroups_gone_within(Duration::from_secs(2));
    assert!(
        left.is_empty(),
        "pids cgroups left after the jobs ended: {left:?}"
    );
    let _left_running = start("sleep 300");
    std::thread::sleep(Duration::from_millis(200));
    let t = Instant::now();
    p.host.shutdown();
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "shutdown took {:?}",
        t.elapsed()
    );
    let left = cgroups_gone_within(Duration::from_secs(2));
    assert!(left.is_empty(), "pids cgroups left after shutdown: {left:?}");
}

/// Many concurrent callers, each with a cgroup and a leftover process:
/// every one gets its own output, none waits seconds, none leaves a cgroup.
#[test]
fn sandbox_concurrent_calls_with_cgroups_leave_none_and_do_not_stall() {
    require_cgroup();
    let _l = lock();
    let p = Arc::new(InProcess::bash(&format!("{CG}\nmax_concurrent = 8")));
    let threads: Vec<_> = (0..6)
        .map(|t| {
            let p = p.clone();
            std::thread::spawn(move || {
                let mut bad = Vec::new();
                for i in 0..5 {
                    let started = Instant::now();
                    let r = p.run(&format!("sleep 5 & echo t{t}-{i}"));
                    let took = started.elapsed();
                    if r["status"] == "error" && r["error"]["code"] == "busy" {
                        continue;
                    }
                    if stdout(&r).trim() != format!("t{t}-{i}") || took > Duration::from_secs(5) {
                        bad.push(format!("t{t}-{i}: {took:?} {r}"));
                    }
                }
                bad
            })
        })
        .collect();
    let bad: Vec<String> = threads
        .into_iter()
        .flat_map(|t| t.join().expect("thread"))
        .collect();
    assert!(bad.is_empty(), "{bad:#?}");
    let left = cgroups_gone_within(Duration::from_millis(300));
    assert!(left.is_empty(), "pids cgroups left: {left:?}");
    p.host.shutdown();
}

/// The mount's probe runs `true` with every layer, the pids cgroup
/// included, and drops the cgroup as soon as the tree is gone, without
/// waiting for the reaper's exit like a call does: under CPU load its
/// cgroup must not outlive the mount's start either.
#[test]
fn sandbox_the_probes_cgroup_is_gone_once_the_mount_is_up() {
    require_cgroup();
    let _l = lock();
    let _b = Burners::start(3);
    let mut stale = Vec::new();
    for i in 0..15 {
        let p = InProcess::bash(CG);
        let l = cgroups_left();
        if !l.is_empty() {
            stale.push((i, l));
        }
        p.host.shutdown();
        drop(p);
        // Whatever is left must not count against the next round.
        let _ = cgroups_gone_within(Duration::from_secs(1));
    }
    assert!(
        stale.is_empty(),
        "the probe's pids cgroup outlived the mount's start: {stale:?}"
    );
}
