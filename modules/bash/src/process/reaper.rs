//! The reaper: a process that stays between the host and the shell, so that
//! no process a command starts can leave the tree, even after `setsid`,
//! `nohup … &` or a double fork.
//!
//! The reaper is a fork of the [reaper program](super::program), a small
//! zygote the host starts once per mount with `posix_spawn` (the host is
//! never forked): nothing it does can touch the host's heap, locks or
//! thread-locals. Its supervision loop still makes only raw system calls on
//! data prepared up front, never allocates and cannot panic (no indexing
//! that could fail, no `unwrap`), because the shell's child runs on its
//! memory until `execve` and because a reaper that died of a panic would let
//! its tree outlive the call.
//!
//! With the sandbox's PID namespace the reaper is PID 1 of a fresh
//! namespace: the kernel makes it the reaper of every orphan, refuses the
//! command's signals to it, and kills everything in the namespace when it
//! dies. Without it, the reaper is a child subreaper
//! (`PR_SET_CHILD_SUBREAPER`) and walks `/proc` to find its descendants.
//!
//! The reaper first sets up the sandbox steps that need privileges the
//! command must not keep (user-namespace id maps, a private mount table with
//! its own `/proc` and the hidden paths covered, the pids cgroup), then
//! starts the shell the way `posix_spawn` does: a `CLONE_VM | CLONE_VFORK`
//! child that enters its own process group, applies rlimits,
//! `no_new_privs`, the Landlock domain and the seccomp filter, and calls
//! `execve` while the reaper waits.
//!
//! Protocol with the host (fds passed to the zygote with `SCM_RIGHTS`, see
//! [`launch`](super::launch), and moved into place by [`main`]):
//! - fd 0, 1, 2: the shell's stdin (/dev/null), stdout and stderr pipes;
//! - fd 3: status socket: the shell's 4-byte wait status when it exits;
//!   [`DONE`] when no process of the tree is left, and EOF when the reaper
//!   exits right after (a socket because, unlike a pipe, it cannot be
//!   reopened through `/proc/<pid>/fd`);
//! - fd 4: control socket: `T` sends SIGTERM (and SIGCONT) to the whole tree,
//!   `K` SIGKILLs it until nothing is left; EOF (the host died) counts as `K`.
//!   With a network allowlist, the reaper first sends the host one byte on
//!   it with the proxy's listening socket attached (see
//!   [`netbridge`](super::netbridge)).
//!
//! fds 3 to 6 are close-on-exec: the command never inherits them, and the
//! reaper is not dumpable (but for the moment it writes its user
//! namespace's id maps, before the shell exists), so its `/proc/<pid>/fd`
//! is closed to processes of the same (non-root) user; inside the sandbox,
//! Landlock's ptrace restriction closes it to root too.

use std::ffi::{c_char, c_int, c_void};

use super::raw::{self, sys};

/// Written on the status pipe instead of a wait status when the shell could
/// not be started.
pub const FORK_FAILED: u32 = u32::MAX;

/// Written on the status pipe after the shell's status when processes it
/// left behind had to be signalled.
pub const LEFTOVERS: u32 = u32::MAX - 1;

/// Written on the status socket, right after the shell's status when it is
/// already known, once every process of the tree is gone and just before
/// the reaper exits. The host need not wait for the reaper's own exit,
/// whose teardown of its memory took about 0.1 ms of `bash true`.
pub const DONE: u32 = u32::MAX - 2;

/// Written on the status pipe, or-ed with a [`Step`] number, when a sandbox
/// step failed: the command was not run.
pub const SETUP_FAILED: u32 = 0xFFFF_FF00;

/// The sandbox steps, in the order the reaper and the shell's child take
/// them; the number travels in a [`SETUP_FAILED`] word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Step {
    /// Writing the user namespace's uid/gid maps.
    IdMaps = 1,
    /// Making the new mount table private.
    MountPrivate = 2,
    /// Mounting the namespace's own `/proc`.
    Proc = 3,
    /// Covering a hidden path.
    Hidden = 4,
    /// Joining the pids cgroup.
    Cgroup = 5,
    /// `PR_SET_NO_NEW_PRIVS`.
    NoNewPrivs = 6,
    /// `landlock_restrict_self`.
    Landlock = 7,
    /// Installing the seccomp filter.
    Seccomp = 8,
    /// Dropping every capability.
    Caps = 9,
    /// Starting the reaper in its namespaces (`clone` refused).
    Clone = 10,
    /// Replacing `/dev` with the minimal one.
    Dev = 11,
    /// Bringing up loopback and handing the host the proxy's listening
    /// socket (see [`netbridge`](super::netbridge)).
    NetProxy = 12,
}

