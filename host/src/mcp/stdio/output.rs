//! The protocol stream, shared by the two writers of a stdio session: rmcp
//! (for everything it answers) and the threads that answer direct calls.
//! Each message is written whole under one lock (one `write` unless the
//! pipe is full), so messages never interleave.
//!
//! The stream is the process's original stdout, moved to a private
//! descriptor ([`Output::take_stdout`]); fd 1 then points at stderr. So a
//! module (or a library, or anything else in the process) that prints to
//! stdout writes to the log, never into the middle of a JSON-RPC message,
//! and child processes that inherit fd 1 do the same.

use std::fs::File;
use std::io::Write;
use std::os::fd::{FromRawFd, OwnedFd};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use std::collections::HashSet;

use rmcp::model::RequestId;
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use tokio::io::AsyncWrite;

/// Writes whole protocol messages to the client.
pub struct Output {
    stream: Mutex<File>,
}

impl Output {
    /// The protocol stream: stdout, moved aside on first use (see
    /// [`Output::take_stdout`]). Called before the plan's modules load, so
    /// what they print while mounting cannot reach the client either.
    pub fn protocol() -> std::io::Result<Arc<Output>> {
        static STREAM: OnceLock<Arc<Output>> = OnceLock::new();
        static TAKING: Mutex<()> = Mutex::new(());
        let _once = TAKING.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(stream) = STREAM.get() {
            return Ok(stream.clone());
        }
        let stream = Arc::new(Output::take_stdout()?);
        Ok(STREAM.get_or_init(|| stream).clone())
    }

    /// Moves stdout to a private close-on-exec descriptor and points fd 1
    /// at stderr; the returned writer is the only way to the client.
    fn take_stdout() -> std::io::Result<Output> {
        // Whatever Rust's stdout buffer holds belongs to the old stream.
        let _ = std::io::stdout().lock().flush();
        // SAFETY: fcntl on fd 1 with F_DUPFD_CLOEXEC creates a new
        // descriptor (≥ 3) or fails; no memory is involved.
        let private = unsafe { libc::fcntl(1, libc::F_DUPFD_CLOEXEC, 3) };
        if private < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `private` was just created and is owned by nobody else.
        let private = unsafe { OwnedFd::from_raw_fd(private) };
        // SAFETY: dup2 of two open descriptors; fd 1 is atomically replaced.
        if unsafe { libc::dup2(2, 1) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Output {
            stream: Mutex::new(File::from(private)),
        })
    }

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
        let mut out = self.stream.lock().unwrap_or_else(PoisonError::into_inner);
        out.write_all(bytes)
    }
}

/// The requests rmcp has taken and not yet answered, so a reused id is
/// refused before rmcp sees it (rmcp would run both, or neither), and so
/// the end of stdin can wait for their answers ([`RmcpIds::wait_empty`]).
#[derive(Clone, Default)]
pub struct RmcpIds(Arc<Owed>);

#[derive(Default)]
struct Owed {
    ids: Mutex<HashSet<RequestId>>,
    /// Signalled when the last owed answer goes, while someone waits (a
    /// notify is a system call even with nobody waiting).
    empty: Condvar,
    waiting: AtomicBool,
}

impl RmcpIds {
    /// rmcp now owes an answer to `id`.
    pub fn insert(&self, id: RequestId) {
        self.lock().insert(id);
    }

    /// Whether rmcp owes an answer to `id`.
    pub fn contains(&self, id: &RequestId) -> bool {
        self.lock().contains(id)
    }

    /// rmcp no longer owes one (answered, or cancelled by the client).
    pub fn forget(&self, id: &RequestId) {
        let mut ids = self.lock();
        ids.remove(id);
        if ids.is_empty() && self.0.waiting.load(Ordering::SeqCst) {
            self.0.empty.notify_all();
        }
    }

    /// Waits up to `timeout` until rmcp owes no answer; returns whether it
    /// owes none.
    pub fn wait_empty(&self, timeout: Duration) -> bool {
        let end = Instant::now() + timeout;
        let mut ids = self.lock();
        self.0.waiting.store(true, Ordering::SeqCst);
        while !ids.is_empty() {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            ids = match self.0.empty.wait_timeout(ids, left) {
                Ok((ids, _)) => ids,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        ids.is_empty()
    }

    /// The ids rmcp still owes answers to, forgotten: once its session is
    /// over, whoever takes them answers them.
    pub fn take_all(&self) -> Vec<RequestId> {
        self.lock().drain().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<RequestId>> {
        self.0.ids.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forgets the ids of the responses in `bytes` (whole lines of JSON).
    fn answered(&self, bytes: &[u8]) {
        if self.lock().is_empty() {
            return;
        }
        for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            if let Ok(Sent {
                id: Some(id),
                method: None,
            }) = serde_json::from_slice::<Sent>(line)
            {
                self.forget(&id);
            }
        }
    }
}

/// What decides whether a message rmcp wrote answers a client's request.
#[derive(Deserialize)]
struct Sent {
    #[serde(default)]
    id: Option<RequestId>,
    #[serde(default)]
    method: Option<IgnoredAny>,
}

/// rmcp's side of stdout. rmcp's framing hands over whole encoded messages
/// in each write, and each is written whole before the write returns (a
/// blocking write on the session's own thread: stdout is a pipe the client
/// drains, and nothing else waits on that thread meanwhile).
pub struct RmcpOutput(pub Arc<Output>, pub RmcpIds);

impl AsyncWrite for RmcpOutput {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let written = self.0.write(buf).map(|()| buf.len());
        self.1.answered(buf);
        Poll::Ready(written)
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
