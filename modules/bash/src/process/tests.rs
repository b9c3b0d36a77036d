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
        let mut pfd = libc::pollfd {
            fd: spawned.tree.status_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: polling one fd the tree owns.
        unsafe { libc::poll(&mut pfd, 1, 100) };
        spawned.tree.on_readable();
    }
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
fn the_reapers_stacks_are_unmapped_once_it_is_reaped() {
    // Warm up: the first spawns may map libraries and allocator arenas.
    for _ in 0..5 {
        wait_gone(&mut start("true"));
    }
    let before = mappings();
    for _ in 0..60 {
        wait_gone(&mut start("true"));
    }
    let after = mappings();
    // Each leaked launch would add three mappings (two guards and a stack).
    assert!(
        after <= before + 6,
        "mappings grew from {before} to {after}: stacks leak"
    );
}

#[test]
fn the_reaper_never_touches_the_calling_threads_errno() {
    for _ in 0..20 {
        let mut spawned = start("true");
        // SAFETY: writing this thread's errno.
        unsafe { *libc::__errno_location() = 4242 };
        // The reaper's last calls (wait4 with nobody left: ECHILD) happen
        // while this thread sleeps, which sets no errno.
        std::thread::sleep(Duration::from_millis(30));
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
    let mut spawned = start("sleep 5");
    std::thread::sleep(Duration::from_millis(100));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(spawned.tree.reaper_pid(), libc::SIGUSR2) };
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        !HANDLED.load(Ordering::SeqCst),
        "the host's handler ran in the reaper"
    );
    spawned.tree.on_readable();
    assert!(
        !spawned.tree.is_gone(),
        "the reaper must ignore SIGUSR2 and keep its tree"
    );
    assert!(spawned.tree.kill_and_wait(Duration::from_secs(5)));
    assert_eq!(spawned.tree.exit(), Some(Exit::Signal(libc::SIGKILL)));
}
