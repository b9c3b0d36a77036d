//! Drives a started command to its end: streams its output into a sink,
//! watches for a stop request, and ends the whole tree with SIGTERM, then
//! SIGKILL after a grace. A pipe still held open by some process that left
//! the tree is drained with a bound, never waited on forever.

use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use crate::process::spawn::Spawned;
use crate::process::tree::Exit;

/// Which output stream a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// Why a command was stopped before it ended by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Its own timeout passed.
    Timeout,
    /// The host cancelled the call (or its deadline passed).
    Cancelled,
    /// `bash_kill` asked for it.
    Killed,
    /// The module is shutting down.
    Shutdown,
}

/// Timing knobs for ending a tree.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// How long to keep reading pipes after the tree is gone.
    pub drain: Duration,
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The shell's exit, if it ended.
    pub exit: Option<Exit>,
    /// Set when the run was stopped from outside.
    pub stopped: Option<Stop>,
    /// Wall time.
    pub duration: Duration,
    /// Whether processes the command left running had to be ended after the
    /// shell itself exited.
    pub ended_leftovers: bool,
    /// Problems worth telling the caller (a pipe held open, an unkillable
    /// process).
    pub notes: Vec<String>,
}

/// How long to wait for SIGKILL to clear the tree before giving up.
const KILL_WAIT: Duration = Duration::from_secs(5);
/// Longest sleep between stop checks.
const TICK: Duration = Duration::from_millis(50);
/// Read at most this much per stream per wake, to stay responsive.
const READ_BURST: usize = 16;

/// Runs `spawned` to the end. `should_stop` is asked every tick.
pub fn drive(
    spawned: Spawned,
    sink: &mut dyn FnMut(Stream, &[u8]),
    should_stop: &dyn Fn() -> Option<Stop>,
    limits: Limits,
) -> Outcome {
    let started = Instant::now();
    let Spawned {
        mut tree,
        stdout,
        stderr,
        cleanup,
        ..
    } = spawned;
    let mut out = Some(stdout);
    let mut err = Some(stderr);
    let mut buf = vec![0u8; 64 * 1024];
    let mut stopped = None;
    let mut term_at: Option<Instant> = None;
    let mut kill_at: Option<Instant> = None;
    let mut gone_at: Option<Instant> = None;
    let mut notes = Vec::new();
    let grace = limits.kill_grace;

    loop {
        let now = Instant::now();
        let mut wait = TICK;
        if gone_at.is_none() {
            if stopped.is_none() && tree.exit().is_none() {
                stopped = should_stop();
            }
            if term_at.is_none() && (stopped.is_some() || tree.exit().is_some()) {
                // Either we stop the command, or the shell is done and
                // whatever it left behind must go.
                if stopped == Some(Stop::Shutdown) {
                    tree.kill();
                    kill_at = Some(now);
                } else {
                    tree.terminate();
                }
                term_at = Some(now);
            }
            if let (Some(t), None) = (term_at, kill_at) {
                let due = t + grace;
                if now >= due {
                    tree.kill();
                    kill_at = Some(now);
                } else {
                    wait = wait.min(due - now);
                }
            }
            if let Some(k) = kill_at {
                if now >= k + KILL_WAIT {
                    notes.push(format!(
                        "some processes of the command survived SIGKILL for {} s (stuck in the kernel?); \
                         they were left to the reaper (pid {})",
                        KILL_WAIT.as_secs(),
                        tree.reaper_pid()
                    ));
                    break;
                }
            }
        } else if let Some(g) = gone_at {
            if out.is_none() && err.is_none() {
                break;
            }
            let due = g + limits.drain;
            if now >= due {
                notes.push(
                    "the command's output pipe was still held open by a process outside its tree; \
                     stopped reading"
                        .to_string(),
                );
                break;
            }
            wait = wait.min(due - now);
        }

        let mut pfds = [
            pollfd(out.as_ref()),
            pollfd(err.as_ref()),
            libc::pollfd {
                fd: if tree.is_gone() { -1 } else { tree.status_fd() },
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: polling three pollfd structs we own (fd -1 is ignored).
        unsafe { libc::poll(pfds.as_mut_ptr(), 3, wait.as_millis().max(1) as libc::c_int) };
        if pfds[0].revents != 0 && !read_some(&mut out, &mut buf, Stream::Stdout, sink) {
            out = None;
        }
        if pfds[1].revents != 0 && !read_some(&mut err, &mut buf, Stream::Stderr, sink) {
            err = None;
        }
        if pfds[2].revents != 0 {
            tree.on_readable();
            if tree.is_gone() && gone_at.is_none() {
                gone_at = Some(Instant::now());
            }
        }
        if tree.is_gone() && out.is_none() && err.is_none() {
            break;
        }
    }
    let outcome = Outcome {
        exit: tree.exit(),
        stopped,
        duration: started.elapsed(),
        ended_leftovers: stopped.is_none() && tree.had_leftovers(),
        notes,
    };
    // Dropping `tree` kills and reaps anything still left; only then may
    // the sandbox's temp folder and cgroup go.
    drop(tree);
    drop(cleanup);
    outcome
}

fn pollfd(fd: Option<&OwnedFd>) -> libc::pollfd {
    libc::pollfd {
        fd: fd.map(|f| f.as_raw_fd()).unwrap_or(-1),
        events: libc::POLLIN,
        revents: 0,
    }
}

/// Reads what is available; returns false at EOF or on a hard error.
fn read_some(
    fd: &mut Option<OwnedFd>,
    buf: &mut [u8],
    stream: Stream,
    sink: &mut dyn FnMut(Stream, &[u8]),
) -> bool {
    let Some(owned) = fd.as_ref() else {
        return false;
    };
    for _ in 0..READ_BURST {
        // SAFETY: reading into a buffer we own from an fd we own.
        let n = unsafe { libc::read(owned.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n > 0 {
            sink(stream, &buf[..n as usize]);
            continue;
        }
        if n == 0 {
            return false;
        }
        let e = std::io::Error::last_os_error();
        return matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
        );
    }
    true
}
