//! The reaper: a child that stays between the host and the shell as a child
//! subreaper, so that no process a command starts can leave the tree, even
//! after `setsid`, `nohup … &` or a double fork.
//!
//! The reaper shares the host's memory (`CLONE_VM`, see [`raw`](super::raw))
//! and runs on its own stack. It may therefore only make raw system calls on
//! data prepared before the clone: no libc wrappers, no allocation, no
//! locks, no panics, and `exit_group` at the end. It starts the shell the way
//! `posix_spawn` does: a `CLONE_VM | CLONE_VFORK` child that sets up and calls
//! `execve` while the reaper waits.
//!
//! Protocol with the host (fds fixed by [`main`]):
//! - fd 0, 1, 2: the shell's stdin (/dev/null), stdout and stderr pipes;
//! - fd 3: status pipe: the shell's 4-byte wait status when it exits; EOF when
//!   the reaper exits, i.e. when no process of the tree is left;
//! - fd 4: control socket: `T` sends SIGTERM (and SIGCONT) to the whole tree,
//!   `K` SIGKILLs it until nothing is left; EOF (the host died) counts as `K`.

use std::ffi::{c_char, c_int, c_void};

use super::raw::{self, sys};

/// Written on the status pipe instead of a wait status when the shell could
/// not be started.
pub const FORK_FAILED: u32 = u32::MAX;

/// Written on the status pipe after the shell's status when processes it
/// left behind had to be signalled.
pub const LEFTOVERS: u32 = u32::MAX - 1;

const STATUS_FD: c_int = 3;
const CONTROL_FD: c_int = 4;

/// Signals the reaper ignores, so that a terminal's or a process group's
/// signals do not end it before its tree; the shell gets them back.
const IGNORED: [c_int; 11] = [
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

/// Everything the reaper needs, prepared before the clone and kept alive
/// (with the stacks) until the reaper has been reaped.
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
    /// Source fds, in the order stdin, stdout, stderr, status, control.
    pub fds: [c_int; 5],
    /// Top of the stack the shell's child runs on until `execve`.
    pub shell_stack: *mut u8,
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

/// The reaper's entry point, run by `clone`. Never returns.
///
/// # Safety
/// `arg` must point to a [`Prepared`] whose pointers stay valid for the
/// reaper's whole life, and the caller must have blocked every signal.
pub unsafe extern "C" fn main(arg: *mut c_void) -> ! {
    let p = &*(arg as *const Prepared);
    // Move the five fds to 0..=4 without clobbering one another: first to
    // fresh numbers >= 10, then into place.
    let mut tmp = [0 as c_int; 5];
    for (i, fd) in p.fds.iter().enumerate() {
        let t = sys!(libc::SYS_fcntl, *fd, libc::F_DUPFD_CLOEXEC, 10);
        if t < 0 {
            exit(120);
        }
        tmp[i] = t as c_int;
    }
    for (i, t) in tmp.iter().enumerate() {
        // Without O_CLOEXEC: these five are what the shell inherits.
        if sys!(libc::SYS_dup3, *t, i, 0) < 0 {
            exit(121);
        }
    }
    // Nothing else of the host's may stay open here: another command's pipe
    // kept open by this process would hang that command's reader.
    if sys!(libc::SYS_close_range, 5, libc::c_uint::MAX, 0) != 0 {
        let mut fd = 5;
        while fd < 65536 {
            sys!(libc::SYS_close, fd);
            fd += 1;
        }
    }

    // Handlers copied from the host point into its code: drop them all
    // before any signal is let through.
    let mut sig = 1;
    while sig <= 64 {
        if sig != libc::SIGKILL && sig != libc::SIGSTOP {
            set_handler(sig, libc::SIG_DFL);
        }
        sig += 1;
    }
    for sig in IGNORED {
        set_handler(sig, libc::SIG_IGN);
    }
    sys!(libc::SYS_setsid);
    sys!(libc::SYS_prctl, libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);

    let chld: u64 = 1 << (libc::SIGCHLD - 1);
    set_mask(chld);
    let sfd = sys!(
        libc::SYS_signalfd4,
        -1i32,
        &chld as *const u64,
        SIGSET_SIZE,
        libc::SFD_CLOEXEC | libc::SFD_NONBLOCK
    ) as c_int;

    let mut shell_arg = ShellArg { p, sfd };
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
    supervise(shell as libc::pid_t, sfd)
}

/// What the shell's child gets from the reaper.
struct ShellArg<'a> {
    p: &'a Prepared,
    sfd: c_int,
}

