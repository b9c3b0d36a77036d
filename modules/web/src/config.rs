//! The module's config (`[tools.config]` of the plan), with its defaults,
//! and the validated settings built from it at mount.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use serde::Deserialize;

use crate::policy::address::{AddressListError, AddressPolicy};
use crate::policy::domain::{normalize_host, DomainList, DomainListError};
use crate::policy::Policy;

/// The web module's config; every key is optional.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// CIDRs of non-public networks fetches may reach (intranets, tests).
    pub allow_private_networks: Vec<String>,
    /// When non-empty, only hosts under these domains are fetched.
    pub allowed_domains: Vec<String>,
    /// Hosts under these domains are never fetched.
    pub blocked_domains: Vec<String>,
    /// Redirect hops followed, each one re-checked.
    pub max_redirects: u32,
    /// Seconds to establish a connection.
    pub connect_timeout_secs: f64,
    /// Seconds for a whole fetch, redirects and body included.
    pub timeout_secs: f64,
    /// Bytes of (decompressed) body kept; the download stops there.
    pub max_response_bytes: u64,
    /// Characters of text returned per call when the input gives no limit.
    pub default_limit: usize,
    /// The User-Agent header.
    pub user_agent: String,
    /// Whether to obey robots.txt (fetched once per host and cached).
    pub respect_robots_txt: bool,
    /// How long fetched pages stay cached, in seconds (0 turns the cache off).
    pub cache_ttl_secs: u64,
    /// How many pages the cache keeps.
    pub cache_max_entries: usize,
    /// Fixed name → addresses answers, like curl's --resolve. The addresses are
    /// still checked against the address policy.
    pub resolve: BTreeMap<String, Vec<String>>,
    /// Whether HTML goes through main-content extraction before conversion.
    pub extract_main_content: bool,
    /// The web_search backend.
    pub search: SearchConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            allow_private_networks: Vec::new(),
            allowed_domains: Vec::new(),
            blocked_domains: Vec::new(),
            max_redirects: 5,
            connect_timeout_secs: 10.0,
            timeout_secs: 30.0,
            max_response_bytes: 5 * 1024 * 1024,
            default_limit: 20_000,
            user_agent: concat!("toolhost-web/", env!("CARGO_PKG_VERSION")).to_string(),
            respect_robots_txt: false,
            cache_ttl_secs: 300,
            cache_max_entries: 64,
            resolve: BTreeMap::new(),
            extract_main_content: true,
            search: SearchConfig::default(),
        }
    }
}

/// `[tools.config.search]`: which search backend web_search uses.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields, default)]
pub struct SearchConfig {
    /// "searxng" or "brave"; when unset, the one configured below is used.
    pub backend: Option<String>,
    /// Base URL of a SearXNG instance with the JSON format enabled.
    pub searxng_url: Option<String>,
    /// Name of the environment variable holding a Brave Search API key.
    pub brave_api_key_env: Option<String>,
    /// The Brave Search API endpoint.
    pub brave_endpoint: String,
    /// Results returned when the input gives no max_results.
    pub default_results: usize,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            backend: None,
            searxng_url: None,
            brave_api_key_env: None,
            brave_endpoint: "https://api.search.brave.com/res/v1/web/search".into(),
            default_results: 5,
        }
    }
}

/// The validated settings the tools run with.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Address and domain rules.
    pub policy: Policy,
    /// Fixed resolutions (host → addresses).
    pub resolve: BTreeMap<String, Vec<IpAddr>>,
    /// Redirect hops followed.
    pub max_redirects: u32,
    /// Connection timeout.
    pub connect_timeout: Duration,
    /// Whole-fetch timeout.
    pub timeout: Duration,
    /// Body byte cap (after decompression).
    pub max_response_bytes: usize,
    /// Default page size in characters.
    pub default_limit: usize,
    /// The User-Agent header.
    pub user_agent: String,
    /// Whether robots.txt is obeyed.
    pub respect_robots_txt: bool,
    /// Cache lifetime (zero: no cache).
    pub cache_ttl: Duration,
    /// Cache size.
    pub cache_max_entries: usize,
    /// Main-content extraction on or off.
    pub extract_main_content: bool,
}

