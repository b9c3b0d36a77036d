//! A child process that is signalled only while it is unreaped.
//!
//! A pid names a process only until it is reaped; after that the kernel
//! may give it to anyone. Every kill the host sends (a stuck call, a
//! timeout, a shutdown) comes from a different thread than the one that
//! waits, so the two share one gate: the waiter first waits *without*
//! reaping (`waitid(WNOWAIT)`; the pid stays a zombie, still ours), then
//! reaps under the gate, and a signal is sent under the same gate only if
//! the child is not reaped yet.

use std::process::{Child, ExitStatus};
use std::sync::{Mutex, MutexGuard, PoisonError};

use nix::errno::Errno;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag};
use nix::unistd::Pid;

/// A spawned child, owned: signal it from any thread, wait for it from one.
#[derive(Debug)]
pub struct Process {
    pid: u32,
    gate: Mutex<Gate>,
}

#[derive(Debug)]
struct Gate {
    child: Child,
    /// Set once reaped: the pid is no longer ours.
    status: Option<ExitStatus>,
}

impl Process {
    /// Takes ownership of `child` (take its pipes first).
    pub fn new(child: Child) -> Process {
        Process {
            pid: child.id(),
            gate: Mutex::new(Gate { child, status: None }),
        }
    }

    fn gate(&self) -> MutexGuard<'_, Gate> {
        self.gate.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Its pid (for logs; never signal it directly).
    pub fn id(&self) -> u32 {
        self.pid
    }

    /// Sends `signal` unless the child was already reaped; whether it was
    /// sent.
    pub fn signal(&self, signal: Signal) -> bool {
        let gate = self.gate();
        if gate.status.is_some() {
            return false;
        }
        let Ok(pid) = i32::try_from(self.pid) else {
            return false;
        };
        kill(Pid::from_raw(pid), signal).is_ok()
    }

    /// SIGKILL: the process ends now (its descendants are another matter:
    /// see [`crate::reaper`]).
    pub fn kill(&self) -> bool {
        self.signal(Signal::SIGKILL)
    }

    /// SIGTERM: for a [`crate::reaper`], "kill the command and everything
    /// it started, then exit".
    pub fn terminate(&self) -> bool {
        self.signal(Signal::SIGTERM)
    }

    /// Blocks until the child ends, reaps it and returns its status (the
    /// same status to every caller). `None` if it cannot be read.
    pub fn wait(&self) -> Option<ExitStatus> {
        if let Ok(pid) = i32::try_from(self.pid) {
            // Until it has ended (a zombie now), or another caller reaped
            // it (ECHILD): either way, reap under the gate.
            let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT;
            while waitid(Id::Pid(Pid::from_raw(pid)), flags) == Err(Errno::EINTR) {}
        }
        let mut gate = self.gate();
        if gate.status.is_none() {
            gate.status = gate.child.wait().ok();
        }
        gate.status
    }

    /// The status if the child has ended (reaping it), without blocking.
    pub fn try_wait(&self) -> Option<ExitStatus> {
        let mut gate = self.gate();
        if gate.status.is_none() {
            gate.status = gate.child.try_wait().ok().flatten();
        }
        gate.status
    }
}
