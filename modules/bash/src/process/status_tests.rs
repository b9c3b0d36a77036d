//! The host's reading of the status socket: the
//! reaper's words (status, LEFTOVERS, DONE) may arrive split across reads
//! in any way; the tree is gone at DONE or EOF and never before, and the
//! shell's status is never lost or taken from a torn word.

use std::os::fd::{AsRawFd, OwnedFd};

use super::launch::{socketpair, Started};
use super::reaper::{DONE, LEFTOVERS};
use super::tree::{Exit, Tree};

/// A tree over a fresh status socket, and the reaper's end of it.
fn tree() -> (Tree, OwnedFd, OwnedFd) {
    let (status, reaper_end) = socketpair().expect("socketpair");
    // SAFETY: fcntl on a socket the test owns (non-blocking, as spawn makes it).
    unsafe { libc::fcntl(status.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
    let (control, reaper_control) = socketpair().expect("socketpair");
    let tree = Tree::new(Started { pid: 0, pidfd: None }, status, control);
    (tree, reaper_end, reaper_control)
}

fn write(fd: &OwnedFd, bytes: &[u8]) {
    // SAFETY: writing a local buffer to a socket the test owns.
    let n = unsafe { libc::write(fd.as_raw_fd(), bytes.as_ptr().cast(), bytes.len()) };
    assert_eq!(n, bytes.len() as isize);
}

fn words(ws: &[u32]) -> Vec<u8> {
    ws.iter().flat_map(|w| w.to_ne_bytes()).collect()
}

#[test]
fn words_dribbled_one_byte_per_read_are_all_understood() {
    let (mut tree, reaper, _control) = tree();
    let bytes = words(&[7 << 8, LEFTOVERS, DONE]);
    for (i, b) in bytes.iter().enumerate() {
        assert!(!tree.is_gone(), "gone after {i} bytes");
        write(&reaper, &[*b]);
        tree.on_readable();
    }
    assert!(tree.is_gone());
    assert_eq!(tree.exit(), Some(Exit::Code(7)));
    assert!(tree.had_leftovers());
}

#[test]
fn done_in_a_later_read_than_the_status_ends_the_tree() {
    let (mut tree, reaper, _control) = tree();
    write(&reaper, &words(&[libc::SIGTERM as u32]));
    tree.on_readable();
    assert!(!tree.is_gone(), "gone at the status alone");
    assert_eq!(tree.exit(), Some(Exit::Signal(libc::SIGTERM)));
    // Split DONE: 3 bytes, then 1.
    let done = DONE.to_ne_bytes();
    write(&reaper, &done[..3]);
    tree.on_readable();
    assert!(!tree.is_gone(), "gone at 3 bytes of DONE");
    write(&reaper, &done[3..]);
    tree.on_readable();
    assert!(tree.is_gone());
    assert_eq!(tree.exit(), Some(Exit::Signal(libc::SIGTERM)));
}

#[test]
fn a_torn_status_then_eof_is_not_taken_as_an_exit_code() {
    let (mut tree, reaper, _control) = tree();
    // The reaper killed mid-word (cannot happen with one write, but the
    // host must not make a code of half a word).
    write(&reaper, &(3u32 << 8).to_ne_bytes()[..2]);
    drop(reaper);
    tree.on_readable();
    assert!(tree.is_gone());
    assert_eq!(tree.exit(), Some(Exit::Signal(libc::SIGKILL)));
}

#[test]
fn a_second_status_word_does_not_replace_the_first() {
    let (mut tree, reaper, _control) = tree();
    write(&reaper, &words(&[1 << 8, 0, DONE]));
    tree.on_readable();
    assert!(tree.is_gone());
    assert_eq!(tree.exit(), Some(Exit::Code(1)));
}
