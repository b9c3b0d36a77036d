//! MCP over stdin/stdout. Stdout carries protocol messages only; logs go to
//! stderr. When stdin closes (the client went away) every call in flight is
//! cancelled at once, so a tool's processes do not outlive the client.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rmcp::ServiceExt;
use tokio::io::{AsyncRead, ReadBuf};

use super::ToolhostServer;
use crate::cancel::CancelToken;
use crate::pipeline::Pipeline;

/// Serves until the client closes stdin or `shutdown` fires. Returns an
/// error only when the session could not start.
///
/// The session runs on its own single-threaded runtime: one client sends
/// one message at a time, and keeping rmcp's per-request tasks on one
/// thread saves the cross-thread wake-ups that otherwise dominate the
/// server's CPU time per small call. Tools still run on blocking threads.
pub async fn serve(pipeline: Arc<Pipeline>, shutdown: CancelToken) -> Result<(), String> {
    let (done, finished) = tokio::sync::oneshot::channel();
    let thread = std::thread::Builder::new()
        .name("toolhost-mcp".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(runtime) => runtime,
                Err(e) => {
                    let _ = done.send(Err(format!("cannot start the MCP runtime: {e}")));
                    return;
                }
            };
            let served = runtime.block_on(serve_here(pipeline, shutdown));
            // Tools that ignored cancellation must not hold the exit.
            runtime.shutdown_background();
            let _ = done.send(served);
        });
    if let Err(e) = thread {
        return Err(format!("cannot start the MCP thread: {e}"));
    }
    finished
        .await
        .unwrap_or_else(|_| Err("the MCP session ended abnormally".into()))
}

/// The session itself, on whatever runtime runs it.
async fn serve_here(pipeline: Arc<Pipeline>, shutdown: CancelToken) -> Result<(), String> {
    let (stdin, stdout) = rmcp::transport::stdio_pipes();
    let gone = CancelToken::new();
    let stdin = EofWatch {
        inner: stdin,
        eof: gone.clone(),
    };
    let server = ToolhostServer::new(pipeline, gone.clone());
    let running = tokio::select! {
        running = server.serve((stdin, stdout)) => match running {
            Ok(running) => running,
            // A client that leaves before initializing is not a failure.
            Err(_) if gone.is_cancelled() => return Ok(()),
            Err(e) => return Err(format!("the MCP session did not start: {e}")),
        },
        _ = shutdown.cancelled() => return Ok(()),
    };
    let stop = running.cancellation_token();
    let watcher = tokio::spawn(async move {
        shutdown.cancelled().await;
        gone.cancel();
        stop.cancel();
    });
    let reason = running.waiting().await;
    watcher.abort();
    tracing::info!(?reason, "MCP session over stdio ended");
    Ok(())
}

/// Stdin that fires a token on end of file or read error.
struct EofWatch<R> {
    inner: R,
    eof: CancelToken,
}

impl<R: AsyncRead + Unpin> AsyncRead for EofWatch<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        match &polled {
            Poll::Ready(Ok(())) if buf.filled().len() == before && buf.remaining() > 0 => {
                tracing::info!("stdin closed: the client is gone; cancelling its calls");
                self.eof.cancel();
            }
            Poll::Ready(Err(e)) => {
                tracing::info!("stdin failed ({e}): cancelling the client's calls");
                self.eof.cancel();
            }
            _ => {}
        }
        polled
    }
}
