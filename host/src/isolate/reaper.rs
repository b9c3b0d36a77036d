//! `toolhost __reaper --parent PID -- PROGRAM ARGS…`: a small subreaper
//! that a stdio MCP server runs under, so that nothing the server starts
//! outlives it.
//!
//! Killing the server's process group misses every descendant that left
//! the group (`setsid`, a daemonising double fork). This process marks
//! itself a child subreaper (`PR_SET_CHILD_SUBREAPER`), so every orphaned
//! descendant of the server is re-parented to it rather than to init; when
//! the server exits (or crashes), when the host asks it to stop (SIGTERM)
//! or when the host dies (its parent-death signal is SIGTERM), it kills
//! every child it has, reaps them, and repeats until none is left, then
//! exits the way the server did (same status, or the same signal) so the
//! host can name the server's end.
//!
//! What it does not catch: a descendant that another subreaper between it
//! and the server adopts, or one that escapes into another PID namespace.

use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode};

use nix::errno::Errno;
use nix::sys::signal::{kill, SigSet, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{getpid, getppid, Pid};

/// Runs the reaper; returns only when it cannot mimic the server's end.
pub fn main(parent: u32, command: &[String]) -> ExitCode {
    let Some((program, args)) = command.split_first() else {
        eprintln!("toolhost __reaper: no command");
        return ExitCode::from(2);
    };
    let mut stops = SigSet::empty();
    for signal in [Signal::SIGCHLD, Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        stops.add(signal);
    }
    // Blocked before anything can arrive; the server starts with an empty
    // mask (std resets it in the child).
    if let Err(e) = stops.thread_block() {
        eprintln!("toolhost __reaper: cannot block signals: {e}");
        return ExitCode::from(1);
    }
    let prepared = nix::sys::prctl::set_child_subreaper(true)
        .and_then(|()| nix::sys::prctl::set_pdeathsig(Signal::SIGTERM));
    if let Err(e) = prepared {
        eprintln!("toolhost __reaper: cannot become a subreaper: {e}");
        return ExitCode::from(1);
    }
    // The host may have died before the death signal was armed.
    if u32::try_from(getppid().as_raw()).ok() != Some(parent) {
        return ExitCode::from(1);
    }
    let mut server = Command::new(program);
    server.args(args);
    // SAFETY: prctl is async-signal-safe and touches no memory of the
    // parent; it runs in the child between fork and exec.
    unsafe {
        server.pre_exec(|| nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(std::io::Error::from));
    }
    let server = match server.spawn() {
        Ok(child) => Pid::from_raw(child.id() as i32),
        Err(e) => {
            eprintln!("toolhost: cannot start MCP server '{program}': {e}");
            return ExitCode::from(127);
        }
    };
    release_protocol_pipes();

    let mut ended: Option<WaitStatus> = None;
    while ended.is_none() {
        match stops.wait() {
            Ok(Signal::SIGCHLD) => ended = reap_ready(server),
            Ok(_) => break,
            Err(e) => {
                eprintln!("toolhost __reaper: sigwait failed: {e}");
                break;
            }
        }
    }
    // The server ended, or the host asked for an end: nothing it started
    // may stay.
    let _ = kill(server, Signal::SIGKILL);
    if let Some(last) = kill_all_children(server) {
        ended = ended.or(Some(last));
    }
    mimic(ended)
}

/// Lets the reaper's copies of the protocol pipes go, so the host sees the
/// server's end of them close with the server alone.
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

/// Reaps every child that has ended; the server's status if it was one.
fn reap_ready(server: Pid) -> Option<WaitStatus> {
    let mut found = None;
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) | Err(_) => return found,
            Ok(status) if status.pid() == Some(server) => found = Some(status),
            Ok(_) => {}
        }
    }
}

/// SIGKILLs every child (orphans re-parented here included) and reaps
/// until there is none. Returns the server's status if it is reaped here.
fn kill_all_children(server: Pid) -> Option<WaitStatus> {
    let mut found = None;
    loop {
        for child in children_of(getpid()) {
            let _ = kill(child, Signal::SIGKILL);
        }
        match waitpid(None, None) {
            Ok(status) if status.pid() == Some(server) => found = Some(status),
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => return found, // ECHILD: none left
        }
    }
}

/// The processes whose parent is `parent`, from /proc.
fn children_of(parent: Pid) -> Vec<Pid> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<i32>().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // "pid (comm) state ppid …": comm may hold spaces and parens.
            let ppid = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse::<i32>()
                .ok()?;
            (ppid == parent.as_raw()).then_some(Pid::from_raw(pid))
        })
        .collect()
}

/// Ends the reaper the way the server ended.
fn mimic(ended: Option<WaitStatus>) -> ExitCode {
    match ended {
        Some(WaitStatus::Exited(_, code)) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Some(WaitStatus::Signaled(_, signal, _)) => {
            // No core file of the reaper's for the server's crash.
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
