//! Finding out, at mount, which layers hold on this kernel: run `true` through
//! the real spawn path with every wanted layer, drop the one whose step
//! fails, and try again. What is left is what every call gets.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{Layers, ReportItem, Request, Sandbox, SandboxError};
use crate::process::launch::Launcher;
use crate::process::reaper::Step;
use crate::process::spawn::{spawn, SpawnSpec};
use crate::process::tree::Exit;

/// How long one probe may take.
const PROBE_BOUND: Duration = Duration::from_secs(10);

/// The outcome of one probe run.
enum Probe {
    Ran(Exit),
    CloneFailed(std::io::Error),
    Prepare(SandboxError),
}

fn run(launcher: &Launcher, sandbox: &Sandbox, layers: &Layers, req: &Request<'_>) -> Probe {
    let mut call = match sandbox.prepare_with(req.working_dir, layers) {
        Ok(c) => c,
        Err(e) => return Probe::Prepare(e),
    };
    let env = [("PATH".into(), "/usr/bin:/bin".into())];
    // `true` is the cheapest program to take through every step to execve;
    // the shell only when it is missing.
    let program = Path::new("/bin/true");
    let spec = SpawnSpec {
        shell: if program.is_file() { program } else { req.shell },
        command: ":",
        cwd: req.working_dir,
        env: &env,
        rlimits: &[],
        confine: sandbox.confine(&call),
    };
    let mut spawned = match spawn(launcher, &spec) {
        Ok(s) => s,
        Err(e) => return Probe::CloneFailed(e),
    };
    if let Some(reaper) = spawned.tree.pidfd() {
        call.watch_reaper(reaper);
    }
    let end = Instant::now() + PROBE_BOUND;
    while !spawned.tree.is_gone() && Instant::now() < end {
        let mut pfd = libc::pollfd {
            fd: spawned.tree.status_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: polling one fd the tree owns.
        unsafe { libc::poll(&mut pfd, 1, 100) };
        spawned.tree.on_readable();
    }
    let exit = spawned.tree.exit().unwrap_or(Exit::NotStarted);
    drop(spawned);
    drop(call);
    Probe::Ran(exit)
}

/// Drops unavailable layers until a probe runs clean; returns what holds.
pub(super) fn settle(
    launcher: &Launcher,
    sandbox: &mut Sandbox,
    want: Layers,
    req: &Request<'_>,
    why: &mut Vec<(&'static str, String)>,
) -> Layers {
    let mut layers = want;
    for _ in 0..12 {
        layers.seccomp_net = !req.network && !layers.net_ns && layers.seccomp;
        layers.seccomp_families = !req.network && layers.seccomp;
        if let Err(e) = sandbox.install_seccomp(&layers) {
            layers.seccomp = false;
            why.push(("seccomp", e.to_string()));
            continue;
        }
        let outcome = match run(launcher, sandbox, &layers, req) {
            Probe::Ran(Exit::SandboxFailed(Step::Clone)) => Probe::CloneFailed(std::io::Error::other(
                "the kernel refused to start the reaper in these namespaces",
            )),
            other => other,
        };
        match outcome {
            Probe::Ran(Exit::Code(0)) => return layers,
            Probe::Ran(Exit::SandboxFailed(step)) => {
                let errno = "the kernel refused it";
                match step {
                    Step::IdMaps => {
                        why.push((
                            "user_ns",
                            format!("writing the user namespace's id maps failed ({errno})"),
                        ));
                        drop_namespaces(&mut layers);
                    }
                    Step::MountPrivate => {
                        why.push(("mount_ns", "making the mount table private failed".into()));
                        layers.mount_ns = false;
                        layers.proc = false;
                    }
                    Step::Proc => {
                        why.push(("proc", "mounting the namespace's own /proc failed".into()));
                        layers.proc = false;
                    }
                    Step::Hidden => {
                        // Skip the paths that cannot be covered, not the
                        // whole mount namespace (and every other path).
                        if !skip_uncoverable(launcher, sandbox, &layers, req, why) {
                            why.push(("mount_ns", "covering a hidden path failed".into()));
                            layers.mount_ns = false;
                            layers.proc = false;
                        }
                    }
                    Step::Cgroup => {
                        why.push(("cgroup", "joining the pids cgroup failed".into()));
                        layers.cgroup = false;
                    }
                    Step::NoNewPrivs => {
                        why.push(("no_new_privs", "PR_SET_NO_NEW_PRIVS failed".into()));
                        layers.no_new_privs = false;
                        layers.seccomp = false;
                    }
                    Step::Landlock => {
                        why.push(("landlock", format!("landlock_restrict_self failed ({errno})")));
                        layers.landlock = false;
                    }
                    Step::Seccomp => {
                        why.push(("seccomp", "installing the seccomp filter failed".into()));
                        layers.seccomp = false;
                    }
                    Step::NetProxy => {
                        why.push((
                            "net_proxy",
                            "bringing up the namespace's loopback or listening on it failed".into(),
                        ));
                        layers.net_proxy = false;
                    }
                    Step::Dev => {
                        why.push(("dev", "replacing /dev with a minimal one failed".into()));
                        layers.dev = false;
                    }
                    Step::Caps => {
                        why.push(("caps", "dropping the capabilities failed".into()));
                        layers.caps = false;
                    }
                    Step::Clone => {
                        // Mapped to CloneFailed above; kept total.
                        why.push(("pid_ns", "cannot start the reaper in its namespaces".into()));
                        drop_namespaces(&mut layers);
                    }
                }
            }
            Probe::CloneFailed(e) => {
                // Find the namespace the kernel refuses, one at a time.
                if layers.user_ns {
                    why.push(("user_ns", format!("cannot create a user namespace: {e}")));
                    drop_namespaces(&mut layers);
                    continue;
                }
                let alone = |f: fn(&mut Layers)| {
                    let mut only = Layers::default();
                    f(&mut only);
                    matches!(run(launcher, sandbox, &only, req), Probe::Ran(Exit::Code(0)))
                };
                let mut dropped = false;
                if layers.net_ns && !alone(|l| l.net_ns = true) {
                    why.push(("net_ns", format!("cannot create a network namespace: {e}")));
                    layers.net_ns = false;
                    layers.net_proxy = false;
                    dropped = true;
                }
                if layers.mount_ns && !alone(|l| l.mount_ns = true) {
                    why.push(("mount_ns", format!("cannot create a mount namespace: {e}")));
                    layers.mount_ns = false;
                    layers.proc = false;
                    dropped = true;
                }
                if layers.pid_ns && !alone(|l| l.pid_ns = true) {
                    why.push(("pid_ns", format!("cannot create a PID namespace: {e}")));
                    layers.pid_ns = false;
                    layers.proc = false;
                    dropped = true;
                }
                if !dropped {
                    why.push(("pid_ns", format!("cannot start a sandboxed process: {e}")));
                    drop_namespaces(&mut layers);
                }
            }
            // Drop the layer whose per-call resource could not be made;
            // anything else (no temp folder) leaves no layer standing.
            Probe::Prepare(e @ (SandboxError::Landlock(_) | SandboxError::LandlockGone)) => {
                why.push(("landlock", e.to_string()));
                layers.landlock = false;
            }
            Probe::Prepare(e @ SandboxError::Cgroup(_)) => {
                why.push(("cgroup", e.to_string()));
                layers.cgroup = false;
            }
            Probe::Prepare(e) => {
                why.push((
                    "sandbox",
                    format!("a command's sandbox cannot be prepared ({e}); every layer is off"),
                ));
                return Layers::default();
            }
            Probe::Ran(other) => {
                why.push((
                    "sandbox",
                    format!("the probe command failed ({other:?}); every layer is off"),
                ));
                return Layers::default();
            }
        }
    }
    why.push((
        "sandbox",
        "the layers did not settle after 12 probes; every layer is off".into(),
    ));
    Layers::default()
}

/// Probes each hidden path alone and drops those that cannot be covered
/// (reported under `hidden`). False when every path covers alone (the
/// failure is elsewhere), so nothing was dropped.
fn skip_uncoverable(
    launcher: &Launcher,
    sandbox: &mut Sandbox,
    layers: &Layers,
    req: &Request<'_>,
    why: &mut Vec<(&'static str, String)>,
) -> bool {
    let all = std::mem::take(&mut sandbox.hidden);
    let mut kept = Vec::new();
    let mut skipped = false;
    for h in all {
        sandbox.hidden = vec![h.clone()];
        if matches!(run(launcher, sandbox, layers, req), Probe::Ran(Exit::Code(0))) {
            kept.push(h);
        } else {
            skipped = true;
            let name = Path::new(std::ffi::OsStr::from_bytes(h.0.as_bytes()))
                .display()
                .to_string();
            why.push((
                "hidden",
                format!("{name} cannot be covered here and is NOT hidden"),
            ));
        }
    }
    sandbox.hidden = kept;
    skipped
}

fn drop_namespaces(l: &mut Layers) {
    l.user_ns = false;
    l.pid_ns = false;
    l.mount_ns = false;
    l.proc = false;
    l.net_ns = false;
    l.net_proxy = false;
    l.dev = false;
}

fn reason(why: &[(&'static str, String)], names: &[&str]) -> String {
    let found: Vec<&str> = why
        .iter()
        .filter(|(n, _)| names.contains(n))
        .map(|(_, w)| w.as_str())
        .collect();
    if found.is_empty() {
        "not available on this kernel".into()
    } else {
        found.join("; ")
    }
}

fn item(
    name: &str,
    active: bool,
    detail: String,
    why: &[(&'static str, String)],
    keys: &[&str],
) -> ReportItem {
    ReportItem {
        name: name.into(),
        state: if active { "active" } else { "unavailable" },
        detail: if active { detail } else { reason(why, keys) },
    }
}

/// The per-layer report.
pub(super) fn report(
    req: &Request<'_>,
    l: &Layers,
    why: &[(&'static str, String)],
    writable: &[PathBuf],
    hidden: &[(std::ffi::CString, bool)],
    read_only: &[std::ffi::CString],
) -> Vec<ReportItem> {
    let mut out = Vec::new();
    if let Some((_, w)) = why.iter().find(|(n, _)| *n == "sandbox") {
        out.push(ReportItem {
            name: "sandbox".into(),
            state: "unavailable",
            detail: w.clone(),
        });
    }
    if req.mode == super::Mode::Off {
        return out;
    }
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        out.push(item(
            "user namespace",
            l.user_ns,
            "the command runs in its own user namespace (same uid), which lets it have the others".into(),
            why,
            &["user_ns"],
        ));
    }
    let writes = match req.mode {
        super::Mode::ReadOnly => {
            "writes only in a private temp folder (TMPDIR) and to /dev/null-like devices".into()
        }
        _ => format!(
            "writes only under the working folder, {} writable_paths and a private temp folder (TMPDIR); \
             reads everywhere; signals and abstract sockets stay inside the command",
            writable.len()
        ),
    };
    out.push(item(
        "filesystem (landlock)",
        l.landlock,
        writes,
        why,
        &["landlock"],
    ));
    let names: Vec<String> = hidden
        .iter()
        .map(|(p, _)| {
            Path::new(std::ffi::OsStr::from_bytes(p.as_bytes()))
                .display()
                .to_string()
        })
        .collect();
    out.push(item(
        "hidden paths (mount namespace)",
        l.mount_ns,
        {
            let mut detail = if names.is_empty() {
                "private mount table; no hidden path exists here".to_string()
            } else {
                format!("seen empty: {}", names.join(", "))
            };
            for p in read_only {
                detail.push_str(&format!(
                    "; read-only: {}",
                    Path::new(std::ffi::OsStr::from_bytes(p.as_bytes())).display()
                ));
            }
            for (_, w) in why.iter().filter(|(n, _)| *n == "hidden") {
                detail.push_str("; ");
                detail.push_str(w);
            }
            detail
        },
        why,
        &["mount_ns", "user_ns"],
    ));
    out.push(item(
        "processes (PID namespace)",
        l.pid_ns && l.proc,
        "own PID namespace and /proc: the host and the reaper are out of sight and reach; all die with the call"
            .into(),
        why,
        &["pid_ns", "proc", "mount_ns", "user_ns"],
    ));
    if let Some(list) = req.allowlist {
        out.push(item(
            "network allowlist (proxy)",
            l.net_ns && l.net_proxy,
            format!(
                "own network namespace whose only way out is the module's HTTP/SOCKS5 proxy on 127.0.0.1:{} \
                 (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY set); only these names: {list}; IP literals and names \
                 resolving to loopback, private or link-local addresses are refused",
                crate::netproxy::PORT
            ),
            why,
            &["net_proxy", "net_ns", "user_ns"],
        ));
    }
    if req.network {
        out.push(ReportItem {
            name: "network".into(),
            state: "off",
            detail: "network = true: the host's network is reachable".into(),
        });
    } else if l.net_ns {
        out.push(item(
            "network off (network namespace)",
            true,
            if l.net_proxy {
                "no interface but loopback, where only the allowlist proxy listens".into()
            } else {
                "no interface but a loopback that is down".into()
            },
            why,
            &[],
        ));
    } else {
        out.push(item(
            "network off (seccomp)",
            l.seccomp_net,
            "no network namespace here; seccomp lets only AF_UNIX and AF_NETLINK sockets be made".into(),
            why,
            &["net_ns", "seccomp"],
        ));
    }
    out.push(item(
        "no_new_privs",
        l.no_new_privs,
        "setuid binaries and file capabilities grant nothing".into(),
        why,
        &["no_new_privs"],
    ));
    out.push(item(
        "syscall filter (seccomp)",
        l.seccomp,
        "ptrace, process_vm_*, pidfd_getfd, mount and the new mount API, unshare, setns, clone with CLONE_NEW* \
         flags, bpf, keyctl, perf_event_open, userfaultfd, io_uring, modules, kexec, swap, reboot and every x32-ABI \
         call are refused (EPERM); clone3 fails with ENOSYS so libc falls back to clone; unless network = true, \
         socket families other than AF_UNIX, AF_NETLINK, AF_INET and AF_INET6 (AF_VSOCK, AF_PACKET, …: no network \
         namespace confines them) are refused"
            .into(),
        why,
        &["seccomp", "no_new_privs"],
    ));
    out.push(item(
        "devices (minimal /dev)",
        l.dev && l.mount_ns,
        "only null, zero, full, random, urandom, tty, a private devpts (ptys work) and an empty shm: no disk or host \
         terminal"
            .into(),
        why,
        &["dev", "mount_ns", "user_ns"],
    ));
    out.push(item(
        "capabilities dropped",
        l.caps,
        "bounding, ambient, effective, permitted and inheritable sets emptied: uid 0 holds no capability"
            .into(),
        why,
        &["caps"],
    ));
    match req.processes {
        Some(max) => out.push(item(
            "process limit (pids cgroup)",
            l.cgroup,
            format!("at most {max} processes per command, root included"),
            why,
            &["cgroup"],
        )),
        None => out.push(ReportItem {
            name: "process limit (pids cgroup)".into(),
            state: "off",
            detail: "rlimits.processes is not set".into(),
        }),
    }
    out
}
