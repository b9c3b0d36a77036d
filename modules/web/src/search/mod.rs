//! web_search backends: SearXNG's JSON API (self-hosted, no key) and the
//! Brave Search API (key from an environment variable). Only real backends:
//! a failed search is an error, never made-up results.

pub mod brave;
mod error;
pub mod searxng;

pub use error::{AnswerError, ConfigError};

use serde::{Deserialize, Serialize};
use url::Url;

use crate::config::SearchConfig;

/// One search result.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Hit {
    /// The result's title.
    pub title: String,
    /// Where it points.
    pub url: String,
    /// The snippet the engine showed.
    pub snippet: String,
}

/// The configured backend.
#[derive(Debug, Clone)]
pub enum Backend {
    /// A SearXNG instance's `/search?format=json`.
    Searxng {
        /// The search endpoint.
        endpoint: Url,
    },
    /// The Brave Search API.
    Brave {
        /// The endpoint.
        endpoint: Url,
        /// The subscription token.
        key: String,
    },
}

impl Backend {
    /// The backend's name, for output and logs.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Searxng { .. } => "searxng",
            Backend::Brave { .. } => "brave",
        }
    }

    /// Chooses the backend from config; `Err` says why web_search cannot be
    /// mounted and what to set. `env` reads environment variables.
    pub fn from_config(
        config: &SearchConfig,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Backend, ConfigError> {
        let choice = match config.backend.as_deref() {
            Some(b) => b.trim().to_ascii_lowercase(),
            None if config.searxng_url.is_some() => "searxng".into(),
            None if config.brave_api_key_env.is_some() => "brave".into(),
            None => return Err(ConfigError::NoBackend),
        };
        match choice.as_str() {
            "searxng" => {
                let base = config.searxng_url.as_deref().ok_or(ConfigError::NoSearxngUrl)?;
                Ok(Backend::Searxng {
                    endpoint: searxng::endpoint(base)?,
                })
            }
            "brave" => {
                let var = config
                    .brave_api_key_env
                    .as_deref()
                    .ok_or(ConfigError::NoBraveKeyVariable)?;
                let key = env(var)
                    .filter(|k| !k.trim().is_empty())
                    .ok_or_else(|| ConfigError::BraveKeyUnset(var.to_string()))?;
                let endpoint =
                    Url::parse(&config.brave_endpoint).map_err(|error| ConfigError::BraveEndpoint {
                        url: config.brave_endpoint.clone(),
                        error,
                    })?;
                Ok(Backend::Brave { endpoint, key })
            }
            other => Err(ConfigError::UnknownBackend(other.to_string())),
        }
    }
}

/// One result as a backend's JSON gives it. The snippet is Brave's
/// `description` or SearXNG's `content`; each backend fills only its own.
#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    title: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    content: String,
}

/// The first `max` results that have a URL, their title and snippet as
/// plain text: how every backend's answer becomes hits.
fn hits(items: Vec<Item>, max: usize) -> Vec<Hit> {
    items
        .into_iter()
        .filter(|item| !item.url.is_empty())
        .take(max)
        .map(|item| {
            let snippet = if item.description.is_empty() {
                item.content
            } else {
                item.description
            };
            Hit {
                title: plain(&item.title),
                url: item.url,
                snippet: plain(&snippet),
            }
        })
        .collect()
}

/// Removes HTML tags and decodes the few entities engines put in snippets.
pub fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    let out = out
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&");
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_backend_says_what_to_set() {
        let err = Backend::from_config(&SearchConfig::default(), |_| None).unwrap_err();
        assert!(matches!(err, ConfigError::NoBackend), "{err}");
        let err = err.to_string();
        assert!(
            err.contains("searxng_url") && err.contains("brave_api_key_env"),
            "{err}"
        );
    }

    #[test]
    fn brave_needs_its_variable() {
        let config = SearchConfig {
            brave_api_key_env: Some("MY_KEY".into()),
            ..SearchConfig::default()
        };
        let err = Backend::from_config(&config, |_| None).unwrap_err();
        assert!(
            matches!(&err, ConfigError::BraveKeyUnset(var) if var == "MY_KEY"),
            "{err}"
        );
        assert!(err.to_string().contains("MY_KEY"), "{err}");
        let ok = Backend::from_config(&config, |v| (v == "MY_KEY").then(|| "k".to_string())).unwrap();
        assert_eq!(ok.name(), "brave");
    }

    #[test]
    fn snippets_lose_their_tags() {
        assert_eq!(
            plain("The <strong>Rust</strong> &amp; <em>friends</em>\n"),
            "The Rust & friends"
        );
    }
}
