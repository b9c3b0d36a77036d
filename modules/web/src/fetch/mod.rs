//! web_fetch's engine: policy checks, the redirect loop (every hop
//! re-checked), robots.txt, the capped body read, conversion and the cache.

pub mod body;
pub mod cache;
pub mod errors;
pub mod robots;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, TryLockError};
use std::time::{Duration, Instant};

use reqwest::header::{ACCEPT, ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, LOCATION};
use serde_json::json;
use toolhost_core::{Context, ToolError};
use url::Url;

use crate::config::Settings;
use crate::convert::kind::{kind_of_media, parse_content_type, sniff, Kind};
use crate::convert::{to_text, Text};
use crate::net::client::fetch_client;
use crate::net::runtime::Runtime;
use crate::policy::UrlProblem;
use body::{Body, Cut, Decoder};
use cache::TtlCache;
use robots::Rules;

/// What the server sent, fully read.
struct Raw {
    final_url: Url,
    status: u16,
    media: String,
    charset: Option<String>,
    kind: Kind,
    body: Body,
}

/// A fetched and converted document, as cached.
#[derive(Debug, Clone)]
pub struct Document {
    /// Where the last redirect hop landed.
    pub final_url: String,
    /// The HTTP status.
    pub status: u16,
    /// The media type the server declared (or "" when it declared none).
    pub content_type: String,
    /// The text.
    pub text: Text,
    /// Why the body is incomplete, when the byte cap cut it.
    pub cut: Option<String>,
}

/// Fetches under the module's settings.
pub struct Fetcher {
    settings: Arc<Settings>,
    runtime: Arc<Runtime>,
    client: OnceLock<reqwest::Client>,
    cache: TtlCache<Document>,
    /// One gate per URL being fetched, so concurrent calls for the same page
    /// (a batch paging through it) download it once.
    inflight: Mutex<HashMap<String, Arc<Mutex<()>>>>,
    robots: TtlCache<Rules>,
    /// Serializes robots.txt downloads so each origin's is fetched once.
    robots_gate: tokio::sync::Mutex<()>,
}

const ACCEPT_VALUE: &str =
    "text/html,application/xhtml+xml,application/json;q=0.9,text/plain;q=0.9,text/*;q=0.8,*/*;q=0.1";
const ROBOTS_MAX_BYTES: usize = 512 * 1024;

/// Parses a URL the user gave, with a hint when the scheme is missing.
pub fn parse_url(input: &str) -> Result<Url, ToolError> {
    let input = input.trim();
    let mut url = Url::parse(input).map_err(|e| {
        let hint = if !input.contains("://") {
            format!("; write a full URL such as https://{input}")
        } else {
            String::new()
        };
        ToolError::invalid_input(format!("{input:?} is not a valid URL ({e}){hint}"))
    })?;
    url.set_fragment(None);
    Ok(url)
}

