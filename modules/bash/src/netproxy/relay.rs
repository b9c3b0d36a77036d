//! Copying bytes both ways between the command's connection and the
//! upstream one, in one thread, until both sides are done or neither has
//! sent a byte for the idle timeout.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;

/// Bytes read per wake, per direction.
const CHUNK: usize = 16 * 1024;

/// Sends `first` upstream, then relays until both directions have ended,
/// an error, or `idle` without traffic.
pub fn pump(client: &mut TcpStream, upstream: &mut TcpStream, first: &[u8], idle: Duration) {
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
    let idle_ms = idle.as_millis().min(i32::MAX as u128) as libc::c_int;
    while open[0] || open[1] {
        let mut fds = [poll_entry(client, open[0]), poll_entry(upstream, open[1])];
        // SAFETY: polling two fds borrowed for the call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, idle_ms) };
        if n == 0 {
            return; // idle
        }
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
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
            match from.read(&mut buf) {
                Ok(0) => {
                    open[side] = false;
                    let _ = to.shutdown(Shutdown::Write);
                }
                Ok(n) => {
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

fn poll_entry(s: &TcpStream, open: bool) -> libc::pollfd {
    libc::pollfd {
        fd: if open { s.as_raw_fd() } else { -1 },
        events: libc::POLLIN,
        revents: 0,
    }
}