impl Step {
    /// The step with this number.
    pub fn from_u8(n: u8) -> Option<Step> {
        Some(match n {
            1 => Step::IdMaps,
            2 => Step::MountPrivate,
            3 => Step::Proc,
            4 => Step::Hidden,
            5 => Step::Cgroup,
            6 => Step::NoNewPrivs,
            7 => Step::Landlock,
            8 => Step::Seccomp,
            9 => Step::Caps,
            10 => Step::Clone,
            11 => Step::Dev,
            12 => Step::NetProxy,
            _ => return None,
        })
    }
}

const STATUS_FD: c_int = 3;
const CONTROL_FD: c_int = 4;
const LANDLOCK_FD: c_int = 5;
const CGROUP_FD: c_int = 6;
/// fds moved into place: stdin, stdout, stderr, status, control, landlock,
/// cgroup.procs.
pub const FD_COUNT: usize = 7;

/// Most hidden paths a plan may list.
pub const MAX_HIDDEN: usize = 32;

/// Most files bound read-only over themselves.
pub const MAX_READ_ONLY: usize = 32;

/// Signals the reaper ignores, so that a terminal's or a process group's
/// signals do not end it before its tree; the shell gets them back.
pub(super) const IGNORED: [c_int; 11] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGPIPE,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
    libc::SIGTSTP,
    libc::SIGTTIN,
    libc::SIGTTOU,
];

/// A file to write during setup (the user namespace's maps).
#[derive(Clone, Copy)]
pub struct WriteFile {
    /// NUL-terminated path.
    pub path: *const c_char,
    /// Bytes to write.
    pub data: *const u8,
    /// How many.
    pub len: usize,
}

/// A path the command must see empty: a directory gets an empty read-only
/// tmpfs over it, a file gets `/dev/null` bound over it.
#[derive(Clone, Copy)]
pub struct Hidden {
    /// NUL-terminated path.
    pub path: *const c_char,
    /// Whether it is a directory.
    pub dir: bool,
}

/// The sandbox steps to take, prepared before the clone (all pointers point
/// into data owned by the caller).
#[derive(Clone, Copy)]
pub struct Setup {
    /// The reaper is PID 1 of a new PID namespace.
    pub pid_ns: bool,
    /// setgroups, uid_map, gid_map of a new user namespace (when not root).
    pub id_maps: Option<[WriteFile; 3]>,
    /// In a new mount namespace: make every mount private first.
    pub mount_private: bool,
    /// Mount a fresh `/proc` (needs the PID and mount namespaces).
    pub mount_proc: bool,
    /// Paths to cover.
    pub hidden: [Hidden; MAX_HIDDEN],
    /// How many of `hidden` are used.
    pub hidden_count: usize,
    /// NUL-terminated paths to bind read-only over themselves.
    pub read_only: [*const c_char; MAX_READ_ONLY],
    /// How many of `read_only` are used.
    pub read_only_count: usize,
    /// Write "0" to the cgroup.procs fd (fd slot 6).
    pub cgroup: bool,
    /// Set `PR_SET_NO_NEW_PRIVS` in the shell's child.
    pub no_new_privs: bool,
    /// Enter the Landlock domain whose ruleset is fd slot 5.
    pub landlock: bool,
    /// Drop every capability (bounding set included) after the setup.
    pub drop_caps: bool,
    /// Replace `/dev` with a minimal one (in the new mount namespace).
    pub minimal_dev: bool,
    /// The seccomp BPF program (empty: none).
    pub seccomp: *const libc::sock_filter,
    /// Its length in instructions.
    pub seccomp_len: u16,
    /// Hand the host a socket listening on `127.0.0.1:proxy_port` in the
    /// new network namespace (0: none).
    pub proxy_port: u16,
}

