//! Stdout, shared by the two writers of a stdio session: rmcp (for
//! everything it answers) and the threads that answer direct calls. Each
//! message is written whole under stdout's lock (one `write` unless the
//! pipe is full), so messages never interleave; stdout carries nothing
//! else (logs go to stderr).

use std::io::Write;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use serde::Serialize;
use tokio::io::AsyncWrite;

/// Writes whole protocol messages to stdout.
#[derive(Default)]
pub struct Output;

impl Output {
    /// Writes `message` as one line of JSON. A client that has stopped
    /// reading (a closed pipe) is not an error worth more than a debug line:
    /// the session ends on its own when stdin closes.
    pub fn send<T: Serialize>(&self, message: &T) {
        let mut line = Vec::with_capacity(512);
        if let Err(e) = serde_json::to_writer(&mut line, message) {
            tracing::error!("cannot encode a protocol message: {e}");
            return;
        }
        line.push(b'\n');
        if let Err(e) = self.write(&line) {
            tracing::debug!("cannot write to stdout: {e}");
        }
    }

    /// Writes bytes that hold whole messages.
    fn write(&self, bytes: &[u8]) -> std::io::Result<()> {
        let mut out = std::io::stdout().lock();
        out.write_all(bytes)?;
        out.flush()
    }
}

/// rmcp's side of stdout. rmcp's framing hands over whole encoded messages
/// in each write, and each is written whole before the write returns (a
/// blocking write on the session's own thread: stdout is a pipe the client
/// drains, and nothing else waits on that thread meanwhile).
pub struct RmcpOutput(pub Arc<Output>);

impl AsyncWrite for RmcpOutput {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Poll::Ready(self.0.write(buf).map(|()| buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
