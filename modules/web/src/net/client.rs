//! The HTTP clients: one for fetches (policy resolver, no redirects, no
//! proxy, no automatic decompression) and one for the configured search
//! backend (trusted by the operator, so no address policy).

use std::sync::Arc;
use std::time::Duration;

use reqwest::redirect;

use super::resolver::PolicyResolver;
use crate::config::Settings;

/// The HTTP client could not be built (TLS roots, resolver). A single
/// struct: both tools answer it with the code `client` and never branch.
#[derive(Debug, thiserror::Error)]
#[error("could not build the HTTP client: {0}")]
pub struct ClientError(#[from] reqwest::Error);

/// Builds the fetch client: every connection resolves through the policy,
/// redirects are followed by hand (each hop re-checked), and bodies arrive
/// compressed so the module can bound the decompressed size itself.
pub fn fetch_client(settings: &Settings) -> Result<reqwest::Client, ClientError> {
    let resolver = PolicyResolver::new(
        Arc::new(settings.policy.clone()),
        Arc::new(settings.resolve.clone()),
    );
    base(settings)
        .dns_resolver(Arc::new(resolver))
        .build()
        .map_err(ClientError)
}

/// Builds the search client (same limits, system DNS, no redirects).
pub fn search_client(settings: &Settings) -> Result<reqwest::Client, ClientError> {
    base(settings).build().map_err(ClientError)
}

fn base(settings: &Settings) -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .user_agent(settings.user_agent.clone())
        .redirect(redirect::Policy::none())
        // A proxy would resolve names itself, past the address policy.
        .no_proxy()
        .connect_timeout(settings.connect_timeout)
        .pool_idle_timeout(Duration::from_secs(30))
        .pool_max_idle_per_host(4)
        .tcp_nodelay(true)
}
