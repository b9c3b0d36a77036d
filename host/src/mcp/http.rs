//! MCP over rmcp's streamable HTTP transport, served with hyper. Loopback by
//! default; any other bind needs a bearer token, and a request without it
//! gets 401 before anything runs.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;

use super::auth::{self, Body};
use super::ToolhostServer;
use crate::cancel::CancelToken;
use crate::pipeline::Pipeline;

/// Where the MCP endpoint answers (also at `/`).
pub const ENDPOINT: &str = "/mcp";

/// How to listen.
pub struct Options {
    /// `HOST:PORT`, `IP:PORT`, or a bare port (loopback).
    pub addr: String,
    /// The bearer token every request must carry, if any.
    pub token: Option<String>,
}

/// Resolves the address: a bare port (or `:PORT`) means loopback.
pub async fn resolve(addr: &str) -> Result<SocketAddr, String> {
    let addr = addr.trim();
    let port_only = addr.strip_prefix(':').unwrap_or(addr);
    if let Ok(port) = port_only.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    if let Ok(socket) = addr.parse::<SocketAddr>() {
        return Ok(socket);
    }
    tokio::net::lookup_host(addr)
        .await
        .map_err(|e| {
            format!("cannot resolve the address '{addr}': {e} (use HOST:PORT, e.g. 127.0.0.1:8080)")
        })?
        .next()
        .ok_or_else(|| format!("the address '{addr}' resolves to nothing"))
}

/// Serves until `shutdown` fires. Errors are for the user (bad address, no
/// token off loopback, port taken).
pub async fn serve(pipeline: Arc<Pipeline>, shutdown: CancelToken, options: Options) -> Result<(), String> {
    let addr = resolve(&options.addr).await?;
    let token = options.token.filter(|t| !t.trim().is_empty());
    let loopback = auth::is_loopback(&addr);
    if !loopback && token.is_none() {
        return Err(format!(
            "serving on {addr} (beyond loopback) needs a bearer token: pass --token or set TOOLHOST_TOKEN"
        ));
    }
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let local = listener
        .local_addr()
        .map_err(|e| format!("cannot read the bound address: {e}"))?;

    let mut config = StreamableHttpServerConfig::default();
    if !loopback {
        // Host checks guard loopback servers against DNS rebinding; beyond
        // loopback the token does that job, and the names are the operator's.
        config = config.disable_allowed_hosts();
    }
    let sessions_done = config.cancellation_token.clone();
    let server = ToolhostServer::new(pipeline, shutdown.clone());
    let mcp = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let token: Option<Arc<str>> = token.map(Arc::from);
    eprintln!(
        "toolhost: serving MCP over streamable HTTP at http://{local}{ENDPOINT}{}",
        if token.is_some() {
            " (bearer token required)"
        } else {
            ""
        }
    );

    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    continue;
                }
            },
            _ = shutdown.cancelled() => break,
        };
        let mcp = mcp.clone();
        let token = token.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                let mcp = mcp.clone();
                let token = token.clone();
                async move { Ok::<_, Infallible>(route(&mcp, token.as_deref(), request).await) }
            });
            let connection =
                hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service);
            if let Err(e) = connection.await {
                tracing::debug!(%peer, "HTTP connection ended: {e}");
            }
        });
    }
    sessions_done.cancel();
    Ok(())
}

/// Token first, then the endpoint; everything else is 404.
async fn route(
    mcp: &StreamableHttpService<ToolhostServer, LocalSessionManager>,
    token: Option<&str>,
    request: Request<Incoming>,
) -> Response<Body> {
    if let Some(token) = token {
        if !auth::authorized(request.headers(), token) {
            tracing::info!(path = %request.uri().path(), "rejected an HTTP request without the bearer token");
            return auth::unauthorized();
        }
    }
    let path = request.uri().path();
    if path != ENDPOINT && path != "/" {
        return auth::plain(StatusCode::NOT_FOUND, "not found: the MCP endpoint is /mcp\n")
            .unwrap_or_else(|_| auth::unauthorized());
    }
    mcp.handle(request).await
}
