//! The async runtime MCP clients run on: their own, because mounting and
//! calls reach them from blocking code, some of it on the host's runtime
//! threads (where `block_on` is not allowed).

use std::future::Future;
use std::sync::{mpsc, OnceLock};

use tokio::runtime::{Handle, Runtime};

use super::error::RuntimeError;

static RUNTIME: OnceLock<Result<Runtime, RuntimeError>> = OnceLock::new();

/// The MCP clients' runtime.
pub fn handle() -> Result<Handle, RuntimeError> {
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("toolhost-mcp-client")
                .enable_all()
                .build()
                .map_err(|e| RuntimeError::Start(e.to_string()))
        })
        .as_ref()
        .map(|rt| rt.handle().clone())
        .map_err(Clone::clone)
}

/// Runs `future` on the MCP runtime and blocks this thread for its output.
pub fn wait<T: Send + 'static>(future: impl Future<Output = T> + Send + 'static) -> Result<T, RuntimeError> {
    let handle = handle()?;
    let (tx, rx) = mpsc::channel();
    handle.spawn(async move {
        let _ = tx.send(future.await);
    });
    rx.recv().map_err(|_| RuntimeError::NoAnswer)
}
