//! The zygote and its spare, below the Launcher: the paths a hostile
//! command can only reach by a lucky race (a zygote stopped before it
//! answered; a zygote killed while a spare waits), driven here on purpose.

use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use super::Zygote;

/// Whether `pid` exists and is not a zombie.
fn is_alive(pid: libc::pid_t) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
        .unwrap_or(false)
}

fn signal(pid: libc::pid_t, sig: libc::c_int) {
    // SAFETY: kill(2) on the test's own child, not yet reaped.
    unsafe { libc::kill(pid, sig) };
}

#[test]
fn a_spare_asked_of_a_stopped_zygote_is_answered() {
    let mut zygote = Zygote::spawn().expect("zygote");
    // A command stops the zygote before it has answered the ask: reading
    // the answer must wake it, not wait out the bound and throw it away.
    signal(zygote.pid, libc::SIGSTOP);
    zygote.ask(0).expect("the spare was asked for");
    zygote.settle().expect("the stopped zygote answered");
    let spare = zygote.spare.as_ref().expect("a spare");
    assert!(is_alive(spare.started.pid));
    zygote.end();
}

#[test]
fn a_waiting_spare_does_not_keep_the_dead_zygotes_socket_open() {
    let zygote = Zygote::spawn().expect("zygote");
    let mut zygote = zygote.ready(Some(0)).expect("the spare was asked for");
    zygote.settle().expect("answered");
    let spare = zygote.spare.as_ref().expect("a spare").started.pid;
    assert!(is_alive(spare));
    signal(zygote.pid, libc::SIGKILL);
    // Once the zygote is dead nobody may hold its end: the host must see
    // the hang-up (and EPIPE on its next request), not wait on an answer
    // that never comes.
    let end = Instant::now() + Duration::from_secs(5);
    let hung_up = loop {
        let mut pfd = libc::pollfd {
            fd: zygote.socket.as_raw_fd(),
            events: libc::POLLRDHUP,
            revents: 0,
        };
        // SAFETY: polling one fd the zygote handle owns.
        unsafe { libc::poll(&mut pfd, 1, 50) };
        if pfd.revents & (libc::POLLRDHUP | libc::POLLHUP) != 0 {
            break true;
        }
        if Instant::now() >= end {
            break false;
        }
    };
    assert!(is_alive(spare), "the spare died with the zygote");
    assert!(
        hung_up,
        "the zygote's socket stayed open after it died: the spare holds it"
    );
    zygote.end();
}

#[test]
fn a_spare_handed_a_command_for_other_namespaces_runs_nothing() {
    let mut zygote = Zygote::spawn().expect("zygote");
    zygote.ask(0).expect("asked");
    zygote.settle().expect("answered");
    let spare = zygote.spare.take().expect("a spare");
    let (status, status_theirs) = super::socketpair().expect("socketpair");
    let marker = tempfile::tempdir().expect("tempdir");
    let ran = marker.path().join("ran");
    let spec = super::super::spec::Spec {
        shell: c"/bin/sh".into(),
        argv: vec![
            c"/bin/sh".into(),
            c"-c".into(),
            std::ffi::CString::new(format!("touch {}", ran.display())).expect("no NUL"),
        ],
        cwd: c"/".into(),
        // A spare started without namespaces must not run a command that
        // asks for a PID namespace (it would run outside it).
        namespaces: libc::CLONE_NEWPID,
        ..Default::default()
    };
    let mut fds = [-1; super::FD_COUNT];
    fds[super::super::reaper::STATUS_SLOT] = status_theirs.as_raw_fd();
    let Ok(_started) = spare.hand(&fds, &spec.encode()) else {
        panic!("the spare did not take the request");
    };
    drop(status_theirs);
    let mut word = [0u8; 8];
    let mut got = 0;
    loop {
        // SAFETY: a blocking read into a local buffer from a socket the
        // test owns; the spare closes its end when it exits.
        let n = unsafe {
            libc::read(
                status.as_raw_fd(),
                word[got..].as_mut_ptr().cast(),
                word.len() - got,
            )
        };
        if n <= 0 {
            break;
        }
        got += n as usize;
    }
    assert_eq!(&word[..got], super::super::reaper::FORK_FAILED.to_ne_bytes());
    assert!(!ran.exists(), "the command ran in the wrong namespaces");
    zygote.end();
}

#[test]
fn a_zygote_dropped_without_end_is_killed_and_reaped() {
    // As when the code holding it unwinds: a stopped zygote must not be
    // left behind.
    let zygote = Zygote::spawn().expect("zygote");
    let pid = zygote.pid;
    signal(pid, libc::SIGSTOP);
    drop(zygote);
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the zygote {pid} outlived its handle"
    );
}
