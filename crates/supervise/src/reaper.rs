//! `PROGRAM __reaper --parent PID --what WHAT -- COMMAND ARGS…`: a small subreaper that
//! a stdio MCP server or a hook runs under, so that nothing the command
//! starts outlives it.
//!
//! Killing the command's process group misses every descendant that left
//! the group (`setsid`, a daemonising double fork). This process marks
//! itself a child subreaper (`PR_SET_CHILD_SUBREAPER`), so every orphaned
//! descendant of the command is re-parented to it rather than to init;
//! when the command exits (or crashes), when the host asks it to stop
//! (SIGTERM, see [`crate::Process::terminate`]) or when the host dies (its
//! parent-death signal is SIGTERM), it kills every child it has, reaps
//! them, and repeats until none is left, then exits the way the command
//! did (same status, or the same signal) so the host can name the
//! command's end.
//!
//! The program that embeds this crate must dispatch [`SUBCOMMAND`] to
//! [`main`]; [`command`] builds the invocation.
//!
//! What it does not catch: a descendant that another subreaper between it
//! and the command adopts, or one that escapes into another PID namespace.
//! A SIGKILL to the reaper itself kills the command (its death signal) but
//! not what the command left running: stop it with SIGTERM.

use std::ffi::OsStr;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, ExitCode};

use nix::errno::Errno;
use nix::sys::signal::{kill, SigSet, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{getpid, Pid};

use crate::death;
use crate::tree::children_of;

/// The helper program's subcommand that runs [`main`].
pub const SUBCOMMAND: &str = "__reaper";

/// `COMMAND ARGS…` run under the reaper (`reaper_program`, re-executed),
/// which leads a new process group and gets SIGTERM when the host dies.
/// `what` names the command for people ("MCP server", "hook") when it
/// cannot be started. Spawn it with [`crate::spawn`], hold it as a
/// [`crate::Process`], and stop it with [`crate::Process::terminate`].
pub fn command<I, S>(reaper_program: &Path, what: &str, program: impl AsRef<OsStr>, args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut command = Command::new(reaper_program);
    command
        .arg(SUBCOMMAND)
        .arg("--parent")
        .arg(std::process::id().to_string())
        .arg("--what")
        .arg(what)
        .arg("--")
        .arg(program)
        .args(args)
        .process_group(0);
    death::on_parent_death(&mut command, Signal::SIGTERM);
    command
}

/// Runs the reaper; returns only when it cannot mimic the command's end.
/// `what` names the command in the message when it cannot be started.
pub fn main(parent: u32, what: &str, command: &[String]) -> ExitCode {
    let Some((program, args)) = command.split_first() else {
        eprintln!("toolhost {SUBCOMMAND}: no command");
        return ExitCode::from(2);
    };
    let mut stops = SigSet::empty();
    for signal in [Signal::SIGCHLD, Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        stops.add(signal);
    }
    // Blocked before anything can arrive; the command starts with an empty
    // mask (std resets it in the child).
    if let Err(e) = stops.thread_block() {
        eprintln!("toolhost {SUBCOMMAND}: cannot block signals: {e}");
        return ExitCode::from(1);
    }
    if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
        eprintln!("toolhost {SUBCOMMAND}: cannot become a subreaper: {e}");
        return ExitCode::from(1);
    }
    if let Err(e) = death::arm(parent, Signal::SIGTERM) {
        eprintln!("toolhost {SUBCOMMAND}: {e}");
        return ExitCode::from(1);
    }
    let mut child = Command::new(program);
    child.args(args);
    death::on_parent_death(&mut child, Signal::SIGKILL);
    let child = match child.spawn() {
        Ok(child) => Pid::from_raw(child.id() as i32),
        Err(e) => {
            eprintln!("toolhost: cannot start {what} '{program}': {e}");
            return ExitCode::from(127);
        }
    };
    release_protocol_pipes();

    let mut ended: Option<WaitStatus> = None;
    while ended.is_none() {
        match stops.wait() {
            Ok(Signal::SIGCHLD) => ended = reap_ready(child),
            Ok(_) => break,
            Err(e) => {
                eprintln!("toolhost {SUBCOMMAND}: sigwait failed: {e}");
                break;
            }
        }
    }
    // The command ended, or the host asked for an end: nothing it started
    // may stay.
    let _ = kill(child, Signal::SIGKILL);
    if let Some(last) = kill_all_children(child) {
        ended = ended.or(Some(last));
    }
    mimic(ended)
}

/// Lets the reaper's copies of stdin and stdout go, so the host sees the
/// command's end of them close with the command and what it started.
fn release_protocol_pipes() {
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        let _ = nix::unistd::dup2_stdin(&null);
        let _ = nix::unistd::dup2_stdout(&null);
    }
}

/// Reaps every child that has ended; the command's status if it was one.
fn reap_ready(command: Pid) -> Option<WaitStatus> {
    let mut found = None;
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) | Err(_) => return found,
            Ok(status) if status.pid() == Some(command) => found = Some(status),
            Ok(_) => {}
        }
    }
}

/// SIGKILLs every child (orphans re-parented here included) and reaps
/// until there is none. Returns the command's status if it is reaped here.
fn kill_all_children(command: Pid) -> Option<WaitStatus> {
    let mut found = None;
    loop {
        for child in children_of(getpid()) {
            let _ = kill(child, Signal::SIGKILL);
        }
        match waitpid(None, None) {
            Ok(status) if status.pid() == Some(command) => found = Some(status),
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => return found, // ECHILD: none left
        }
    }
}

/// Ends the reaper the way the command ended.
fn mimic(ended: Option<WaitStatus>) -> ExitCode {
    match ended {
        Some(WaitStatus::Exited(_, code)) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Some(WaitStatus::Signaled(_, signal, _)) => {
            // No core file of the reaper's for the command's crash.
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: setrlimit reads the struct we pass, on our stack.
            unsafe {
                libc::setrlimit(libc::RLIMIT_CORE, &none);
            }
            // SAFETY: restoring a signal's default disposition installs no
            // handler of ours.
            let _ = unsafe { nix::sys::signal::signal(signal, nix::sys::signal::SigHandler::SigDfl) };
            let mut only = SigSet::empty();
            only.add(signal);
            let _ = only.thread_unblock();
            let _ = nix::sys::signal::raise(signal);
            ExitCode::from(128u8.saturating_add(signal as u8))
        }
        _ => ExitCode::from(1),
    }
}
