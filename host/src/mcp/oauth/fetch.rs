//! Fetching the issuer's keys: its OpenID discovery document (for
//! `jwks_uri`, unless the plan names `jwks_url`), then the JWKS. Each fetch
//! is bounded in time and size and follows no redirect, so a slow, huge or
//! redirecting answer cannot hang the host or make it fetch elsewhere.

use std::time::Duration;

use jsonwebtoken::jwk::JwkSet;

/// The longest a fetch (connect, request, body) may take.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest discovery document or JWKS read.
pub const MAX_BYTES: usize = 256 * 1024;

/// Why the keys could not be fetched (the message goes into a 503).
#[derive(Debug, Clone, thiserror::Error)]
pub enum FetchError {
    /// No connection, timeout, TLS failure.
    #[error("cannot reach {url}: {reason}")]
    Unreachable {
        /// What was fetched.
        url: String,
        /// reqwest's account.
        reason: String,
    },
    /// An answer other than 200.
    #[error("{url} answered HTTP {status}")]
    Status {
        /// What was fetched.
        url: String,
        /// The status.
        status: u16,
    },
    /// More than [`MAX_BYTES`].
    #[error("{url} sent more than {MAX_BYTES} bytes")]
    TooLarge {
        /// What was fetched.
        url: String,
    },
    /// Not the JSON expected, or a discovery document for another issuer.
    #[error("{url}: {reason}")]
    Content {
        /// What was fetched.
        url: String,
        /// What is wrong.
        reason: String,
    },
}

/// The HTTP client for the IdP: bounded, no redirects.
pub fn client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .timeout(FETCH_TIMEOUT)
        .connect_timeout(FETCH_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())
}

/// `jwks_uri` from `<issuer>/.well-known/openid-configuration`, whose
/// `issuer` must be the configured one.
pub async fn discover(client: &reqwest::Client, issuer: &str) -> Result<String, FetchError> {
    let url = format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    );
    let doc: serde_json::Value = get_json(client, &url).await?;
    let content = |reason: String| FetchError::Content {
        url: url.clone(),
        reason,
    };
    if doc.get("issuer").and_then(|v| v.as_str()) != Some(issuer) {
        return Err(content(format!(
            "the discovery document's issuer is {}, not {issuer}",
            doc.get("issuer")
                .map(|v| v.to_string())
                .unwrap_or_else(|| "missing".into())
        )));
    }
    let jwks = doc
        .get("jwks_uri")
        .and_then(|v| v.as_str())
        .ok_or_else(|| content("the discovery document has no jwks_uri".into()))?;
    crate::plan::oauth::fetchable("jwks_uri", jwks).map_err(|e| content(e.to_string()))?;
    Ok(jwks.to_string())
}

/// The JWKS at `url`.
pub async fn jwks(client: &reqwest::Client, url: &str) -> Result<JwkSet, FetchError> {
    get_json(client, url).await
}

async fn get_json<T: serde::de::DeserializeOwned>(
    client: &reqwest::Client,
    url: &str,
) -> Result<T, FetchError> {
    let unreachable = |e: reqwest::Error| FetchError::Unreachable {
        url: url.to_string(),
        reason: e.without_url().to_string(),
    };
    let mut response = client
        .get(url)
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(unreachable)?;
    if response.status() != reqwest::StatusCode::OK {
        return Err(FetchError::Status {
            url: url.to_string(),
            status: response.status().as_u16(),
        });
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(unreachable)? {
        if body.len() + chunk.len() > MAX_BYTES {
            return Err(FetchError::TooLarge { url: url.to_string() });
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body).map_err(|e| FetchError::Content {
        url: url.to_string(),
        reason: format!("not the JSON expected: {e}"),
    })
}
