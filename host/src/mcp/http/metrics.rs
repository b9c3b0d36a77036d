//! `/metrics` on `serve --http`: the Prometheus text exposition of
//! [`toolhost_telemetry::metrics`].
//!
//! Who may read it is the plan's `[host.metrics]`: by default a request
//! needs a bearer token the server accepts (the server's own or a
//! `[[principals]]` one), limited to `principals` when the plan lists them;
//! `public = true` answers anyone who can reach the port. The metrics name
//! every mounted tool, with call counts and latencies, whatever the
//! reader's grants; they carry no principal, input or id.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Response, StatusCode};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use super::auth::{self, Body, Principal};
use crate::plan::telemetry::MetricsSection;

/// Where the metrics are served.
pub const PATH: &str = "/metrics";

/// Who may read `/metrics`.
pub struct Access {
    enabled: bool,
    public: bool,
    principals: Vec<String>,
}

impl Access {
    /// The plan's `[host.metrics]`; turns recording on when it is served.
    pub fn new(section: &MetricsSection) -> Access {
        if section.enabled {
            toolhost_telemetry::metrics::enable();
        }
        Access {
            enabled: section.enabled,
            public: section.public,
            principals: section.principals.clone(),
        }
    }

    /// Whether `/metrics` is answered before any token is checked.
    pub fn public(&self) -> bool {
        self.enabled && self.public
    }

    /// The answer to an authenticated `principal`'s request.
    pub async fn answer_for(&self, principal: &Principal, sessions: &LocalSessionManager) -> Response<Body> {
        if !self.enabled {
            return auth::refusal(
                StatusCode::NOT_FOUND,
                "not found: /metrics is off ([host.metrics] enabled = false)\n".into(),
            );
        }
        if !self.principals.is_empty() && !self.principals.contains(&principal.0) {
            return auth::refusal(
                StatusCode::FORBIDDEN,
                format!(
                    "forbidden: principal '{}' may not read /metrics ([host.metrics] principals)\n",
                    principal.0
                ),
            );
        }
        answer(sessions).await
    }
}

/// The metrics, with the open sessions counted now.
pub async fn answer(sessions: &LocalSessionManager) -> Response<Body> {
    toolhost_telemetry::metrics::set_sessions(sessions.sessions.read().await.len());
    Response::builder()
        .status(StatusCode::OK)
        .header(
            hyper::header::CONTENT_TYPE,
            toolhost_telemetry::metrics::CONTENT_TYPE,
        )
        .body(Full::new(Bytes::from(toolhost_telemetry::metrics::encode())).boxed())
        .unwrap_or_else(|_| {
            auth::refusal(
                StatusCode::INTERNAL_SERVER_ERROR,
                "cannot encode the metrics\n".into(),
            )
        })
}
