//! Spawning through the zygote: these pin down that it leaves the
//! host's state (errno, signal handlers, mappings) alone.

use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::spawn::{spawn, SpawnSpec, Spawned};
use super::tree::Exit;

fn start(command: &str) -> Spawned {
    let env = [("PATH".into(), "/usr/bin:/bin".into())];
    static LAUNCHER: std::sync::OnceLock<super::launch::Launcher> = std::sync::OnceLock::new();
    spawn(
        LAUNCHER.get_or_init(super::launch::Launcher::new),
        &SpawnSpec {
            shell: Path::new("/bin/bash"),
            command,
            cwd: Path::new("/"),
            env: &env,
            rlimits: &[],
            confine: None,
        },
    )
    .expect("spawn")
}

/// Waits (with poll, which sets no errno on success) until the tree is gone.
fn wait_gone(spawned: &mut Spawned) {
    let end = Instant::now() + Duration::from_secs(10);
    while !spawned.tree.is_gone() {
        assert!(Instant::now() < end, "the tree did not end");
        poll_in(spawned.tree.status_fd(), 100);
        spawned.tree.on_readable();
    }
}

/// `poll` for input on one fd, up to `ms` (-1: no bound); its result. It
/// sets no errno when it succeeds.
fn poll_in(fd: std::os::fd::RawFd, ms: libc::c_int) -> libc::c_int {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: polling one pollfd struct we own.
    unsafe { libc::poll(&mut pfd, 1, ms) }
}

fn mappings() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .map(|m| m.lines().count())
        .unwrap_or(0)
}

