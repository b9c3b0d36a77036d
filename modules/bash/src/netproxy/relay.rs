//! Copying bytes both ways between the command's connection and the
//! upstream one, in one thread, until both sides are done, neither has
//! sent a byte for the idle timeout, the upstream has not finished
//! [`UPSTREAM_GRACE`] after the command closed its side, or the command
//! has ended (its stop socket hung up).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::time::{Duration, Instant};

use super::UPSTREAM_GRACE;

/// Bytes read per wake, per direction.
const CHUNK: usize = 16 * 1024;

/// Sends `first` upstream, then relays until both directions have ended,
/// an error, `idle` without traffic, the grace after the client's end, or
/// `stop` becoming readable. With `client_budget`, at most that many more
/// bytes go from the client upstream (the rest of one request's body);
/// then the client is no longer read, so nothing it sends after its one
/// request reaches the upstream. Both sockets are shut down on return, so
/// that neither peer waits on a connection nobody relays any more.
pub fn pump(
    client: &mut TcpStream,
    upstream: &mut TcpStream,
    first: &[u8],
    idle: Duration,
    stop: BorrowedFd<'_>,
    client_budget: Option<u64>,
) {
    relay(client, upstream, first, idle, stop, client_budget);
    let _ = client.shutdown(Shutdown::Both);
    let _ = upstream.shutdown(Shutdown::Both);
}

fn relay(
    client: &mut TcpStream,
    upstream: &mut TcpStream,
    first: &[u8],
    idle: Duration,
    stop: BorrowedFd<'_>,
    mut client_budget: Option<u64>,
) {
    if upstream.write_all(first).is_err() {
        return;
    }
    // Reads block no longer than poll said they would not.
    if client.set_read_timeout(None).is_err() || upstream.set_read_timeout(None).is_err() {
        return;
    }
    let mut buf = vec![0u8; CHUNK];
    // Whether each side can still be read: [client, upstream].
    let mut open = [true, true];
    // Set when the client has closed its side.
    let mut grace_end: Option<Instant> = None;
    while open[0] || open[1] {
        if client_budget == Some(0) {
            open[0] = false; // the request is complete: read no more of it
        }
        let wait = match grace_end {
            Some(end) => match end.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => left.min(idle),
                _ => return, // the upstream had its grace
            },
            None => idle,
        };
        let mut fds = [
            poll_entry(client.as_raw_fd(), open[0]),
            poll_entry(upstream.as_raw_fd(), open[1]),
            poll_entry(stop.as_raw_fd(), true),
        ];
        // SAFETY: polling three fds borrowed for the call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 3, millis(wait)) };
        if n == 0 {
            if grace_end.is_some() {
                continue; // the loop's head decides
            }
            return; // idle
        }
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if fds[2].revents != 0 {
            return; // the command has ended
        }
        for side in 0..2 {
            if !open[side] || fds[side].revents == 0 {
                continue;
            }
            let (from, to) = if side == 0 {
                (&mut *client, &mut *upstream)
            } else {
                (&mut *upstream, &mut *client)
            };
            let room = match (side, client_budget) {
                (0, Some(left)) => buf.len().min(usize::try_from(left).unwrap_or(usize::MAX)),
                _ => buf.len(),
            };
            match from.read(&mut buf[..room]) {
                Ok(0) => {
                    open[side] = false;
                    let _ = to.shutdown(Shutdown::Write);
                    if side == 0 {
                        grace_end = Some(Instant::now() + UPSTREAM_GRACE);
                    }
                }
                Ok(n) => {
                    if let (0, Some(left)) = (side, client_budget.as_mut()) {
                        *left -= n as u64;
                    }
                    if to.write_all(&buf[..n]).is_err() {
                        return;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }
}

/// `wait` in whole milliseconds for `poll` (rounded up, so that a
/// deadline is not polled for with 0 repeatedly).
fn millis(wait: Duration) -> libc::c_int {
    wait.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int
}

fn poll_entry(fd: std::os::fd::RawFd, open: bool) -> libc::pollfd {
    libc::pollfd {
        fd: if open { fd } else { -1 },
        events: libc::POLLIN,
        revents: 0,
    }
}
