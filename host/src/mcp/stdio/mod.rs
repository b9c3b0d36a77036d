//! MCP over stdin/stdout. Stdout carries protocol messages only (fd 1 is
//! pointed at stderr, see [`output`]); logs go to stderr. When stdin closes (the client went away) every call in flight is
//! cancelled at once, so a tool's processes do not outlive the client.
//!
//! rmcp runs the session ([`ToolhostServer`] on rmcp's transport), but
//! stdin is read by threads of ours ([`input`]), which hand rmcp its bytes
//! through a [`relay`] and run plain `tools/call` requests themselves
//! ([`direct`]): a small call then costs one thread wake-up instead of
//! three. Both write whole messages to one [`output`].

mod direct;
mod error;
mod input;
mod judge;
mod output;
mod relay;

use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::ServiceExt;

use super::ToolhostServer;
use crate::cancel::CancelToken;
use crate::pipeline::Pipeline;
use direct::Router;
use output::{Output, RmcpIds, RmcpOutput};
use relay::Relay;

pub use error::StdioError;

/// How long past its grace period a cancelled call may take to be answered
/// before the server exits without it.
const DRAIN_MARGIN: Duration = Duration::from_secs(2);

/// Moves stdout aside for the protocol before anything else can write to
/// it (call it before the plan's modules mount): from then on fd 1 is
/// stderr, and only the server writes to the client.
pub fn claim_stdout() -> Result<(), StdioError> {
    Output::protocol().map(drop).map_err(StdioError::Stdout)
}

/// Serves until the client closes stdin or `shutdown` fires. Returns an
/// error only when the session could not start.
///
/// rmcp's session runs on its own single-threaded runtime: it only sees
/// what is not a direct call, one message at a time. Direct calls use the
/// caller's runtime for their async stages.
pub async fn serve(pipeline: Arc<Pipeline>, shutdown: CancelToken) -> Result<(), StdioError> {
    let output = Output::protocol().map_err(StdioError::Stdout)?;
    let (relay_tx, relay) = Relay::new();
    let gone = CancelToken::new();
    let rmcp_ids = RmcpIds::default();
    let router = Arc::new(Router::new(
        pipeline.clone(),
        tokio::runtime::Handle::current(),
        output.clone(),
        relay_tx,
        gone.clone(),
        rmcp_ids.clone(),
    ));
    input::start(router.clone()).map_err(StdioError::Stdin)?;
    let _on_shutdown = {
        let router = router.clone();
        shutdown.on_cancel(move || router.close())
    };
    let grace = Duration::from_millis(pipeline.host().plan.host.cancel_grace_ms);

    let (done, finished) = tokio::sync::oneshot::channel();
    let thread = std::thread::Builder::new()
        .name("toolhost-mcp".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(runtime) => runtime,
                Err(source) => {
                    let _ = done.send(Err(StdioError::Start {
                        what: "runtime",
                        source,
                    }));
                    return;
                }
            };
            let transport = AsyncRwTransport::new_server(relay, RmcpOutput(output.clone(), rmcp_ids.clone()));
            let server = ToolhostServer::new(pipeline, gone.clone());
            let served = runtime.block_on(session(server, transport, shutdown, gone, &router));
            // Tools that ignored cancellation must not hold the exit.
            runtime.shutdown_background();
            // rmcp's session is over: what it took and did not answer (a
            // shutdown, a tool stuck past the grace) is answered here, so
            // every request gets exactly one answer.
            answer_unanswered(&output, &rmcp_ids);
            // Direct calls were cancelled with the session; let them answer
            // (and be recorded) before the process goes.
            let running = router.drain(grace + DRAIN_MARGIN);
            if running > 0 {
                tracing::warn!(running, "exiting with direct calls still running");
            }
            let _ = done.send(served);
        });
    if let Err(source) = thread {
        return Err(StdioError::Start {
            what: "thread",
            source,
        });
    }
    finished.await.unwrap_or(Err(StdioError::Abnormal))
}

/// Answers, with an error, every request rmcp took and never answered.
fn answer_unanswered(output: &Output, rmcp_ids: &RmcpIds) {
    for id in rmcp_ids.take_all() {
        tracing::warn!(%id, "the session ended before this request was answered");
        let error = rmcp::model::ErrorData::internal_error(
            "the server's session ended (stdin closed or the host shut down) before this request finished; \
             it was cancelled",
            None,
        );
        output.send(&rmcp::model::ServerJsonRpcMessage::error(error, Some(id)));
    }
}

/// One stdio session as rmcp runs it; direct calls start once it is
/// initialized (never in a stateless 2026-07-28 session, whose every
/// request rmcp checks) and are closed when it ends.
async fn session(
    server: ToolhostServer,
    transport: AsyncRwTransport<rmcp::RoleServer, Relay, RmcpOutput>,
    shutdown: CancelToken,
    gone: CancelToken,
    router: &Router,
) -> Result<(), StdioError> {
    let running = tokio::select! {
        running = server.serve(transport) => match running {
            Ok(running) => running,
            // A client that leaves before initializing is not a failure.
            Err(_) if gone.is_cancelled() => return Ok(()),
            Err(e) => return Err(StdioError::Handshake(Box::new(e))),
        },
        _ = shutdown.cancelled() => return Ok(()),
    };
    if crate::mcp::adapter::direct_calls_allowed(running.peer()) {
        router.start_direct_calls(running.peer().clone());
    }
    let stop = running.cancellation_token();
    let watcher = tokio::spawn(async move {
        shutdown.cancelled().await;
        gone.cancel();
        stop.cancel();
    });
    let reason = running.waiting().await;
    watcher.abort();
    router.close();
    tracing::info!(?reason, "MCP session over stdio ended");
    Ok(())
}
