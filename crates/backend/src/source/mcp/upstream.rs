//! What a mounted toolhost says about its own result in `_meta.toolhost`
//! (see `host/src/mcp/convert.rs`, the serving side): the status, error
//! code, retryability and details of a failure, and the secrets it
//! redacted. Read so that a failure keeps its kind across a gateway
//! (`timeout` stays retryable, `invalid_input` stays a validation error)
//! instead of every failure becoming `tool_error`.
//!
//! These are the upstream server's claims. They only describe its answer:
//! the host under test still runs its own policy, approval, hooks, bounding
//! and audit on the call, and a server that marks a result `isError` cannot
//! turn it into a success by claiming `status: success`.

use serde::Deserialize;
use serde_json::{Map, Value};
use toolhost_core::Status;

/// The `_meta.toolhost` object of an upstream result, when it is one a
/// toolhost sent (a `status` and, for a failure, a `code`).
#[derive(Debug, Clone, Deserialize)]
pub struct Upstream {
    /// The upstream call's status.
    pub status: Status,
    /// Its error code, on failure.
    #[serde(default)]
    pub code: Option<String>,
    /// Whether the same call may succeed later.
    #[serde(default)]
    pub retryable: Option<bool>,
    /// The error's structured particulars.
    #[serde(default)]
    pub details: Option<Value>,
    /// Secrets the upstream host redacted, by kind.
    #[serde(default)]
    pub redactions: Option<Map<String, Value>>,
}

impl Upstream {
    /// The account in `meta`, if `meta.toolhost` reads as one; anything
    /// else (another server's `_meta`, a malformed one) is ignored.
    pub fn from_meta(meta: Option<&rmcp::model::MetaObject>) -> Option<Upstream> {
        let info = meta?.0.get("toolhost")?;
        serde_json::from_value(info.clone()).ok()
    }

    /// The failure this account describes, if it is a failure with a code.
    pub fn failure(&self) -> Option<(Status, &str)> {
        match (self.status, self.code.as_deref()) {
            (Status::Success, _) | (_, None) => None,
            (status, Some(code)) => Some((status, code)),
        }
    }
}