impl Fetcher {
    /// A fetcher; nothing is started until the first fetch.
    pub fn new(settings: Arc<Settings>, runtime: Arc<Runtime>) -> Self {
        let cache = TtlCache::new(settings.cache_ttl, settings.cache_max_entries);
        Fetcher {
            settings,
            runtime,
            client: OnceLock::new(),
            cache,
            inflight: Mutex::new(HashMap::new()),
            robots: TtlCache::new(Duration::from_secs(3600), 256),
            robots_gate: tokio::sync::Mutex::new(()),
        }
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    fn client(&self) -> Result<reqwest::Client, ToolError> {
        if let Some(client) = self.client.get() {
            return Ok(client.clone());
        }
        let client = self
            .runtime
            .enter(|| fetch_client(&self.settings))?
            .map_err(|e| ToolError::new("client", e.to_string()))?;
        Ok(self.client.get_or_init(|| client).clone())
    }

    /// Checks a URL against the policy; the message names the spelling the
    /// user wrote when the parser normalized it.
    pub fn check(&self, url: &Url, input: &str) -> Result<(), ToolError> {
        match self.settings.policy.check_url(url) {
            Ok(()) => Ok(()),
            Err(UrlProblem::Invalid(m)) => Err(ToolError::invalid_input(m)),
            Err(UrlProblem::Refused(r)) => {
                let spelled = input.trim();
                let note = if spelled != url.as_str() && !spelled.is_empty() {
                    format!(" (the URL {spelled} normalizes to {url})")
                } else {
                    String::new()
                };
                Err(ToolError::denied(format!("{}{note}", r.0)))
            }
        }
    }

    /// Fetches `url` (already checked), or serves it from the cache. Returns
    /// the document and whether it came from the cache.
    pub fn fetch(&self, ctx: &Context<'_>, url: &Url) -> Result<(Arc<Document>, bool), ToolError> {
        if let Some(doc) = self.cache.get(url.as_str()) {
            return Ok((doc, true));
        }
        if self.settings.cache_ttl.is_zero() {
            return self.download(ctx, url).map(|doc| (doc, false));
        }
        let key = url.to_string();
        let gate = match self.inflight.lock() {
            Ok(mut map) => map.entry(key.clone()).or_default().clone(),
            Err(_) => Arc::default(),
        };
        let outcome = (|| {
            let _held = loop {
                match gate.try_lock() {
                    Ok(held) => break held,
                    Err(TryLockError::Poisoned(p)) => break p.into_inner(),
                    Err(TryLockError::WouldBlock) => {
                        if ctx.wait_cancelled(Duration::from_millis(5)) {
                            return Err(ToolError::cancelled());
                        }
                    }
                }
            };
            if let Some(doc) = self.cache.get(&key) {
                return Ok((doc, true));
            }
            self.download(ctx, url).map(|doc| (doc, false))
        })();
        if let Ok(mut map) = self.inflight.lock() {
            // The map's copy and ours: nobody else is waiting on this gate.
            if Arc::strong_count(&gate) <= 2 {
                map.remove(&key);
            }
        }
        outcome
    }

    fn download(&self, ctx: &Context<'_>, url: &Url) -> Result<Arc<Document>, ToolError> {
        let client = self.client()?;
        let timeout = self.settings.timeout;
        let started = Instant::now();
        let raw = self.runtime.run(
            ctx,
            timeout,
            |budget| {
                ToolError::timeout(format!(
                    "fetching {url} took longer than {:.1}s (timeout_secs, or the call's deadline) and was stopped",
                    budget.as_secs_f64()
                ))
            },
            self.fetch_raw(&client, url.clone()),
        )?;
        ctx.check_cancelled()?;
        // Conversion runs under the same budget as the download: the call's
        // deadline, cancellation, and timeout_secs counted from the start.
        let check = || {
            ctx.check_cancelled()?;
            let out_of_time = ctx.remaining() == Some(Duration::ZERO) || started.elapsed() >= timeout;
            if out_of_time {
                return Err(ToolError::timeout(format!(
                    "converting {url} to text took past the call's deadline (or timeout_secs, {:.1}s) and was stopped",
                    timeout.as_secs_f64()
                )));
            }
            Ok(())
        };
        let doc = Arc::new(self.convert(raw, check)?);
        if doc.status < 400 {
            self.cache.put(url.to_string(), doc.clone());
        }
        Ok(doc)
    }

    fn convert(&self, raw: Raw, check: impl FnMut() -> Result<(), ToolError>) -> Result<Document, ToolError> {
        let cap = self.settings.max_response_bytes;
        let cut = raw.body.cut.as_ref().map(|cut| match cut {
            Cut::Decoded => format!(
                "the body passed max_response_bytes ({cap} bytes{}) and the download was stopped there; the content is incomplete",
                if raw.body.wire_bytes < raw.body.bytes.len() { ", after decompression" } else { "" }
            ),
            Cut::Wire => format!(
                "the download passed max_response_bytes ({cap} bytes on the wire) and was stopped there; the content is incomplete"
            ),
        });
        let final_url = raw.final_url.to_string();
        let text = to_text(
            &raw.body.bytes,
            raw.kind,
            raw.charset.as_deref(),
            &final_url,
            self.settings.extract_main_content,
            check,
        )?;
        Ok(Document {
            final_url,
            status: raw.status,
            content_type: raw.media,
            text,
            cut,
        })
    }

    async fn fetch_raw(&self, client: &reqwest::Client, mut url: Url) -> Result<Raw, ToolError> {
        let settings = &self.settings;
        let mut hops = 0u32;
        loop {
            if settings.respect_robots_txt {
                self.robots_check(client, &url).await?;
            }
            let response = client
                .get(url.clone())
                .header(ACCEPT, ACCEPT_VALUE)
                .header(ACCEPT_ENCODING, "gzip, deflate")
                .send()
                .await
                .map_err(|e| errors::request_error(&url, settings.connect_timeout, &e))?;
            // Defence in depth: the peer must be an address the policy admits.
            if let Some(peer) = response.remote_addr() {
                let host = url.host_str().unwrap_or("");
                settings
                    .policy
                    .check_resolved(host, peer.ip())
                    .map_err(|r| ToolError::denied(r.0))?;
            }
            let status = response.status();
            let location = response.headers().get(LOCATION).and_then(|v| v.to_str().ok());
            if status.is_redirection() {
                if let Some(location) = location {
                    let next = url.join(location).map_err(|e| {
                        ToolError::new(
                            "bad_redirect",
                            format!("{url} redirected to {location:?}, which is not a valid URL ({e})"),
                        )
                    })?;
                    if hops >= settings.max_redirects {
                        return Err(ToolError::new(
                            "too_many_redirects",
                            format!(
                                "stopped after {} redirects (max_redirects); the last hop went from {url} to {next}",
                                settings.max_redirects
                            ),
                        )
                        .with_details(json!({ "last_url": url.as_str(), "next_url": next.as_str() })));
                    }
                    match settings.policy.check_url(&next) {
                        Ok(()) => {}
                        Err(UrlProblem::Refused(r)) => {
                            return Err(ToolError::denied(format!(
                                "the redirect from {url} to {next} was {}",
                                r.0
                            )))
                        }
                        Err(UrlProblem::Invalid(m)) => {
                            return Err(ToolError::new(
                                "bad_redirect",
                                format!("the redirect from {url} was not followed: {m}"),
                            ))
                        }
                    }
                    hops += 1;
                    url = next;
                    continue;
                }
            }
            return self.read(response, url).await;
        }
    }

    async fn read(&self, mut response: reqwest::Response, url: Url) -> Result<Raw, ToolError> {
        let headers = response.headers();
        let header = |name| {
            headers
                .get(name)
                .and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok())
        };
        let (media, charset) = parse_content_type(header(CONTENT_TYPE).unwrap_or(""));
        let declared = kind_of_media(&media);
        let length: Option<u64> = header(CONTENT_LENGTH).and_then(|v| v.trim().parse().ok());
        if declared == Some(Kind::Binary) {
            return Err(binary(&url, &media, length));
        }
        let mut decoder =
            Decoder::new(header(CONTENT_ENCODING), self.settings.max_response_bytes).map_err(bad_encoding)?;
        let status = response.status().as_u16();
        loop {
            let chunk = response.chunk().await.map_err(|e| {
                ToolError::new(
                    "fetch_failed",
                    format!("reading the body of {url} failed: {}", errors::chain(&e)),
                )
                .retryable(true)
            })?;
            let Some(chunk) = chunk else { break };
            if !decoder.feed(&chunk).map_err(bad_encoding)? {
                break;
            }
        }
        let body = decoder.finish().map_err(bad_encoding)?;
        let kind = declared.unwrap_or_else(|| sniff(&body.bytes));
        if kind == Kind::Binary {
            let size = length.or(if body.cut.is_none() {
                Some(body.bytes.len() as u64)
            } else {
                None
            });
            let media = if media.is_empty() {
                "an undeclared binary type".to_string()
            } else {
                media
            };
            return Err(binary(&url, &media, size));
        }
        Ok(Raw {
            final_url: url,
            status,
            media,
            charset,
            kind,
            body,
        })
    }