impl Setup {
    /// No sandbox at all.
    pub fn none() -> Setup {
        Setup {
            pid_ns: false,
            id_maps: None,
            mount_private: false,
            mount_proc: false,
            hidden: [Hidden {
                path: std::ptr::null(),
                dir: false,
            }; MAX_HIDDEN],
            hidden_count: 0,
            read_only: [std::ptr::null(); MAX_READ_ONLY],
            read_only_count: 0,
            cgroup: false,
            no_new_privs: false,
            landlock: false,
            drop_caps: false,
            minimal_dev: false,
            seccomp: std::ptr::null(),
            seccomp_len: 0,
            proxy_port: 0,
        }
    }
}

/// Everything the reaper needs, built by the reaper program from its
/// [`Spec`](super::spec::Spec).
pub struct Prepared {
    /// The shell to execute (a NUL-terminated path).
    pub shell: *const c_char,
    /// NULL-terminated argv.
    pub argv: *const *const c_char,
    /// NULL-terminated environment.
    pub envp: *const *const c_char,
    /// Working directory (NUL-terminated).
    pub cwd: *const c_char,
    /// Resource limits to apply to the shell.
    pub rlimits: [(c_int, u64); 8],
    /// How many of `rlimits` are set.
    pub rlimit_count: usize,
    /// Source fds, in the order stdin, stdout, stderr, status, control,
    /// landlock ruleset, cgroup.procs (-1 when unused).
    pub fds: [c_int; FD_COUNT],
    /// Top of the stack the shell's child runs on until `execve`.
    pub shell_stack: *mut u8,
    /// The sandbox steps.
    pub setup: Setup,
}

/// The kernel's `struct sigaction` (the same layout on x86_64 and aarch64).
#[repr(C)]
struct KernelSigaction {
    handler: usize,
    flags: u64,
    restorer: usize,
    mask: u64,
}

/// The kernel's `struct rlimit64`.
#[repr(C)]
struct Rlimit64 {
    cur: u64,
    max: u64,
}

const SIGSET_SIZE: usize = 8;

/// Every signal to its default disposition, then `IGNORED` ignored: what
/// each reaper needs before it lets a signal through. Done once by the
/// reaper program at its start, since every reaper is a fork of it and
/// inherits its dispositions (the program was spawned with every signal at
/// its default, but Rust's runtime then ignores SIGPIPE and catches SIGSEGV
/// and SIGBUS).
///
/// # Safety
/// Every signal must be blocked, so no handler runs while they change.
pub(super) unsafe fn reset_dispositions() {
    let mut sig = 1;
    while sig <= 64 {
        if sig != libc::SIGKILL && sig != libc::SIGSTOP {
            // SAFETY: the caller blocked every signal; see `# Safety`.
            unsafe { set_handler(sig, libc::SIG_DFL) };
        }
        sig += 1;
    }
    for sig in IGNORED {
        // SAFETY: as above.
        unsafe { set_handler(sig, libc::SIG_IGN) };
    }
}

/// The reaper's entry point, in the reaper program (or its child in new
/// namespaces). Never returns.
///
/// # Safety
/// `arg` must point to a [`Prepared`] whose pointers stay valid for the
/// life of the process, the caller must have blocked every signal, and the
/// process must be single-threaded (the shell's child shares its memory
/// until `execve`).
pub unsafe extern "C" fn main(arg: *mut c_void) -> ! {
    // SAFETY: the caller passes a valid `Prepared`.
    let p = unsafe { &*(arg as *const Prepared) };
    // SAFETY: everything below is raw system calls on `p`'s data and locals.
    unsafe { setup_and_run(p) }
}

