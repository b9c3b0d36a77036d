//! The shell sandbox: an OS boundary around every command, in layers.
//!
//! At mount, [`Sandbox::new`] works out which layers the plan asks for,
//! then *probes* them by running `true` through the real spawn path with all
//! of them; a layer whose step fails is dropped (and reported unavailable,
//! which fails the mount under `sandbox_required`). Per call,
//! [`Sandbox::prepare`] builds what must exist before the fork (the Landlock
//! ruleset, the pids cgroup, the private temp folder) and [`CallBox`] cleans
//! it up once the command's tree is gone.

pub mod cgroup;
pub mod config;
pub mod error;
pub mod landlock;
pub mod probe;
pub mod seccomp;
pub mod stamp;

use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::process::launch::Launcher;
use crate::process::reaper::{MAX_HIDDEN, MAX_READ_ONLY};
use crate::process::spawn::Confine;
use crate::process::spec::SetupSpec;
use cgroup::{PidsGroup, PidsRoot};
pub use config::Mode;
pub use error::{CgroupError, SandboxError};

/// The layers, as the probe and the report name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Layers {
    /// A user namespace (needed for the others when not root).
    pub user_ns: bool,
    /// PID namespace: the reaper is init.
    pub pid_ns: bool,
    /// Mount namespace: private mounts, hidden paths covered.
    pub mount_ns: bool,
    /// The namespace's own `/proc`.
    pub proc: bool,
    /// Network namespace (network off, or only the proxy).
    pub net_ns: bool,
    /// The allowlist proxy's socket in the network namespace (needs
    /// `net_ns`).
    pub net_proxy: bool,
    /// Seccomp refusal of inet sockets (network off without a namespace).
    pub seccomp_net: bool,
    /// Seccomp refusal of socket families a network namespace does not
    /// confine (AF_VSOCK, AF_PACKET, …): whenever `network` is not true.
    pub seccomp_families: bool,
    /// Landlock filesystem and scope rules.
    pub landlock: bool,
    /// The seccomp syscall filter.
    pub seccomp: bool,
    /// `no_new_privs`.
    pub no_new_privs: bool,
    /// The pids cgroup.
    pub cgroup: bool,
    /// Every capability dropped before the shell starts.
    pub caps: bool,
    /// A minimal `/dev` (needs the mount namespace).
    pub dev: bool,
}

/// One line of the mount report.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ReportItem {
    /// The layer.
    pub name: String,
    /// `active`, `unavailable` or `off`.
    pub state: &'static str,
    /// What it does here, or why it is not there.
    pub detail: String,
}

/// The mount's sandbox: which layers hold, and the data every call shares.
#[derive(Debug)]
pub struct Sandbox {
    mode: Mode,
    layers: Layers,
    seccomp: Vec<libc::sock_filter>,
    writable: Vec<PathBuf>,
    hidden: Vec<(CString, bool)>,
    /// Files bound read-only over themselves (the plan file when it sits
    /// where commands may write).
    read_only: Vec<CString>,
    id_maps: Option<[(CString, Vec<u8>); 3]>,
    pids: Option<(PidsRoot, u64)>,
    tmp_root: PathBuf,
    report: Vec<ReportItem>,
    /// The probe's stamp file, when the module has a state folder.
    stamp: Option<PathBuf>,
}

/// What the mount asks for, from the config.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// The mode.
    pub mode: Mode,
    /// `network = true`.
    pub network: bool,
    /// With a network allowlist: the list as the report shows it.
    pub allowlist: Option<&'a str>,
    /// `writable_paths`, as written.
    pub writable_paths: &'a [PathBuf],
    /// `hidden_paths`, as written (`~/` expands to HOME).
    pub hidden_paths: &'a [String],
    /// `rlimits.processes`.
    pub processes: Option<u64>,
    /// The plan's working folder (relative paths resolve against it).
    pub working_dir: &'a Path,
    /// Where private temp folders go.
    pub tmp_root: PathBuf,
    /// The shell, for the probe.
    pub shell: &'a Path,
    /// The host's state folder (the plan's `.toolhost`: HTTP token, every
    /// module's state), hidden from commands like `hidden_paths`.
    pub host_state_dir: Option<&'a Path>,
    /// The plan file (its secrets, and a command must not rewrite it):
    /// hidden like `hidden_paths`.
    pub plan_file: Option<&'a Path>,
    /// The host's control plane: existing entries in a command's reach are
    /// bound read-only, secret ones hidden (see `toolhost_core::protected`).
    pub protected: &'a toolhost_core::protected::Protected,
    /// Where the [probe's stamp](stamp) lives (the module's state folder);
    /// `None`: probe at every mount.
    pub probe_stamp: Option<PathBuf>,
}

