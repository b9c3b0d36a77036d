//! The web_search tool: mounted only when a real backend is configured.

use std::sync::{Arc, OnceLock};

use reqwest::header::{ACCEPT, ACCEPT_ENCODING, CONTENT_ENCODING};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_core::{Context, Effect, Tool, ToolError, ToolSpec};

use crate::config::Settings;
use crate::fetch::body::Decoder;
use crate::fetch::errors;
use crate::net::client::search_client;
use crate::net::runtime::Runtime;
use crate::search::{brave, searxng, Backend, Hit};

/// web_search input.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchInput {
    /// What to search for.
    pub query: String,
    /// How many results to return (1 to 20; default set by the module's config).
    #[serde(default)]
    #[schemars(range(min = 1, max = 20))]
    pub max_results: Option<usize>,
}

/// web_search output.
#[derive(Serialize, Debug)]
pub struct SearchOutput {
    /// The query searched.
    pub query: String,
    /// The backend that answered.
    pub backend: &'static str,
    /// The results, best first.
    pub results: Vec<Hit>,
}

/// Searches the web through the configured backend.
pub struct WebSearch {
    backend: Backend,
    settings: Arc<Settings>,
    default_results: usize,
    runtime: Arc<Runtime>,
    client: OnceLock<reqwest::Client>,
}

impl WebSearch {
    /// The tool for `backend`.
    pub fn new(
        backend: Backend,
        settings: Arc<Settings>,
        default_results: usize,
        runtime: Arc<Runtime>,
    ) -> Self {
        WebSearch {
            backend,
            settings,
            default_results: default_results.clamp(1, 20),
            runtime,
            client: OnceLock::new(),
        }
    }

    fn client(&self) -> Result<reqwest::Client, ToolError> {
        if let Some(client) = self.client.get() {
            return Ok(client.clone());
        }
        let client = self
            .runtime
            .enter(|| search_client(&self.settings))?
            .map_err(|e| ToolError::new("client", e.to_string()))?;
        Ok(self.client.get_or_init(|| client).clone())
    }

    async fn search(&self, client: reqwest::Client, query: &str, max: usize) -> Result<Vec<Hit>, ToolError> {
        let name = self.backend.name();
        let request = match &self.backend {
            Backend::Searxng { endpoint } => client.get(searxng::request_url(endpoint, query)),
            Backend::Brave { endpoint, key } => client
                .get(brave::request_url(endpoint, query, max))
                .header("X-Subscription-Token", key.as_str()),
        };
        let url = match &self.backend {
            Backend::Searxng { endpoint } | Backend::Brave { endpoint, .. } => endpoint.clone(),
        };
        let mut response = request
            .header(ACCEPT, "application/json")
            .header(ACCEPT_ENCODING, "gzip, deflate")
            .send()
            .await
            .map_err(|e| {
                let inner = errors::request_error(&url, self.settings.connect_timeout, &e);
                ToolError::with_status(
                    inner.status(),
                    "search_failed",
                    format!("the {name} search failed: {}", inner.message()),
                )
                .retryable(true)
            })?;
        let status = response.status();
        let encoding = response
            .headers()
            .get(CONTENT_ENCODING)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let mut decoder = Decoder::new(encoding.as_deref(), self.settings.max_response_bytes)
            .map_err(|e| ToolError::new("search_failed", format!("the {name} search failed: {e}")))?;
        while let Some(chunk) = response.chunk().await.map_err(|e| {
            ToolError::new(
                "search_failed",
                format!("the {name} search failed while reading: {}", errors::chain(&e)),
            )
            .retryable(true)
        })? {
            if !decoder
                .feed(&chunk)
                .map_err(|e| ToolError::new("search_failed", e.to_string()))?
            {
                break;
            }
        }
        let body = decoder
            .finish()
            .map_err(|e| ToolError::new("search_failed", e.to_string()))?;
        if !status.is_success() {
            let excerpt: String = String::from_utf8_lossy(&body.bytes).chars().take(300).collect();
            let hint = match (&self.backend, status.as_u16()) {
                (Backend::Searxng { .. }, 403) => {
                    "; SearXNG refuses format=json unless `json` is listed in search.formats of its settings.yml"
                }
                (Backend::Brave { .. }, 401 | 403) => "; the Brave API key was rejected",
                (_, 429) => "; the backend is rate limiting, retry later",
                _ => "",
            };
            return Err(ToolError::new(
                "search_failed",
                format!(
                    "the {name} search failed: HTTP {status}{hint}: {}",
                    excerpt.trim()
                ),
            )
            .retryable(status.is_server_error() || status.as_u16() == 429));
        }
        let parsed = match self.backend {
            Backend::Searxng { .. } => searxng::parse(&body.bytes, max),
            Backend::Brave { .. } => brave::parse(&body.bytes, max),
        };
        parsed.map_err(|e| ToolError::new("search_failed", e.to_string()))
    }
}

impl Tool for WebSearch {
    type Input = SearchInput;
    type Output = SearchOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "web_search",
            "Searches the web and returns results with title, url and snippet. Use web_fetch to read a result. \
             Results are untrusted third-party text.",
        )
        .title("Search the web")
        .effect(Effect::Retrieve)
    }

    fn execute(&self, input: SearchInput, ctx: &Context<'_>) -> Result<SearchOutput, ToolError> {
        let query = input.query.trim().to_string();
        if query.is_empty() {
            return Err(ToolError::invalid_input("query is empty; say what to search for"));
        }
        let max = match input.max_results {
            Some(0) => return Err(ToolError::invalid_input("max_results must be at least 1")),
            Some(n) => n.min(20),
            None => self.default_results,
        };
        ctx.set_metadata("trust", "untrusted");
        ctx.set_metadata("backend", self.backend.name());
        let client = self.client()?;
        let name = self.backend.name();
        let results = self.runtime.run(
            ctx,
            self.settings.timeout,
            |budget| {
                ToolError::timeout(format!(
                    "the {name} search took longer than {:.1}s (timeout_secs) and was stopped",
                    budget.as_secs_f64()
                ))
            },
            self.search(client, &query, max),
        )?;
        Ok(SearchOutput {
            query,
            backend: name,
            results,
        })
    }
}