/// A config the module refuses at mount; each message names the key and
/// says what to write.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// `allow_private_networks` has an entry that is not a network.
    #[error(transparent)]
    Networks(#[from] AddressListError),
    /// `allowed_domains` or `blocked_domains` has an entry that is not a
    /// domain.
    #[error(transparent)]
    Domains(#[from] DomainListError),
    /// A `resolve` address that is not an IP address.
    #[error("resolve.{host}: {value:?} is not an IP address")]
    NotAnAddress {
        /// The host.
        host: String,
        /// The value as written.
        value: String,
    },
    /// A `resolve` entry with no addresses.
    #[error("resolve.{host}: give at least one address")]
    NoAddresses {
        /// The host.
        host: String,
    },
    /// `max_response_bytes` out of range.
    #[error("max_response_bytes must be between 1024 and 1073741824 (got {0})")]
    MaxResponseBytes(u64),
    /// `default_limit = 0`.
    #[error("default_limit must be at least 1 character")]
    DefaultLimit,
    /// `max_redirects` over 20.
    #[error("max_redirects must be at most 20 (got {0})")]
    MaxRedirects(u32),
    /// `user_agent` empty or spanning lines.
    #[error("user_agent must be a non-empty single line")]
    UserAgent,
    /// A timeout out of range.
    #[error("{key} must be a number of seconds between 0 and 86400 (got {value})")]
    Seconds {
        /// The key.
        key: &'static str,
        /// The value as written.
        value: f64,
    },
}

fn seconds(key: &'static str, value: f64) -> Result<Duration, ConfigError> {
    if value.is_finite() && value > 0.0 && value <= 86_400.0 {
        Ok(Duration::from_secs_f64(value))
    } else {
        Err(ConfigError::Seconds { key, value })
    }
}

impl Settings {
    /// Validates the config; errors name the key and say what to write.
    pub fn from_config(config: &Config) -> Result<Settings, ConfigError> {
        let policy = Policy {
            addresses: AddressPolicy::new(&config.allow_private_networks)?,
            allowed_domains: DomainList::new("allowed_domains", &config.allowed_domains)?,
            blocked_domains: DomainList::new("blocked_domains", &config.blocked_domains)?,
        };
        let mut resolve = BTreeMap::new();
        for (host, addresses) in &config.resolve {
            let ips = addresses
                .iter()
                .map(|a| {
                    a.trim_matches(['[', ']'])
                        .parse::<IpAddr>()
                        .map_err(|_| ConfigError::NotAnAddress {
                            host: host.clone(),
                            value: a.clone(),
                        })
                })
                .collect::<Result<Vec<_>, _>>()?;
            if ips.is_empty() {
                return Err(ConfigError::NoAddresses { host: host.clone() });
            }
            resolve.insert(normalize_host(host), ips);
        }
        let max_response_bytes = usize::try_from(config.max_response_bytes)
            .ok()
            .filter(|n| (1024..=1 << 30).contains(n))
            .ok_or(ConfigError::MaxResponseBytes(config.max_response_bytes))?;
        if config.default_limit == 0 {
            return Err(ConfigError::DefaultLimit);
        }
        if config.max_redirects > 20 {
            return Err(ConfigError::MaxRedirects(config.max_redirects));
        }
        if config.user_agent.trim().is_empty() || config.user_agent.contains(['\r', '\n']) {
            return Err(ConfigError::UserAgent);
        }
        Ok(Settings {
            policy,
            resolve,
            max_redirects: config.max_redirects,
            connect_timeout: seconds("connect_timeout_secs", config.connect_timeout_secs)?,
            timeout: seconds("timeout_secs", config.timeout_secs)?,
            max_response_bytes,
            default_limit: config.default_limit,
            user_agent: config.user_agent.clone(),
            respect_robots_txt: config.respect_robots_txt,
            cache_ttl: Duration::from_secs(config.cache_ttl_secs),
            cache_max_entries: config.cache_max_entries,
            extract_main_content: config.extract_main_content,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate() {
        let s = Settings::from_config(&Config::default()).unwrap();
        assert_eq!(s.max_redirects, 5);
        assert_eq!(s.max_response_bytes, 5 * 1024 * 1024);
        assert!(s.user_agent.starts_with("toolhost-web/"));
    }

    #[test]
    fn bad_values_name_their_key() {
        let c = Config {
            timeout_secs: 0.0,
            ..Config::default()
        };
        let err = Settings::from_config(&c).unwrap_err();
        assert!(
            matches!(
                err,
                ConfigError::Seconds {
                    key: "timeout_secs",
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("timeout_secs"));
        let mut c = Config::default();
        c.resolve.insert("x.test".into(), vec!["nope".into()]);
        let err = Settings::from_config(&c).unwrap_err();
        assert!(
            matches!(&err, ConfigError::NotAnAddress { host, .. } if host == "x.test"),
            "{err}"
        );
        assert!(err.to_string().contains("resolve.x.test"));
    }
}