impl Sandbox {
    /// Works out and probes the layers. Errors are configuration errors
    /// (a hidden path list too long); unavailable layers are reported, not
    /// errors.
    pub fn new(launcher: &Launcher, req: &Request<'_>) -> Result<Sandbox, SandboxError> {
        let mut report = Vec::new();
        let resolve = |p: &Path| -> PathBuf {
            let expanded = match (p.strip_prefix("~"), std::env::var_os("HOME")) {
                (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
                _ => p.to_path_buf(),
            };
            let abs = req.working_dir.join(expanded);
            abs.canonicalize().unwrap_or(abs)
        };
        let writable: Vec<PathBuf> = req.writable_paths.iter().map(|p| resolve(p)).collect();
        for p in &writable {
            if !p.is_dir() {
                return Err(SandboxError::NotAFolder(p.clone()));
            }
        }
        let mut hidden: Vec<(CString, bool)> = Vec::new();
        let listed = req.hidden_paths.iter().map(|p| Path::new(p.as_str()));
        let mut read_only: Vec<CString> = Vec::new();
        // The plan file: read-only where a command could otherwise rewrite
        // it (under the working folder or a writable path), so that no
        // command loosens the next mount's rules; hidden elsewhere (seeing
        // it empty keeps any secret in it from commands). Under the working
        // folder it stays readable: the file tools can read it there
        // anyway, and a `/dev/null` in its place would break `git add -A`.
        let plan = req.plan_file.map(resolve);
        let plan_in_reach = plan.as_ref().filter(|p| {
            std::iter::once(&resolve(req.working_dir))
                .chain(&writable)
                .any(|w| p.starts_with(w))
        });
        if let Some(p) = plan_in_reach {
            read_only.push(
                CString::new(p.as_os_str().as_bytes()).map_err(|_| SandboxError::Nul {
                    what: "the plan's path",
                    path: p.clone(),
                })?,
            );
        }
        // The rest of the control plane (hooks, modules, the audit log, the
        // lock file, another plan): read-only where a command could reach
        // it; secret entries (token files) hidden.
        let in_reach = |p: &Path| {
            std::iter::once(&resolve(req.working_dir))
                .chain(&writable)
                .any(|w| p.starts_with(w))
        };
        let mut secret: Vec<PathBuf> = Vec::new();
        for (path, _, is_secret) in req.protected.entries() {
            if is_secret {
                secret.push(path.to_path_buf());
                continue;
            }
            // Both forms of an entry name one file: bound once, by its
            // real path; a missing one has nothing to bind.
            let Ok(real) = path.canonicalize() else { continue };
            let Ok(c) = CString::new(real.as_os_str().as_bytes()) else {
                continue;
            };
            if in_reach(&real) && !read_only.contains(&c) {
                read_only.push(c);
            }
        }
        // In a stable order: the probe's stamp is keyed by the list.
        read_only.sort();
        if read_only.len() > MAX_READ_ONLY {
            return Err(SandboxError::TooManyReadOnly);
        }
        let plan_hidden = plan.clone().filter(|_| plan_in_reach.is_none());
        for p in listed
            .map(Path::to_path_buf)
            .chain(req.host_state_dir.map(Path::to_path_buf))
            .chain(plan_hidden)
            .chain(secret)
        {
            let p = p.as_path();
            let path = resolve(p);
            let Ok(meta) = std::fs::metadata(&path) else {
                continue; // nothing there to hide
            };
            let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| SandboxError::Nul {
                what: "hidden_paths entry",
                path: p.to_path_buf(),
            })?;
            if !hidden.iter().any(|(h, _)| *h == c) {
                hidden.push((c, meta.is_dir()));
            }
        }
        if hidden.len() > MAX_HIDDEN {
            return Err(SandboxError::TooManyHidden);
        }
        let mut sandbox = Sandbox {
            mode: req.mode,
            layers: Layers::default(),
            seccomp: Vec::new(),
            writable,
            hidden,
            read_only,
            id_maps: None,
            pids: None,
            tmp_root: req.tmp_root.clone(),
            report: Vec::new(),
            stamp: req.probe_stamp.clone(),
        };
        if req.mode == Mode::Off {
            report.push(ReportItem {
                name: "sandbox".into(),
                state: "off",
                detail: "sandbox = \"off\": commands run with the host's rights (reaper supervision and the \
                         command policy only)"
                    .into(),
            });
            sandbox.report = report;
            return Ok(sandbox);
        }
        // SAFETY: geteuid cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        let mut want = Layers {
            user_ns: !root,
            pid_ns: true,
            mount_ns: true,
            proc: true,
            net_ns: !req.network,
            net_proxy: req.allowlist.is_some(),
            seccomp_net: false,
            seccomp_families: false,
            landlock: true,
            seccomp: true,
            no_new_privs: true,
            cgroup: false,
            caps: true,
            dev: true,
        };
        let mut why: Vec<(&'static str, String)> = Vec::new();
        if !cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
            // clone_on is a plain fork there: no namespaces.
            want.user_ns = false;
            want.pid_ns = false;
            want.mount_ns = false;
            want.proc = false;
            want.net_ns = false;
            want.net_proxy = false;
            why.push((
                "pid_ns",
                "namespaces are only started on x86_64 and aarch64".into(),
            ));
        }
        if !root {
            // SAFETY: getuid/getgid cannot fail.
            let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
            sandbox.id_maps = Some([
                (CString::from(c"/proc/self/setgroups"), b"deny".to_vec()),
                (
                    CString::from(c"/proc/self/uid_map"),
                    format!("{uid} {uid} 1").into_bytes(),
                ),
                (
                    CString::from(c"/proc/self/gid_map"),
                    format!("{gid} {gid} 1").into_bytes(),
                ),
            ]);
        }
        if let Some(max) = req.processes {
            match PidsRoot::find() {
                Ok(root) => {
                    // The reaper counts too.
                    sandbox.pids = Some((root, max.saturating_add(1)));
                    want.cgroup = true;
                }
                Err(e) => why.push(("cgroup", e.to_string())),
            }
        }
        match seccomp::program(seccomp::Sockets::Any) {
            Ok(_) => {}
            Err(e) => {
                want.seccomp = false;
                why.push(("seccomp", e.to_string()));
            }
        }
        match landlock::ruleset(&[]) {
            Ok(Some(_)) => {}
            Ok(None) => {
                want.landlock = false;
                why.push((
                    "landlock",
                    "this kernel has no Landlock (or it is disabled)".into(),
                ));
            }
            Err(e) => {
                want.landlock = false;
                why.push(("landlock", e.to_string()));
            }
        }
        let key = stamp::key(req, &want, &sandbox.hidden, &sandbox.read_only, &sandbox.writable);
        let stamped = match (&sandbox.stamp, &key) {
            (Some(path), Some(key)) => stamp::matches(path, key),
            _ => false,
        };
        let mut full = want;
        full.seccomp_net = !req.network && !want.net_ns && want.seccomp;
        full.seccomp_families = !req.network && want.seccomp;
        let layers = if stamped && sandbox.install_seccomp(&full).is_ok() {
            full
        } else {
            let before = why.len();
            let layers = probe::settle(launcher, &mut sandbox, want, req, &mut why);
            if let (Some(path), Some(key), true) =
                (&sandbox.stamp, &key, layers == full && why.len() == before)
            {
                stamp::write(path, key);
            }
            layers
        };
        sandbox.layers = layers;
        sandbox.report = probe::report(
            req,
            &layers,
            &why,
            &sandbox.writable,
            &sandbox.hidden,
            &sandbox.read_only,
        );
        if stamped && layers == full {
            if let Some(path) = &sandbox.stamp {
                sandbox.report.push(ReportItem {
                    name: "layer probe".into(),
                    state: "active",
                    detail: format!(
                        "every layer held in a spawn probe earlier this boot with this kernel, user, sysctls and \
                         plan (stamp {}; a call that finds a layer missing is refused and removes it, so the next \
                         mount probes again)",
                        path.display()
                    ),
                });
            }
        }
        Ok(sandbox)
    }

    /// A layer the probe (or its stamp) promised failed at a call: the next
    /// mount probes again.
    pub fn distrust_probe(&self) {
        if let Some(path) = &self.stamp {
            stamp::forget(path);
        }
    }

    /// Whether the sandbox is on at all.
    pub fn is_on(&self) -> bool {
        self.mode != Mode::Off
    }

    /// The active layers.
    pub fn layers(&self) -> Layers {
        self.layers
    }

    /// Where the calls' private temp folders are made.
    pub fn tmp_root(&self) -> &Path {
        &self.tmp_root
    }

    /// The per-layer report for `toolhost check` and the log.
    pub fn report(&self) -> &[ReportItem] {
        &self.report
    }

    /// Layers asked for but unavailable here.
    pub fn unavailable(&self) -> Vec<&ReportItem> {
        self.report.iter().filter(|r| r.state == "unavailable").collect()
    }

    fn install_seccomp(&mut self, layers: &Layers) -> Result<(), SandboxError> {
        self.seccomp = if layers.seccomp {
            let sockets = match (layers.seccomp_net, layers.seccomp_families) {
                (true, _) => seccomp::Sockets::LocalOnly,
                (false, true) => seccomp::Sockets::LocalAndInet,
                (false, false) => seccomp::Sockets::Any,
            };
            let compiled = seccomp::program(sockets)?;
            seccomp::PREFIX
                .iter()
                .copied()
                .chain(compiled.into_iter().map(|f| libc::sock_filter {
                    code: f.code,
                    jt: f.jt,
                    jf: f.jf,
                    k: f.k,
                }))
                .collect()
        } else {
            Vec::new()
        };
        Ok(())
    }

    /// What one call needs before the fork. `cwd` is the call's folder.
    pub fn prepare(&self, cwd: &Path) -> Result<CallBox, SandboxError> {
        self.prepare_with(cwd, &self.layers)
    }

    fn prepare_with(&self, cwd: &Path, layers: &Layers) -> Result<CallBox, SandboxError> {
        let mut call = CallBox::default();
        if self.mode == Mode::Off {
            return Ok(call);
        }
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tmp = self.tmp_root.join(format!("tmp-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&self.tmp_root)
            .and_then(|_| {
                use std::os::unix::fs::DirBuilderExt;
                std::fs::DirBuilder::new().mode(0o700).create(&tmp)
            })
            .map_err(|source| SandboxError::TempFolder {
                path: tmp.clone(),
                source,
            })?;
        call.tmp = Some(tmp.clone());
        if layers.landlock {
            let mut writable = vec![tmp];
            if self.mode == Mode::WorkspaceWrite {
                writable.push(cwd.to_path_buf());
                writable.extend(self.writable.iter().cloned());
            }
            call.landlock = landlock::ruleset(&writable)?;
            if call.landlock.is_none() {
                return Err(SandboxError::LandlockGone);
            }
        }
        if layers.cgroup {
            if let Some((root, max)) = &self.pids {
                call.cgroup = Some(root.make(*max)?);
            }
        }
        call.layers = *layers;
        Ok(call)
    }

    /// The spawn's view of `call`: the steps, and fds borrowed from `call`.
    pub fn confine<'a>(&'a self, call: &'a CallBox) -> Option<Confine<'a>> {
        if self.mode == Mode::Off {
            return None;
        }
        let l = &call.layers;
        let mut setup = SetupSpec::default();
        let mut namespaces = 0;
        if l.user_ns {
            namespaces |= libc::CLONE_NEWUSER;
            if let Some(maps) = &self.id_maps {
                setup.id_maps = maps.to_vec();
            }
        }
        if l.pid_ns {
            namespaces |= libc::CLONE_NEWPID;
            setup.pid_ns = true;
        }
        if l.mount_ns {
            namespaces |= libc::CLONE_NEWNS;
            setup.mount_private = true;
            setup.mount_proc = l.proc && l.pid_ns;
            setup.hidden = self.hidden.iter().take(MAX_HIDDEN).cloned().collect();
            setup.read_only = self.read_only.iter().take(MAX_READ_ONLY).cloned().collect();
            setup.minimal_dev = l.dev;
        }
        if l.net_ns {
            namespaces |= libc::CLONE_NEWNET;
            if l.net_proxy {
                setup.proxy_port = crate::netproxy::PORT;
            }
        }
        setup.no_new_privs = l.no_new_privs;
        setup.drop_caps = l.caps;
        setup.landlock = call.landlock.is_some();
        setup.cgroup = call.cgroup.as_ref().and_then(|g| g.procs()).is_some();
        if l.seccomp {
            setup.seccomp = self.seccomp.clone();
        }
        Some(Confine {
            namespaces,
            setup,
            landlock: call.landlock.as_ref().map(|fd| fd.as_fd()),
            cgroup_procs: call.cgroup.as_ref().and_then(|g| g.procs()).map(|f| f.as_fd()),
        })
    }
}

/// One call's sandbox resources. Drop it only once the command's tree is
/// gone: it removes the private temp folder and the cgroup.
#[derive(Debug, Default)]
pub struct CallBox {
    layers: Layers,
    landlock: Option<OwnedFd>,
    cgroup: Option<PidsGroup>,
    tmp: Option<PathBuf>,
}

impl CallBox {
    /// The private temp folder (the command's TMPDIR), if any.
    pub fn tmp(&self) -> Option<&Path> {
        self.tmp.as_deref()
    }

    /// The reaper of this call (a pidfd): its pids cgroup, if any, is
    /// removed only once the reaper has exited.
    pub fn watch_reaper(&mut self, reaper: std::os::fd::BorrowedFd<'_>) {
        if let Some(cgroup) = &mut self.cgroup {
            cgroup.watch(reaper);
        }
    }
}

impl Drop for CallBox {
    fn drop(&mut self) {
        self.landlock = None;
        self.cgroup = None;
        if let Some(tmp) = self.tmp.take() {
            let _ = std::fs::remove_dir_all(tmp);
        }
    }
}