    async fn robots_check(&self, client: &reqwest::Client, url: &Url) -> Result<(), ToolError> {
        let origin = url.origin().ascii_serialization();
        let rules = match self.robots.get(&origin) {
            Some(rules) => rules,
            None => {
                let _held = self.robots_gate.lock().await;
                match self.robots.get(&origin) {
                    Some(rules) => rules,
                    None => {
                        let rules = Arc::new(self.fetch_robots(client, &origin).await);
                        self.robots.put(origin.clone(), rules.clone());
                        rules
                    }
                }
            }
        };
        let mut path = url.path().to_string();
        if let Some(query) = url.query() {
            path = format!("{path}?{query}");
        }
        rules.check(&path).map_err(|robots::Disallowed { pattern }| {
            ToolError::denied(format!(
                "refused: {origin}/robots.txt disallows {path} for {} (rule \"Disallow: {pattern}\"); this module obeys robots.txt because respect_robots_txt is on",
                self.settings.user_agent
            ))
        })
    }

    /// Reads robots.txt; a missing or unreadable one allows everything.
    async fn fetch_robots(&self, client: &reqwest::Client, origin: &str) -> Rules {
        let Ok(robots_url) = Url::parse(&format!("{origin}/robots.txt")) else {
            return Rules::allow_all();
        };
        let Ok(mut response) = client
            .get(robots_url)
            .header(ACCEPT_ENCODING, "gzip, deflate")
            .send()
            .await
        else {
            return Rules::allow_all();
        };
        if !response.status().is_success() {
            return Rules::allow_all();
        }
        let encoding = response
            .headers()
            .get(CONTENT_ENCODING)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let Ok(mut decoder) = Decoder::new(encoding.as_deref(), ROBOTS_MAX_BYTES) else {
            return Rules::allow_all();
        };
        while let Ok(Some(chunk)) = response.chunk().await {
            if !decoder.feed(&chunk).unwrap_or(false) {
                break;
            }
        }
        match decoder.finish() {
            Ok(body) => Rules::parse(&String::from_utf8_lossy(&body.bytes), &self.settings.user_agent),
            Err(_) => Rules::allow_all(),
        }
    }
}

/// Every body that cannot be decoded is answered `bad_encoding`.
fn bad_encoding(e: body::DecodeError) -> ToolError {
    ToolError::new("bad_encoding", e.to_string())
}

fn binary(url: &Url, media: &str, size: Option<u64>) -> ToolError {
    let size_text = size.map_or_else(|| "size unknown".to_string(), |n| format!("{n} bytes"));
    ToolError::new(
        "unsupported_content",
        format!(
            "{url} is {media} ({size_text}), which is binary; web_fetch returns only HTML, JSON and text"
        ),
    )
    .with_details(json!({ "content_type": media, "size_bytes": size }))
}
