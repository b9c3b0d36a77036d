//! The host's handle on a command's process tree: the reaper's status
//! socket (the shell's exit status, then [`DONE`] once every process is
//! gone, then EOF when the reaper exits) and its control socket (terminate,
//! kill).

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use super::launch::Started;
use super::reaper::{Step, DONE, FORK_FAILED, LEFTOVERS, SETUP_FAILED};

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Exited with this code.
    Code(i32),
    /// Killed by this signal.
    Signal(i32),
    /// The shell could not be started at all.
    NotStarted,
    /// A sandbox step failed, so the command was not run.
    SandboxFailed(Step),
}

impl Exit {
    /// Decodes a `waitpid` status.
    pub fn from_wait_status(status: u32) -> Exit {
        if status == FORK_FAILED {
            return Exit::NotStarted;
        }
        if status & SETUP_FAILED == SETUP_FAILED {
            if let Some(step) = Step::from_u8((status & 0xFF) as u8) {
                return Exit::SandboxFailed(step);
            }
        }
        let st = status as libc::c_int;
        if libc::WIFSIGNALED(st) {
            Exit::Signal(libc::WTERMSIG(st))
        } else {
            Exit::Code(libc::WEXITSTATUS(st))
        }
    }
}

/// A command's process tree, supervised by its reaper.
pub struct Tree {
    reaper: libc::pid_t,
    /// Signals the reaper (a child of the zygote, not of the host) without
    /// naming a pid that may have been reused.
    pidfd: Option<OwnedFd>,
    status: OwnedFd,
    control: Option<OwnedFd>,
    buf: Vec<u8>,
    exit: Option<Exit>,
    leftovers: bool,
    gone: bool,
}

impl Tree {
    pub(super) fn new(reaper: Started, status: OwnedFd, control: OwnedFd) -> Tree {
        Tree {
            reaper: reaper.pid,
            pidfd: reaper.pidfd,
            status,
            control: Some(control),
            buf: Vec::with_capacity(4),
            exit: None,
            leftovers: false,
            gone: false,
        }
    }

    /// The control socket while it is open (the spawn reads the proxy's
    /// listening socket from it once, before anyone signals the tree).
    pub(super) fn control_fd(&self) -> Option<RawFd> {
        self.control.as_ref().map(|c| c.as_raw_fd())
    }

    /// The status pipe, to poll for readability.
    pub fn status_fd(&self) -> RawFd {
        self.status.as_raw_fd()
    }

    /// The reaper's pid (the root of the tree, for diagnostics).
    pub fn reaper_pid(&self) -> libc::pid_t {
        self.reaper
    }

    /// How the shell ended, once it has.
    pub fn exit(&self) -> Option<Exit> {
        self.exit
    }

    /// Whether processes the shell left behind had to be ended.
    pub fn had_leftovers(&self) -> bool {
        self.leftovers
    }

    /// Whether every process of the tree is gone.
    pub fn is_gone(&self) -> bool {
        self.gone
    }

    /// Reads what the status pipe holds; call when poll says it is readable.
    pub fn on_readable(&mut self) {
        let mut chunk = [0u8; 16];
        loop {
            // SAFETY: reading into a local buffer from an fd we own.
            let n = unsafe { libc::read(self.status.as_raw_fd(), chunk.as_mut_ptr().cast(), chunk.len()) };
            if n > 0 {
                self.buf.extend_from_slice(&chunk[..n as usize]);
                while self.buf.len() >= 4 {
                    let word = u32::from_ne_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
                    self.buf.drain(..4);
                    if word == LEFTOVERS {
                        self.leftovers = true;
                    } else if word == DONE {
                        // Every process of the tree is gone; the reaper is
                        // exiting (the zygote reaps it).
                        self.mark_gone();
                        return;
                    } else if self.exit.is_none() {
                        self.exit = Some(Exit::from_wait_status(word));
                    }
                }
                continue;
            }
            if n == 0 {
                self.mark_gone();
                return;
            }
            let err = std::io::Error::last_os_error();
            if err.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            if err.kind() != std::io::ErrorKind::WouldBlock {
                // A broken status pipe: the reaper is gone all the same.
                self.mark_gone();
            }
            return;
        }
    }

    fn mark_gone(&mut self) {
        if self.gone {
            return;
        }
        self.gone = true;
        if self.exit.is_none() {
            // The reaper died without reporting (killed from outside).
            self.exit = Some(Exit::Signal(libc::SIGKILL));
        }
        self.control = None;
        // The zygote reaps the reaper.
        self.pidfd = None;
    }

    /// A pidfd for the reaper, where the kernel has them (for resources
    /// that must outlive the reaper itself, not only its tree).
    pub fn pidfd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        use std::os::fd::AsFd;
        self.pidfd.as_ref().map(|fd| fd.as_fd())
    }

    /// SIGTERM (then SIGCONT) to every process of the tree.
    pub fn terminate(&self) {
        self.send(b'T');
    }

    /// SIGKILL to every process of the tree, repeated until none is left.
    pub fn kill(&self) {
        self.send(b'K');
    }

    fn send(&self, byte: u8) {
        if let (false, Some(pidfd)) = (self.gone, &self.pidfd) {
            // A reaper stopped by its own command (possible only without the
            // sandbox's PID namespace) must wake to carry out the order.
            signal(pidfd, libc::SIGCONT);
        }
        if let Some(control) = &self.control {
            // SAFETY: a one-byte send on a socket we own; MSG_NOSIGNAL keeps a
            // reaper that already exited from raising SIGPIPE here.
            unsafe {
                libc::send(
                    control.as_raw_fd(),
                    (&byte as *const u8).cast(),
                    1,
                    libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
                )
            };
        }
    }

    /// Kills the tree and waits up to `bound` for it to be gone.
    pub fn kill_and_wait(&mut self, bound: Duration) -> bool {
        let end = Instant::now() + bound;
        self.kill();
        while !self.gone {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            let mut pfd = libc::pollfd {
                fd: self.status.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: polling one fd we own.
            unsafe { libc::poll(&mut pfd, 1, left.as_millis().min(1000) as libc::c_int) };
            self.on_readable();
        }
        true
    }
}

impl Drop for Tree {
    /// A tree is never left behind: kill it, and reap the reaper.
    fn drop(&mut self) {
        if !self.gone && !self.kill_and_wait(Duration::from_secs(5)) {
            // Closing the control socket makes the reaper kill everything
            // and exit on its own (the zygote reaps it).
            self.control = None;
        }
    }
}

/// `pidfd_send_signal(pidfd, sig)`: never a pid that may have been reused.
fn signal(pidfd: &OwnedFd, sig: libc::c_int) {
    // SAFETY: pidfd_send_signal on a pidfd we own, no siginfo.
    unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            sig,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
}
