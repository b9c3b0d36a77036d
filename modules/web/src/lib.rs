//! toolhost's web module: `web_fetch` (alias `read_web_page`) and
//! `web_search`.
//!
//! web_fetch is built to be safe to hand to a model: every spelling of an
//! internal address is refused (the URL parser normalizes numeric IPv4
//! forms; IPv6 forms embedding IPv4 are judged by the IPv4 address), names
//! are resolved here and the connection is pinned to the checked addresses,
//! every redirect hop is re-checked, and bodies are read under a byte cap
//! that bounds decompressed bytes too. HTML becomes Markdown after
//! main-content extraction; results are labelled untrusted.
//!
//! web_search talks to a real backend (SearXNG or Brave) or is not mounted.
//!
//! The module owns a tokio runtime, built on the first call (mount stays
//! cheap) and shut down by the cleanup.

#![forbid(unsafe_code)]
#![warn(missing_docs)]
pub mod config;
pub mod convert;
pub mod fetch;
pub mod net;
pub mod page;
pub mod policy;
pub mod search;
pub mod tools;

use std::sync::Arc;

use toolhost_core::{Cleanup, Coordinator, Level, MountError};

use config::{Config, Settings};
use fetch::Fetcher;
use net::runtime::Runtime;
use search::Backend;
use tools::fetch::WebFetch;
use tools::search::WebSearch;

toolhost_core::export_module! {
    name: "web",
    description: "Web access: web_fetch (SSRF-safe, bounded, HTML to Markdown) and web_search (SearXNG or Brave)",
    mount: mount,
}

/// Validates the config and registers web_fetch, and web_search when a
/// backend is configured (otherwise logs why at warn level).
pub fn mount(coordinator: &Coordinator, config: Config) -> Result<Cleanup, MountError> {
    let settings =
        Arc::new(Settings::from_config(&config).map_err(|e| MountError::new(format!("web: {e}")))?);
    let runtime = Arc::new(Runtime::default());
    let fetcher = Arc::new(Fetcher::new(settings.clone(), runtime.clone()));
    coordinator.register(WebFetch::new(fetcher))?;
    match Backend::from_config(&config.search, |var| std::env::var(var).ok()) {
        Ok(backend) => {
            coordinator.register(WebSearch::new(
                backend,
                settings,
                config.search.default_results,
                runtime.clone(),
            ))?;
        }
        Err(why) => coordinator.log(Level::Info, format!("web_search is not mounted: {why}")),
    }
    Ok(Cleanup::new(move || runtime.shutdown()))
}