/// The shell's child: runs on the reaper's memory while the reaper waits,
/// until `execve` replaces it.
unsafe extern "C" fn exec_shell(arg: *mut c_void) -> ! {
    let ShellArg { p, sfd } = &*(arg as *const ShellArg<'_>);
    for sig in IGNORED {
        set_handler(sig, libc::SIG_DFL);
    }
    set_mask(0);
    sys!(libc::SYS_setpgid, 0, 0);
    sys!(libc::SYS_close, STATUS_FD);
    sys!(libc::SYS_close, CONTROL_FD);
    if *sfd >= 0 {
        sys!(libc::SYS_close, *sfd);
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
    sys!(libc::SYS_execve, p.shell, p.argv, p.envp);
    say(b"toolhost-bash: cannot execute the shell\n");
    exit(127)
}

/// Reaps every child (adopted orphans included), reports the shell's status
/// and carries out the host's T/K orders until nothing is left.
unsafe fn supervise(shell: libc::pid_t, sfd: c_int) -> ! {
    let me = sys!(libc::SYS_getpid) as libc::pid_t;
    let mut shell_done = false;
    let mut control_open = true;
    // 0 running, 1 terminating, 2 killing.
    let mut mode = 0u8;
    let mut told_leftovers = false;
    loop {
        loop {
            let mut st: c_int = 0;
            let r = sys!(libc::SYS_wait4, -1i32, &mut st as *mut c_int, libc::WNOHANG, 0);
            if r > 0 {
                if r as libc::pid_t == shell && !shell_done {
                    write_status(st as u32);
                    shell_done = true;
                }
                continue;
            }
            if r == 0 {
                break;
            }
            if r == -(libc::EINTR as isize) {
                continue;
            }
            // ECHILD: nobody is left.
            if shell_done {
                exit(0);
            }
            break;
        }
        let found = match mode {
            1 => {
                signal_tree(me, shell, libc::SIGCONT);
                signal_tree(me, shell, libc::SIGTERM)
            }
            2 => signal_tree(me, shell, libc::SIGKILL),
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

/// Sends `sig` to the shell's process group and to every descendant of the
/// reaper, found through /proc/<pid>/task/<pid>/children. Returns how many
/// descendants it found.
unsafe fn signal_tree(me: libc::pid_t, shell: libc::pid_t, sig: c_int) -> usize {
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

/// Calls `f` with each child pid of `pid`'s main thread.
unsafe fn for_each_child(pid: libc::pid_t, mut f: impl FnMut(libc::pid_t)) {
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

unsafe fn set_handler(sig: c_int, handler: libc::sighandler_t) {
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

unsafe fn set_mask(mask: u64) {
    sys!(
        libc::SYS_rt_sigprocmask,
        libc::SIG_SETMASK,
        &mask as *const u64,
        0,
        SIGSET_SIZE
    );
}

unsafe fn write_status(status: u32) {
    let bytes = status.to_ne_bytes();
    sys!(libc::SYS_write, STATUS_FD, bytes.as_ptr(), bytes.len());
}

unsafe fn say(msg: &[u8]) {
    sys!(libc::SYS_write, 2, msg.as_ptr(), msg.len());
}

unsafe fn exit(code: c_int) -> ! {
    loop {
        sys!(libc::SYS_exit_group, code);
    }
}
