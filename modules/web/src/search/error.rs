//! Why web_search cannot be mounted (its configuration), or why a backend's
//! answer could not be read. The mount logs the first and leaves the tool
//! out; the second is the call's `search_failed` error.

/// What the `search.*` configuration lacks or gets wrong.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Neither backend is configured.
    #[error("no search backend is configured; set search.searxng_url (a SearXNG instance with the JSON format enabled) or search.brave_api_key_env (the name of the environment variable holding a Brave Search API key) in the web module's config")]
    NoBackend,
    /// `backend = "searxng"` without `searxng_url`.
    #[error("search.backend is \"searxng\" but search.searxng_url is not set")]
    NoSearxngUrl,
    /// `backend = "brave"` without `brave_api_key_env`.
    #[error("search.backend is \"brave\" but search.brave_api_key_env is not set")]
    NoBraveKeyVariable,
    /// The variable that should hold the Brave key is unset or empty.
    #[error("search.brave_api_key_env names {0}, but that environment variable is not set or is empty")]
    BraveKeyUnset(String),
    /// `brave_endpoint` does not parse.
    #[error("search.brave_endpoint {url:?} is not a URL: {error}")]
    BraveEndpoint {
        /// The configured value.
        url: String,
        /// What the URL parser said.
        error: url::ParseError,
    },
    /// `searxng_url` does not parse.
    #[error("search.searxng_url {url:?} is not a URL ({error}); write e.g. \"http://127.0.0.1:8888\"")]
    SearxngUrl {
        /// The configured value.
        url: String,
        /// What the URL parser said.
        error: url::ParseError,
    },
    /// `searxng_url` is not http(s).
    #[error("search.searxng_url {0:?} must be an http or https URL")]
    SearxngScheme(String),
    /// `backend` names neither backend.
    #[error("search.backend {0:?} is unknown; use \"searxng\" or \"brave\"")]
    UnknownBackend(String),
}

/// A backend answered with JSON that is not its format.
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    /// Brave's answer.
    #[error("Brave Search answered with unexpected JSON ({0})")]
    Brave(serde_json::Error),
    /// SearXNG's answer (often: the instance has the JSON format off).
    #[error("SearXNG answered with something other than its JSON format ({0})")]
    Searxng(serde_json::Error),
}
