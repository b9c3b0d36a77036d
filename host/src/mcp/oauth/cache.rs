//! The issuer's keys, cached. Fetched on first use (and in the background
//! at start), again when older than `jwks_max_age_secs`, and again when a
//! token names a key id the set lacks (the IdP rotated its keys), but never
//! more often than once per `jwks_min_refetch_secs`: tokens with made-up key
//! ids cannot make the host hammer the IdP, and an unreachable IdP costs
//! one timeout per floor, not one per request.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use super::fetch::{self, FetchError};
use super::keys::KeySet;

/// Where the keys come from.
#[derive(Debug, Clone)]
pub struct Source {
    /// The configured issuer (discovery).
    pub issuer: String,
    /// Or the JWKS directly.
    pub jwks_url: Option<String>,
}

struct Held {
    keys: Arc<KeySet>,
    /// When these keys were fetched (`None`: never).
    fetched: Option<Instant>,
}

struct Attempts {
    /// The last fetch attempt, successful or not.
    last: Option<Instant>,
    /// Its error, answered again until the floor has passed.
    failed: Option<FetchError>,
    /// `jwks_uri` once discovered.
    jwks_uri: Option<String>,
}

/// The cache.
pub struct KeyCache {
    source: Source,
    client: reqwest::Client,
    floor: Duration,
    max_age: Duration,
    held: RwLock<Held>,
    /// Held while fetching: one fetch at a time, the others wait for it.
    attempts: tokio::sync::Mutex<Attempts>,
}

impl KeyCache {
    /// An empty cache.
    pub fn new(source: Source, client: reqwest::Client, floor: Duration, max_age: Duration) -> KeyCache {
        KeyCache {
            source,
            client,
            floor,
            max_age,
            held: RwLock::new(Held {
                keys: Arc::new(KeySet::default()),
                fetched: None,
            }),
            attempts: tokio::sync::Mutex::new(Attempts {
                last: None,
                failed: None,
                jwks_uri: None,
            }),
        }
    }

    /// A cache holding `keys` as if just fetched (benchmarks, tests).
    pub fn preloaded(source: Source, client: reqwest::Client, mut keys: KeySet, floor: Duration) -> KeyCache {
        keys.generation = 1;
        let cache = KeyCache::new(source, client, floor, Duration::from_secs(u64::from(u32::MAX)));
        *cache
            .held
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Held {
            keys: Arc::new(keys),
            fetched: Some(Instant::now()),
        };
        cache
    }

    /// The keys held now, without fetching.
    pub fn current(&self) -> Arc<KeySet> {
        self.read().0
    }

    fn read(&self) -> (Arc<KeySet>, Option<Instant>) {
        let held = self
            .held
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (held.keys.clone(), held.fetched)
    }

    /// The keys, fetched first when there are none or they are older than
    /// the max age. Stale keys are kept when a refresh fails (logged);
    /// with none at all the fetch error is the answer.
    pub async fn fresh(&self) -> Result<Arc<KeySet>, FetchError> {
        let (keys, fetched) = self.read();
        if fetched.is_some_and(|at| at.elapsed() < self.max_age) {
            return Ok(keys);
        }
        match self.refetch().await {
            Ok(keys) => Ok(keys),
            Err(e) if fetched.is_some() => {
                tracing::warn!("cannot refresh the OAuth issuer's keys, using the ones fetched before: {e}");
                Ok(keys)
            }
            Err(e) => Err(e),
        }
    }

    /// Fetches the keys again unless the last attempt was less than the
    /// floor ago (then the keys held, or that attempt's error, answer).
    pub async fn refetch(&self) -> Result<Arc<KeySet>, FetchError> {
        let mut attempts = self.attempts.lock().await;
        if attempts.last.is_some_and(|at| at.elapsed() < self.floor) {
            let (keys, fetched) = self.read();
            return match (&attempts.failed, fetched) {
                (Some(e), None) => Err(e.clone()),
                _ => Ok(keys),
            };
        }
        attempts.last = Some(Instant::now());
        let fetched = self.fetch(&mut attempts).await;
        match fetched {
            Ok(mut keys) => {
                attempts.failed = None;
                keys.generation = self.current().generation + 1;
                if keys.skipped > 0 {
                    tracing::debug!(
                        skipped = keys.skipped,
                        "left out JWKS keys that are not public signing keys"
                    );
                }
                tracing::info!(keys = keys.keys.len(), "fetched the OAuth issuer's keys");
                let keys = Arc::new(keys);
                *self
                    .held
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Held {
                    keys: keys.clone(),
                    fetched: Some(Instant::now()),
                };
                Ok(keys)
            }
            Err(e) => {
                tracing::warn!("cannot fetch the OAuth issuer's keys: {e}");
                attempts.failed = Some(e.clone());
                Err(e)
            }
        }
    }

    async fn fetch(&self, attempts: &mut Attempts) -> Result<KeySet, FetchError> {
        let url = match (&self.source.jwks_url, &attempts.jwks_uri) {
            (Some(url), _) | (None, Some(url)) => url.clone(),
            (None, None) => {
                let found = fetch::discover(&self.client, &self.source.issuer).await?;
                attempts.jwks_uri = Some(found.clone());
                found
            }
        };
        let set = fetch::jwks(&self.client, &url).await?;
        Ok(KeySet::from_jwks(&set))
    }
}
