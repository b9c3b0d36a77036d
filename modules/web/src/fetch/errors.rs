//! Turning transport errors into messages a model can act on.

use std::error::Error;
use std::time::Duration;

use toolhost_core::ToolError;
use url::Url;

use crate::policy::Refusal;

/// The error chain as one line, without repeats.
pub fn chain(e: &dyn Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next: Option<&dyn Error> = Some(e);
    while let Some(err) = next {
        let text = err.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = err.source();
    }
    parts.join(": ")
}

fn refusal_in(e: &(dyn Error + 'static)) -> Option<String> {
    let mut next: Option<&(dyn Error + 'static)> = Some(e);
    while let Some(err) = next {
        if let Some(r) = err.downcast_ref::<Refusal>() {
            return Some(r.0.clone());
        }
        next = err.source();
    }
    None
}

/// Maps a failed request: a policy refusal from the resolver becomes
/// `policy_denied`, a connect timeout `timeout`, the rest `error`.
pub fn request_error(url: &Url, connect_timeout: Duration, e: &reqwest::Error) -> ToolError {
    if let Some(message) = refusal_in(e) {
        return ToolError::denied(message);
    }
    let detail = chain(e);
    if e.is_connect() && e.is_timeout() {
        return ToolError::timeout(format!(
            "could not connect to {url} within {:.1}s (connect_timeout_secs)",
            connect_timeout.as_secs_f64()
        ));
    }
    if e.is_connect() {
        return ToolError::new("connect_failed", format!("could not connect to {url}: {detail}"))
            .retryable(true);
    }
    if e.is_timeout() {
        return ToolError::timeout(format!("{url} did not answer in time: {detail}"));
    }
    ToolError::new("fetch_failed", format!("fetching {url} failed: {detail}")).retryable(true)
}