#[test]
fn exit_status_and_output_arrive() {
    let mut spawned = start("echo out; echo err >&2; exit 7");
    wait_gone(&mut spawned);
    assert_eq!(spawned.tree.exit(), Some(Exit::Code(7)));
    let mut buf = [0u8; 64];
    // SAFETY: reading into a local buffer from a pipe the test owns.
    let n = unsafe { libc::read(spawned.stdout.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    assert_eq!(&buf[..n.max(0) as usize], b"out\n");
}

#[test]
fn the_host_keeps_no_mapping_per_spawn() {
    // The reaper's stacks live in the zygote (each reaper runs on its own
    // copy), so a spawn must leave the host's address space as it was.
    // Warm up: the first spawns may map libraries and allocator arenas.
    for _ in 0..5 {
        wait_gone(&mut start("true"));
    }
    let before = mappings();
    for _ in 0..60 {
        wait_gone(&mut start("true"));
    }
    let after = mappings();
    // A mapping leaked per spawn would add at least 60.
    assert!(
        after <= before + 6,
        "mappings grew from {before} to {after} over 60 spawns"
    );
}

#[test]
fn the_reaper_never_touches_the_calling_threads_errno() {
    for _ in 0..20 {
        let mut spawned = start("true");
        // SAFETY: writing this thread's errno.
        unsafe { *libc::__errno_location() = 4242 };
        // The reaper's last calls (wait4 with nobody left: ECHILD) happen
        // before it writes DONE; this thread meanwhile only polls, which
        // sets no errno when it succeeds.
        while poll_in(spawned.tree.status_fd(), -1) == 0 {}
        // SAFETY: reading this thread's errno.
        let errno = unsafe { *libc::__errno_location() };
        assert_eq!(errno, 4242, "the reaper wrote errno {errno} into the host thread");
        wait_gone(&mut spawned);
    }
}

static HANDLED: AtomicBool = AtomicBool::new(false);

extern "C" fn record(_: libc::c_int) {
    HANDLED.store(true, Ordering::SeqCst);
}

#[test]
fn host_signal_handlers_never_run_in_the_reaper() {
    // SAFETY: installing a handler that only stores to an atomic.
    unsafe { libc::signal(libc::SIGUSR2, record as *const () as libc::sighandler_t) };
    let mut spawned = start("echo ready; exec sleep 30");
    // The shell has printed, so its reaper is supervising it.
    let mut line = [0u8; 6];
    let mut got = 0;
    let end = Instant::now() + Duration::from_secs(10);
    while got < line.len() {
        assert!(Instant::now() < end, "the command never printed");
        poll_in(spawned.stdout.as_raw_fd(), 100);
        // SAFETY: reading into a local buffer from a pipe the test owns.
        let n = unsafe {
            libc::read(
                spawned.stdout.as_raw_fd(),
                line[got..].as_mut_ptr().cast(),
                line.len() - got,
            )
        };
        got += n.max(0) as usize;
    }
    assert_eq!(&line, b"ready\n");
    // SAFETY: signalling the reaper (a child of the zygote, alive: its
    // shell runs).
    unsafe { libc::kill(spawned.tree.reaper_pid(), libc::SIGUSR2) };
    // A round trip through the reaper: it can only carry out the order if
    // SIGUSR2 (delivered before it next runs) did not end it.
    spawned.tree.terminate();
    wait_gone(&mut spawned);
    assert_eq!(
        spawned.tree.exit(),
        Some(Exit::Signal(libc::SIGTERM)),
        "the reaper did not survive SIGUSR2 to end its shell"
    );
    assert!(
        !HANDLED.load(Ordering::SeqCst),
        "the host's handler ran in the reaper"
    );
}

/// Reads the status socket raw until EOF (bounded).
fn status_bytes(spawned: &Spawned) -> Vec<u8> {
    let end = Instant::now() + Duration::from_secs(10);
    let mut all = Vec::new();
    loop {
        assert!(Instant::now() < end, "the status socket never reached EOF");
        poll_in(spawned.tree.status_fd(), 100);
        let mut buf = [0u8; 64];
        // SAFETY: reading into a local buffer from a socket the tree owns.
        let n = unsafe { libc::read(spawned.tree.status_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        match n {
            0 => return all,
            n if n > 0 => all.extend_from_slice(&buf[..n as usize]),
            _ => {}
        }
    }
}

#[test]
fn the_reaper_says_done_with_the_status_when_the_shell_was_the_last_process() {
    let spawned = start("exit 3");
    let bytes = status_bytes(&spawned);
    let words: Vec<u32> = bytes
        .chunks(4)
        .map(|c| u32::from_ne_bytes(c.try_into().expect("whole words")))
        .collect();
    // The wait status of `exit 3`, then DONE: the host needs neither a
    // second wake-up nor the reaper's exit to know the tree is gone.
    assert_eq!(words, [3 << 8, super::reaper::DONE]);
}

#[test]
fn the_tree_is_gone_at_done_without_waiting_for_eof() {
    let (status, reaper_end) = super::launch::socketpair().expect("socketpair");
    // Non-blocking, as `spawn` makes it.
    // SAFETY: fcntl on a socket the test owns.
    unsafe { libc::fcntl(status.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
    let (control, _reaper_control) = super::launch::socketpair().expect("socketpair");
    let mut tree = super::tree::Tree::new(super::launch::Started { pid: 0, pidfd: None }, status, control);
    let mut words = Vec::new();
    words.extend_from_slice(&(5u32 << 8).to_ne_bytes());
    words.extend_from_slice(&super::reaper::DONE.to_ne_bytes());
    // SAFETY: writing a local buffer to a socket the test owns.
    unsafe { libc::write(reaper_end.as_raw_fd(), words.as_ptr().cast(), words.len()) };
    tree.on_readable();
    // `reaper_end` is still open: only DONE can say the tree is gone.
    assert!(tree.is_gone());
    assert_eq!(tree.exit(), Some(Exit::Code(5)));
}

#[test]
fn stdout_ends_when_the_command_closes_it_not_when_its_reaper_exits() {
    // The shell closes both streams and lives on: the reaper must hold no
    // copy of them, or the host would read them until the tree is gone.
    let mut spawned = start("exec >&- 2>&-; sleep 30");
    let end = Instant::now() + Duration::from_secs(10);
    for fd in [spawned.stdout.as_raw_fd(), spawned.stderr.as_raw_fd()] {
        loop {
            assert!(
                Instant::now() < end,
                "no EOF on the command's output while it runs"
            );
            poll_in(fd, 100);
            let mut buf = [0u8; 16];
            // SAFETY: reading into a local buffer from a pipe the test owns.
            if unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) } == 0 {
                break;
            }
        }
    }
    spawned.tree.on_readable();
    assert!(!spawned.tree.is_gone(), "the command should still be running");
    assert!(spawned.tree.kill_and_wait(Duration::from_secs(5)));
}