/// # Safety
/// As for [`main`].
unsafe fn setup_and_run(p: &Prepared) -> ! {
    // SAFETY (whole function): raw system calls on data the caller vouches
    // for and on locals; see the module docs.
    unsafe {
        // Move the fds to 0..FD_COUNT without clobbering one another: first
        // to fresh numbers >= 16, then into place.
        let mut tmp = [-1 as c_int; FD_COUNT];
        for (slot, fd) in tmp.iter_mut().zip(p.fds.iter()) {
            if *fd < 0 {
                continue;
            }
            let t = sys!(libc::SYS_fcntl, *fd, libc::F_DUPFD_CLOEXEC, 16);
            if t < 0 {
                exit(120);
            }
            *slot = t as c_int;
        }
        for (i, t) in tmp.iter().enumerate() {
            if *t < 0 {
                // An unused slot (no Landlock ruleset, no cgroup): whatever
                // the host had at this number (another command's pipe, say)
                // must not stay open here, close_range starts past it.
                sys!(libc::SYS_close, i);
                continue;
            }
            // 0, 1, 2 are what the shell inherits; the rest close on exec.
            let flags = if i < 3 { 0 } else { libc::O_CLOEXEC };
            if sys!(libc::SYS_dup3, *t, i, flags) < 0 {
                exit(121);
            }
        }
        // Nothing else of the host's may stay open here: another command's
        // pipe kept open by this process would hang that command's reader.
        if sys!(libc::SYS_close_range, FD_COUNT, libc::c_uint::MAX, 0) != 0 {
            let mut fd = FD_COUNT as c_int;
            while fd < 65536 {
                sys!(libc::SYS_close, fd);
                fd += 1;
            }
        }

        // Signal dispositions come from the reaper program, which set
        // them once at its start (`reset_dispositions`): every signal at
        // its default but `IGNORED`. Setting them here again cost 64
        // system calls per command.
        sys!(libc::SYS_setsid);
        if !p.setup.pid_ns {
            sys!(libc::SYS_prctl, libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        }
        if let Err(step) = reaper_setup(&p.setup) {
            write_status(SETUP_FAILED | step as u32);
            exit(0);
        }
        // The reaper is a process of its own (never the host), so these
        // may use ordinary code; the shell inherits the result.
        // Needs CAP_NET_ADMIN in the namespace (bringing `lo` up): before
        // the capabilities go.
        if p.setup.proxy_port != 0 && super::netbridge::hand_over(p.setup.proxy_port, CONTROL_FD).is_err() {
            write_status(SETUP_FAILED | Step::NetProxy as u32);
            exit(0);
        }
        let ruleset = p.setup.landlock.then_some(LANDLOCK_FD);
        if p.setup.minimal_dev && super::devfs::make_minimal(ruleset).is_err() {
            write_status(SETUP_FAILED | Step::Dev as u32);
            exit(0);
        }
        if p.setup.drop_caps && !super::caps::drop_all() {
            write_status(SETUP_FAILED | Step::Caps as u32);
            exit(0);
        }
        // Never dumpable from here on (see `reaper_setup`'s id maps).
        sys!(libc::SYS_prctl, libc::PR_SET_DUMPABLE, 0, 0, 0, 0);

        let chld: u64 = 1 << (libc::SIGCHLD - 1);
        set_mask(chld);
        let sfd = sys!(
            libc::SYS_signalfd4,
            -1i32,
            &chld as *const u64,
            SIGSET_SIZE,
            libc::SFD_CLOEXEC | libc::SFD_NONBLOCK
        ) as c_int;

        let mut shell_arg = ShellArg { p, sfd, failed: 0 };
        // SAFETY: the reaper is single-threaded; the child shares its memory
        // only while the reaper is suspended (CLONE_VFORK) and makes raw
        // system calls on `shell_arg` until `execve` or `exit_group`.
        let shell = raw::clone_on(
            (libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD) as usize,
            p.shell_stack,
            exec_shell,
            (&mut shell_arg as *mut ShellArg).cast(),
        );
        if shell < 0 {
            write_status(FORK_FAILED);
            exit(0);
        }
        // The shell has its own copies of stdout and stderr; dropping ours
        // lets the host see EOF when the last process of the command closes
        // them, not only when the reaper has exited.
        sys!(libc::SYS_close, 1);
        sys!(libc::SYS_close, 2);
        // The child wrote `failed` before exiting (CLONE_VFORK: it is done
        // with our memory now). Volatile: the compiler cannot know it ran.
        let failed = std::ptr::read_volatile(&shell_arg.failed);
        if failed != 0 {
            let mut st: c_int = 0;
            sys!(libc::SYS_wait4, shell, &mut st as *mut c_int, 0, 0);
            write_status(SETUP_FAILED | failed as u32);
            exit(0);
        }
        supervise(shell as libc::pid_t, sfd, p.setup.pid_ns)
    }
}

/// The steps the reaper takes for the whole namespace before the shell
/// starts.
///
/// # Safety
/// As for [`main`].
unsafe fn reaper_setup(s: &Setup) -> Result<(), Step> {
    // SAFETY: raw system calls on NUL-terminated paths and buffers the
    // caller prepared.
    unsafe {
        if let Some(maps) = &s.id_maps {
            // A non-dumpable process's /proc/self/{setgroups,uid_map,gid_map}
            // belong to global root, which the new user namespace does not
            // map: as any user but root the writes fail (EACCES). The
            // zygote, and so every reaper, is non-dumpable; be dumpable for
            // the writes only. Meanwhile the reaper (PID 1 of a fresh
            // PID namespace, so no command can see it) is open to ptrace only
            // by processes of the same user outside, which can ptrace the
            // host itself anyway.
            sys!(libc::SYS_prctl, libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
            for w in maps {
                let fd = sys!(
                    libc::SYS_openat,
                    libc::AT_FDCWD,
                    w.path,
                    libc::O_WRONLY | libc::O_CLOEXEC,
                    0
                );
                if fd < 0 {
                    return Err(Step::IdMaps);
                }
                let n = sys!(libc::SYS_write, fd, w.data, w.len);
                sys!(libc::SYS_close, fd);
                if n != w.len as isize {
                    return Err(Step::IdMaps);
                }
            }
            sys!(libc::SYS_prctl, libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        }
        if s.mount_private
            && sys!(
                libc::SYS_mount,
                std::ptr::null::<c_char>(),
                c"/".as_ptr(),
                std::ptr::null::<c_char>(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null::<c_void>()
            ) != 0
        {
            return Err(Step::MountPrivate);
        }
        if s.mount_proc
            && sys!(
                libc::SYS_mount,
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                std::ptr::null::<c_void>()
            ) != 0
        {
            return Err(Step::Proc);
        }
        let mut i = 0;
        while i < s.hidden_count && i < MAX_HIDDEN {
            let h = s.hidden[i];
            let r = if h.dir {
                sys!(
                    libc::SYS_mount,
                    c"tmpfs".as_ptr(),
                    h.path,
                    c"tmpfs".as_ptr(),
                    libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    c"size=4k,mode=0555".as_ptr()
                )
            } else {
                sys!(
                    libc::SYS_mount,
                    c"/dev/null".as_ptr(),
                    h.path,
                    std::ptr::null::<c_char>(),
                    libc::MS_BIND,
                    std::ptr::null::<c_void>()
                )
            };
            if r != 0 {
                return Err(Step::Hidden);
            }
            i += 1;
        }
        let mut i = 0;
        while i < s.read_only_count && i < MAX_READ_ONLY {
            let path = s.read_only[i];
            let bound = sys!(
                libc::SYS_mount,
                path,
                path,
                std::ptr::null::<c_char>(),
                libc::MS_BIND,
                std::ptr::null::<c_void>()
            );
            if bound != 0
                || sys!(
                    libc::SYS_mount,
                    std::ptr::null::<c_char>(),
                    path,
                    std::ptr::null::<c_char>(),
                    libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY,
                    std::ptr::null::<c_void>()
                ) != 0
            {
                return Err(Step::Hidden);
            }
            i += 1;
        }
        if s.cgroup && sys!(libc::SYS_write, CGROUP_FD, c"0".as_ptr(), 1) != 1 {
            return Err(Step::Cgroup);
        }
        if s.cgroup {
            sys!(libc::SYS_close, CGROUP_FD);
        }
        Ok(())
    }
}

/// What the shell's child gets from the reaper.
struct ShellArg<'a> {
    p: &'a Prepared,
    sfd: c_int,
    /// Set by the child to the [`Step`] that failed before it exits.
    failed: u8,
}

/// The shell's child: runs on the reaper's memory while the reaper waits,
/// until `execve` replaces it.
///
/// # Safety
/// `arg` must point to a live [`ShellArg`]; the caller is suspended until
/// this child calls `execve` or exits (`CLONE_VFORK`).
unsafe extern "C" fn exec_shell(arg: *mut c_void) -> ! {
    // SAFETY: the reaper passes its `ShellArg` and waits (CLONE_VFORK).
    let a = unsafe { &mut *(arg as *mut ShellArg<'_>) };
    let p = a.p;
    // SAFETY (block): raw system calls on the reaper's prepared data.
    unsafe {
        for sig in IGNORED {
            set_handler(sig, libc::SIG_DFL);
        }
        set_mask(0);
        sys!(libc::SYS_setpgid, 0, 0);
        sys!(libc::SYS_close, STATUS_FD);
        sys!(libc::SYS_close, CONTROL_FD);
        if a.sfd >= 0 {
            sys!(libc::SYS_close, a.sfd);
        }
        let mut i = 0;
        while i < p.rlimit_count && i < p.rlimits.len() {
            let (resource, value) = p.rlimits[i];
            let lim = Rlimit64 {
                cur: value,
                max: value,
            };
            // A hard limit above the current one is refused; fall back to soft.
            if sys!(libc::SYS_prlimit64, 0, resource, &lim as *const Rlimit64, 0) != 0 {
                let mut cur = Rlimit64 { cur: 0, max: 0 };
                if sys!(libc::SYS_prlimit64, 0, resource, 0, &mut cur as *mut Rlimit64) == 0 {
                    let soft = Rlimit64 {
                        cur: value.min(cur.max),
                        max: cur.max,
                    };
                    sys!(libc::SYS_prlimit64, 0, resource, &soft as *const Rlimit64, 0);
                }
            }
            i += 1;
        }
        if sys!(libc::SYS_chdir, p.cwd) != 0 {
            say(b"toolhost-bash: cannot enter the working directory\n");
            exit(126);
        }
        let s = &p.setup;
        if s.no_new_privs && sys!(libc::SYS_prctl, libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            fail(a, Step::NoNewPrivs);
        }
        if s.landlock {
            let r = sys!(libc::SYS_landlock_restrict_self, LANDLOCK_FD, 0);
            sys!(libc::SYS_close, LANDLOCK_FD);
            if r != 0 {
                fail(a, Step::Landlock);
            }
        }
        if s.seccomp_len > 0 {
            let prog = libc::sock_fprog {
                len: s.seccomp_len,
                filter: s.seccomp.cast_mut(),
            };
            if sys!(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0,
                &prog as *const libc::sock_fprog
            ) != 0
            {
                fail(a, Step::Seccomp);
            }
        }
        sys!(libc::SYS_execve, p.shell, p.argv, p.envp);
        say(b"toolhost-bash: cannot execute the shell\n");
        exit(127)
    }
}

/// Records the failed step where the waiting reaper finds it, and exits.
///
/// # Safety
/// Only from the shell's child (see [`exec_shell`]).
unsafe fn fail(a: &mut ShellArg<'_>, step: Step) -> ! {
    // SAFETY: the reaper is suspended until we exit; volatile so the store
    // is not elided before `exit_group`.
    unsafe {
        std::ptr::write_volatile(&mut a.failed, step as u8);
        exit(125)
    }
}

/// Reaps every child (adopted orphans included), reports the shell's status
/// and carries out the host's T/K orders until nothing is left.
///
/// # Safety
/// As for [`main`].
unsafe fn supervise(shell: libc::pid_t, sfd: c_int, pid_ns: bool) -> ! {
    // SAFETY (whole function): raw system calls on locals.
    unsafe { supervise_inner(shell, sfd, pid_ns) }
}

/// # Safety
/// As for [`main`].
unsafe fn supervise_inner(shell: libc::pid_t, sfd: c_int, pid_ns: bool) -> ! {
    // SAFETY: the caller upholds this function's contract; see `# Safety`.
    unsafe {
        let me = sys!(libc::SYS_getpid) as libc::pid_t;
        let mut shell_done = false;
        let mut control_open = true;
        // 0 running, 1 terminating, 2 killing.
        let mut mode = 0u8;
        let mut told_leftovers = false;
        loop {
            // The shell's status, held back a moment so that it and DONE
            // reach the host in one write (one wake-up) when the shell was
            // the last process.
            let mut pending: Option<u32> = None;
            loop {
                let mut st: c_int = 0;
                let r = sys!(libc::SYS_wait4, -1i32, &mut st as *mut c_int, libc::WNOHANG, 0);
                if r > 0 {
                    if r as libc::pid_t == shell && !shell_done {
                        pending = Some(st as u32);
                        shell_done = true;
                    }
                    continue;
                }
                if r == -(libc::EINTR as isize) {
                    continue;
                }
                if r != 0 && shell_done {
                    // ECHILD: nobody is left.
                    write_words(pending, DONE);
                    exit(0);
                }
                break;
            }
            if let Some(status) = pending {
                write_status(status);
            }
            let found = match mode {
                1 => {
                    signal_all(pid_ns, me, shell, libc::SIGCONT);
                    signal_all(pid_ns, me, shell, libc::SIGTERM)
                }
                2 => signal_all(pid_ns, me, shell, libc::SIGKILL),
                _ => 0,
            };
            if found > 0 && shell_done && !told_leftovers {
                write_status(LEFTOVERS);
                told_leftovers = true;
            }
            let mut fds = [
                libc::pollfd {
                    fd: sfd,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: if control_open { CONTROL_FD } else { -1 },
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // Without a signalfd, fall back to polling for dead children.
            let tick = libc::timespec {
                tv_sec: 0,
                tv_nsec: 20_000_000,
            };
            let timeout: *const libc::timespec = if mode == 2 || sfd < 0 {
                &tick
            } else {
                std::ptr::null()
            };
            sys!(libc::SYS_ppoll, fds.as_mut_ptr(), 2, timeout, 0, SIGSET_SIZE);
            if fds[0].revents != 0 {
                let mut buf = [0u8; 1024];
                while sys!(libc::SYS_read, sfd, buf.as_mut_ptr(), buf.len()) > 0 {}
            }
            if control_open && fds[1].revents != 0 {
                let mut b = 0u8;
                let n = sys!(libc::SYS_read, CONTROL_FD, &mut b as *mut u8, 1);
                if n == 1 {
                    if b == b'K' {
                        mode = 2;
                    } else if b == b'T' && mode == 0 {
                        mode = 1;
                    }
                } else if n != -(libc::EINTR as isize) {
                    // The host is gone: nobody will ever read our output.
                    sys!(libc::SYS_close, CONTROL_FD);
                    control_open = false;
                    mode = 2;
                }
            }
        }
    }
}

/// Sends `sig` to every process of the tree: in a PID namespace, where the
/// reaper is init, `kill(-1)` reaches exactly the namespace's other
/// processes; otherwise the tree is walked through `/proc`. Returns how
/// many were found (in a namespace: 1 if any).
///
/// # Safety
/// Only in the reaper or the shell's child: raw system calls, no allocation (see the module docs).
unsafe fn signal_all(pid_ns: bool, me: libc::pid_t, shell: libc::pid_t, sig: c_int) -> usize {
    // SAFETY: the caller upholds this function's contract; see `# Safety`.
    unsafe {
        // `kill(-1)` is only confined to the tree when we really are init
        // of our own namespace.
        if pid_ns && me == 1 {
            return usize::from(sys!(libc::SYS_kill, -1i32, sig) == 0);
        }
        signal_tree(me, shell, sig)
    }
}

/// Sends `sig` to the shell's process group and to every descendant of the
/// reaper, found through /proc/<pid>/task/<pid>/children. Returns how many
/// descendants it found.
///
/// # Safety
/// Only in the reaper or the shell's child: raw system calls, no allocation (see the module docs).
unsafe fn signal_tree(me: libc::pid_t, shell: libc::pid_t, sig: c_int) -> usize {
    // SAFETY: the caller upholds this function's contract; see `# Safety`.
    unsafe {
        sys!(libc::SYS_kill, -shell, sig);
        let mut queue = [0 as libc::pid_t; 4096];
        let mut len = 1usize;
        let mut at = 0usize;
        let mut found = 0usize;
        queue[0] = me;
        while at < len {
            let parent = queue[at];
            at += 1;
            for_each_child(parent, |child| {
                sys!(libc::SYS_kill, child, sig);
                found += 1;
                if len < queue.len() {
                    queue[len] = child;
                    len += 1;
                }
            });
        }
        found
    }
}

/// Calls `f` with each child pid of `pid`'s main thread.
///
/// # Safety
/// Only in the reaper or the shell's child: raw system calls, no allocation (see the module docs).
unsafe fn for_each_child(pid: libc::pid_t, mut f: impl FnMut(libc::pid_t)) {
    // SAFETY: the caller upholds this function's contract; see `# Safety`.
    unsafe {
        let mut path = [0u8; 64];
        let mut n = put(&mut path, 0, b"/proc/");
        n = put_num(&mut path, n, pid);
        n = put(&mut path, n, b"/task/");
        n = put_num(&mut path, n, pid);
        n = put(&mut path, n, b"/children\0");
        if n == 0 || path[n - 1] != 0 {
            return;
        }
        let fd = sys!(
            libc::SYS_openat,
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
            0
        );
        if fd < 0 {
            return;
        }
        let mut buf = [0u8; 4096];
        let mut current: libc::pid_t = 0;
        let mut in_number = false;
        loop {
            let r = sys!(libc::SYS_read, fd, buf.as_mut_ptr(), buf.len());
            if r <= 0 {
                break;
            }
            let mut i = 0;
            while i < r as usize && i < buf.len() {
                let c = buf[i];
                if c.is_ascii_digit() {
                    current = current
                        .saturating_mul(10)
                        .saturating_add((c - b'0') as libc::pid_t);
                    in_number = true;
                } else if in_number {
                    f(current);
                    current = 0;
                    in_number = false;
                }
                i += 1;
            }
        }
        if in_number {
            f(current);
        }
        sys!(libc::SYS_close, fd);
    }
}

fn put(buf: &mut [u8; 64], at: usize, bytes: &[u8]) -> usize {
    let mut n = at;
    for b in bytes {
        if n >= buf.len() {
            return 0;
        }
        buf[n] = *b;
        n += 1;
    }
    n
}

fn put_num(buf: &mut [u8; 64], at: usize, value: libc::pid_t) -> usize {
    if at == 0 {
        return 0;
    }
    let mut digits = [0u8; 12];
    let mut v = value.max(0) as u32;
    let mut d = 0;
    loop {
        digits[d] = b'0' + (v % 10) as u8;
        v /= 10;
        d += 1;
        if v == 0 || d >= digits.len() {
            break;
        }
    }
    let mut n = at;
    while d > 0 {
        d -= 1;
        if n >= buf.len() {
            return 0;
        }
        buf[n] = digits[d];
        n += 1;
    }
    n
}

///
/// # Safety
/// Only in the reaper program, a reaper or the shell's child, with every
/// signal blocked: raw system calls, no allocation (see the module docs).
unsafe fn set_handler(sig: c_int, handler: libc::sighandler_t) {
    // SAFETY: the caller upholds this function's contract; see `# Safety`.
    unsafe {
        let sa = KernelSigaction {
            handler,
            flags: 0,
            restorer: 0,
            mask: 0,
        };
        sys!(
            libc::SYS_rt_sigaction,
            sig,
            &sa as *const KernelSigaction,
            0,
            SIGSET_SIZE
        );
    }
}

///
/// # Safety
/// Only in the reaper or the shell's child: raw system calls, no allocation (see the module docs).
unsafe fn set_mask(mask: u64) {
    // SAFETY: the caller upholds this function's contract; see `# Safety`.
    unsafe {
        sys!(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &mask as *const u64,
            0,
            SIGSET_SIZE
        );
    }
}

///
/// # Safety
/// Only in the reaper or the shell's child: raw system calls, no allocation (see the module docs).
unsafe fn write_status(status: u32) {
    // SAFETY: the caller upholds this function's contract; see `# Safety`.
    unsafe {
        let bytes = status.to_ne_bytes();
        sys!(libc::SYS_write, STATUS_FD, bytes.as_ptr(), bytes.len());
    }
}

/// Writes `first` (if any) and `second` in one write.
///
/// # Safety
/// Only in the reaper: raw system calls, no allocation (see the module docs).
unsafe fn write_words(first: Option<u32>, second: u32) {
    let mut bytes = [0u8; 8];
    let mut len = 0;
    for word in first.into_iter().chain(Some(second)) {
        let w = word.to_ne_bytes();
        let mut i = 0;
        while i < 4 && len < bytes.len() {
            bytes[len] = w[i];
            len += 1;
            i += 1;
        }
    }
    // SAFETY: the caller upholds this function's contract; see `# Safety`.
    unsafe {
        sys!(libc::SYS_write, STATUS_FD, bytes.as_ptr(), len);
    }
}

///
/// # Safety
/// Only in the reaper or the shell's child: raw system calls, no allocation (see the module docs).
unsafe fn say(msg: &[u8]) {
    // SAFETY: the caller upholds this function's contract; see `# Safety`.
    unsafe {
        sys!(libc::SYS_write, 2, msg.as_ptr(), msg.len());
    }
}

///
/// # Safety
/// Only in the reaper or the shell's child: raw system calls, no allocation (see the module docs).
unsafe fn exit(code: c_int) -> ! {
    // SAFETY: the caller upholds this function's contract; see `# Safety`.
    unsafe {
        loop {
            sys!(libc::SYS_exit_group, code);
        }
    }
}
