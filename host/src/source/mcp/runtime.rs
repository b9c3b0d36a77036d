//! The async runtime MCP clients run on: their own, because mounting and
//! calls reach them from blocking code, some of it on the host's runtime
//! threads (where `block_on` is not allowed).

use std::future::Future;
use std::sync::{mpsc, OnceLock};

use tokio::runtime::{Handle, Runtime};

static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();

/// The MCP clients' runtime.
pub fn handle() -> Result<Handle, String> {
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("toolhost-mcp-client")
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start the MCP client runtime: {e}"))
        })
        .as_ref()
        .map(|rt| rt.handle().clone())
        .map_err(Clone::clone)
}

/// Runs `future` on the MCP runtime and blocks this thread for its output.
pub fn wait<T: Send + 'static>(future: impl Future<Output = T> + Send + 'static) -> Result<T, String> {
    let handle = handle()?;
    let (tx, rx) = mpsc::channel();
    handle.spawn(async move {
        let _ = tx.send(future.await);
    });
    rx.recv()
        .map_err(|_| "the MCP client task ended without an answer".to_string())
}
