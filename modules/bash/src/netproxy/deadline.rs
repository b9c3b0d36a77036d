//! One deadline for a whole request head or SOCKS5 handshake, not per
//! read: a client sending a byte every few seconds would otherwise hold a
//! connection (and its thread) open for as long as it liked.

use std::io::{self, Read};
use std::net::TcpStream;
use std::time::Instant;

/// Reads from `stream` until `until`, then fails with `TimedOut`.
pub struct Deadline<'a> {
    stream: &'a TcpStream,
    until: Instant,
}

impl<'a> Deadline<'a> {
    /// Reads from `stream` until `until`.
    pub fn new(stream: &'a TcpStream, until: Instant) -> Deadline<'a> {
        Deadline { stream, until }
    }
}

impl Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        self.stream.set_read_timeout(Some(left))?;
        let mut stream = self.stream;
        stream.read(buf)
    }
}
