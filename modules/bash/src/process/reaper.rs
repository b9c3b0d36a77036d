//! The reaper: a forked copy of the host that stays between the host and the
//! shell as a child subreaper, so that no process a command starts can leave
//! the tree, even after `setsid`, `nohup … &` or a double fork.
//!
//! Everything here runs in the child of `fork()` in a multi-threaded process,
//! so it may only make async-signal-safe calls: raw syscalls on data prepared
//! before the fork, no allocation, no locks, no panics, and `_exit` at the end.
//!
//! Protocol with the host (fds fixed by [`run`]):
//! - fd 0, 1, 2: the shell's stdin (/dev/null), stdout and stderr pipes;
//! - fd 3: status pipe: the shell's 4-byte wait status when it exits; EOF when
//!   the reaper exits, i.e. when no process of the tree is left;
//! - fd 4: control socket: `T` sends SIGTERM (and SIGCONT) to the whole tree,
//!   `K` SIGKILLs it until nothing is left; EOF (the host died) counts as `K`.

use std::ffi::{c_char, c_int};

/// Written on the status pipe instead of a wait status when the shell could
/// not be forked.
pub const FORK_FAILED: u32 = u32::MAX;

/// Written on the status pipe after the shell's status when processes it
/// left behind had to be signalled.
pub const LEFTOVERS: u32 = u32::MAX - 1;

const STATUS_FD: c_int = 3;
const CONTROL_FD: c_int = 4;

/// Everything the reaper needs, prepared before the fork.
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
    pub rlimits: [(c_int, libc::rlim_t); 8],
    /// How many of `rlimits` are set.
    pub rlimit_count: usize,
    /// Source fds, in the order stdin, stdout, stderr, status, control.
    pub fds: [c_int; 5],
}

/// Runs the reaper in a freshly forked child. Never returns.
///
/// # Safety
/// Call only in the child of `fork()`, with `p` built before the fork and
/// every pointer in it valid.
pub unsafe fn run(p: &Prepared) -> ! {
    // Move the five fds to 0..=4 without clobbering one another: first to
    // fresh numbers >= 10, then into place.
    let mut tmp = [0 as c_int; 5];
    for (i, fd) in p.fds.iter().enumerate() {
        let t = libc::fcntl(*fd, libc::F_DUPFD_CLOEXEC, 10);
        if t < 0 {
            libc::_exit(120);
        }
        tmp[i] = t;
    }
    for (i, t) in tmp.iter().enumerate() {
        if libc::dup2(*t, i as c_int) < 0 {
            libc::_exit(121);
        }
    }
    // Nothing else of the host's may stay open here: another command's pipe
    // kept open by this process would hang that command's reader.
    if libc::syscall(
        libc::SYS_close_range,
        5 as libc::c_uint,
        libc::c_uint::MAX,
        0 as libc::c_uint,
    ) != 0
    {
        let mut fd = 5;
        while fd < 65536 {
            libc::close(fd);
            fd += 1;
        }
    }

    reset_signals();
    for sig in [
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
    ] {
        set_handler(sig, libc::SIG_IGN);
    }
    libc::setsid();
    libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0);

    let mut chld: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut chld);
    libc::sigaddset(&mut chld, libc::SIGCHLD);
    libc::sigprocmask(libc::SIG_SETMASK, &chld, std::ptr::null_mut());
    let sfd = libc::signalfd(-1, &chld, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);

    let shell = libc::fork();
    if shell == 0 {
        exec_shell(p, sfd);
    }
    if shell < 0 {
        write_status(FORK_FAILED);
        libc::_exit(0);
    }
    supervise(shell, sfd)
}

unsafe fn exec_shell(p: &Prepared, sfd: c_int) -> ! {
    let mut empty: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut empty);
    libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
    reset_signals();
    libc::setpgid(0, 0);
    libc::close(STATUS_FD);
    libc::close(CONTROL_FD);
    if sfd >= 0 {
        libc::close(sfd);
    }
    let mut i = 0;
    while i < p.rlimit_count && i < p.rlimits.len() {
        let (resource, value) = p.rlimits[i];
        let lim = libc::rlimit {
            rlim_cur: value,
            rlim_max: value,
        };
        // A hard limit above the current one is refused; fall back to soft.
        if libc::setrlimit(resource as _, &lim) != 0 {
            let mut cur: libc::rlimit = std::mem::zeroed();
            if libc::getrlimit(resource as _, &mut cur) == 0 {
                let soft = libc::rlimit {
                    rlim_cur: value.min(cur.rlim_max),
                    rlim_max: cur.rlim_max,
                };
                libc::setrlimit(resource as _, &soft);
            }
        }
        i += 1;
    }
    if libc::chdir(p.cwd) != 0 {
        say(b"toolhost-bash: cannot enter the working directory\n");
        libc::_exit(126);
    }
    libc::execve(p.shell, p.argv, p.envp);
    say(b"toolhost-bash: cannot execute the shell\n");
    libc::_exit(127)
}

/// Reaps every child (adopted orphans included), reports the shell's status
/// and carries out the host's T/K orders until nothing is left.
unsafe fn supervise(shell: libc::pid_t, sfd: c_int) -> ! {
    let me = libc::getpid();
    let mut shell_done = false;
    let mut control_open = true;
    // 0 running, 1 terminating, 2 killing.
    let mut mode = 0u8;
    let mut told_leftovers = false;
    loop {
        loop {
            let mut st: c_int = 0;
            let r = libc::waitpid(-1, &mut st, libc::WNOHANG);
            if r > 0 {
                if r == shell && !shell_done {
                    write_status(st as u32);
                    shell_done = true;
                }
                continue;
            }
            if r == 0 {
                break;
            }
            if errno() == libc::EINTR {
                continue;
            }
            // ECHILD: nobody is left.
            if shell_done {
                libc::_exit(0);
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
        let timeout = if mode == 2 || sfd < 0 { 20 } else { -1 };
        libc::poll(fds.as_mut_ptr(), 2, timeout);
        if fds[0].revents != 0 {
            let mut buf = [0u8; 1024];
            while libc::read(sfd, buf.as_mut_ptr().cast(), buf.len()) > 0 {}
        }
        if control_open && fds[1].revents != 0 {
            let mut b = 0u8;
            let n = libc::read(CONTROL_FD, (&mut b as *mut u8).cast(), 1);
            if n == 1 {
                if b == b'K' {
                    mode = 2;
                } else if b == b'T' && mode == 0 {
                    mode = 1;
                }
            } else if n == 0 || errno() != libc::EINTR {
                // The host is gone: nobody will ever read our output.
                libc::close(CONTROL_FD);
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
    libc::kill(-shell, sig);
    let mut queue = [0 as libc::pid_t; 4096];
    let mut len = 1usize;
    let mut at = 0usize;
    let mut found = 0usize;
    queue[0] = me;
    while at < len {
        let parent = queue[at];
        at += 1;
        for_each_child(parent, |child| {
            libc::kill(child, sig);
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
    let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return;
    }
    let mut buf = [0u8; 4096];
    let mut current: libc::pid_t = 0;
    let mut in_number = false;
    loop {
        let r = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
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
    libc::close(fd);
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

unsafe fn reset_signals() {
    let mut sig = 1;
    while sig < 32 {
        if sig != libc::SIGKILL && sig != libc::SIGSTOP {
            set_handler(sig, libc::SIG_DFL);
        }
        sig += 1;
    }
}

unsafe fn set_handler(sig: c_int, handler: libc::sighandler_t) {
    let mut sa: libc::sigaction = std::mem::zeroed();
    sa.sa_sigaction = handler;
    libc::sigemptyset(&mut sa.sa_mask);
    libc::sigaction(sig, &sa, std::ptr::null_mut());
}

unsafe fn write_status(status: u32) {
    let bytes = status.to_ne_bytes();
    libc::write(STATUS_FD, bytes.as_ptr().cast(), bytes.len());
}

unsafe fn say(msg: &[u8]) {
    libc::write(2, msg.as_ptr().cast(), msg.len());
}

unsafe fn errno() -> c_int {
    *libc::__errno_location()
}
