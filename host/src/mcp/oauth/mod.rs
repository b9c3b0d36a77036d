//! `serve --http` as an OAuth 2.1 resource server (`[host.oauth]`): an
//! access token that is a JWT from the configured issuer identifies the
//! `[[principals]]` entry whose `claims` it satisfies.
//!
//! What is checked: the signature, with a key of the issuer's JWKS that the
//! token's `kid` names and an algorithm that key's type allows ([`keys`]);
//! `iss` equal to the issuer; `aud` containing the audience; `exp` (required)
//! and `nbf` (when present) with the configured leeway ([`verify`]). What is
//! not: revocation (a JWT stays valid until it expires), scopes, `typ`,
//! and any claim the principals do not list.

pub mod cache;
pub mod fetch;
pub mod keys;
pub mod metadata;
pub mod verified;
pub mod verify;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::governance::principals::PrincipalEntry;
use crate::plan::oauth::OAuthSection;
use cache::{KeyCache, Source};
use keys::KeySet;
use metadata::Metadata;
use verified::Verified;
use verify::{Expect, Rejection};

/// What a JWT access token came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Valid, and this principal's.
    Principal(String),
    /// Not valid (401 `invalid_token`): why.
    Invalid(String),
    /// Valid, but no `[[principals]]` entry's claims match (403): why.
    NoPrincipal(String),
    /// The issuer's keys cannot be had (503): why.
    Unavailable(String),
}

/// The resource server.
pub struct OAuth {
    expect: Expect,
    keys: KeyCache,
    principals: Vec<PrincipalEntry>,
    /// Tokens verified before, by the principal they are.
    verified: Verified,
    /// RFC 9728 metadata and the 401 challenge.
    pub metadata: Metadata,
}

impl OAuth {
    /// The resource server for a checked `[host.oauth]`; fetches nothing yet.
    pub fn new(section: &OAuthSection, principals: &[PrincipalEntry]) -> Result<OAuth, String> {
        let client =
            fetch::client().map_err(|e| format!("cannot build the HTTP client for the OAuth issuer: {e}"))?;
        let keys = KeyCache::new(
            source(section),
            client,
            Duration::from_secs(section.jwks_min_refetch_secs),
            Duration::from_secs(section.jwks_max_age_secs),
        );
        Ok(OAuth::with_cache(section, principals, keys))
    }

    /// A resource server holding `keys` already (benchmarks, tests).
    pub fn preloaded(
        section: &OAuthSection,
        principals: &[PrincipalEntry],
        keys: KeySet,
    ) -> Result<OAuth, String> {
        let client = fetch::client()?;
        let cache = KeyCache::preloaded(
            source(section),
            client,
            keys,
            Duration::from_secs(section.jwks_min_refetch_secs),
        );
        Ok(OAuth::with_cache(section, principals, cache))
    }

    fn with_cache(section: &OAuthSection, principals: &[PrincipalEntry], keys: KeyCache) -> OAuth {
        OAuth {
            expect: Expect {
                issuer: section.issuer.clone(),
                audience: section.audience.clone(),
                leeway_secs: section.leeway_secs,
            },
            keys,
            principals: principals.to_vec(),
            verified: Verified::default(),
            metadata: Metadata::new(&section.audience, &section.issuer),
        }
    }

    /// Fetches the keys now, in the background, so a misconfigured issuer
    /// shows in the log at start rather than at the first call.
    pub fn warm_up(self: &Arc<Self>) {
        let this = self.clone();
        tokio::spawn(async move {
            let _ = this.keys.fresh().await;
        });
    }

    /// Who `token` is for.
    pub async fn identify(&self, token: &str) -> Outcome {
        let unavailable = |e: fetch::FetchError| {
            Outcome::Unavailable(format!("cannot check the access token: the issuer's keys: {e}"))
        };
        let mut keys = match self.keys.fresh().await {
            Ok(keys) => keys,
            Err(e) => return unavailable(e),
        };
        let now = jsonwebtoken::get_current_timestamp();
        if let Some(name) = self.verified.get(token, keys.generation, now) {
            return Outcome::Principal(name);
        }
        let mut checked = verify::verify(token, &keys, &self.expect);
        if let Err(Rejection::UnknownKey(_)) = checked {
            // Perhaps the IdP rotated its keys: fetch them again (at most
            // once per floor) and try once more.
            keys = match self.keys.refetch().await {
                Ok(keys) => keys,
                Err(e) => return unavailable(e),
            };
            checked = verify::verify(token, &keys, &self.expect);
        }
        self.conclude(token, &keys, checked, now)
    }

    /// The check on the keys held, without fetching: what a call costs once
    /// the keys are cached (the verified-token cache first, as `identify`).
    pub fn identify_cached(&self, token: &str) -> Outcome {
        let keys = self.keys.current();
        let now = jsonwebtoken::get_current_timestamp();
        if let Some(name) = self.verified.get(token, keys.generation, now) {
            return Outcome::Principal(name);
        }
        self.conclude(token, &keys, verify::verify(token, &keys, &self.expect), now)
    }

    /// The signature and claims check alone, every time (no verified-token
    /// cache): what a token seen for the first time costs.
    pub fn verify_uncached(&self, token: &str) -> Outcome {
        match verify::verify(token, &self.keys.current(), &self.expect) {
            Ok(claims) => self.principal(&claims),
            Err(rejection) => Outcome::Invalid(rejection.to_string()),
        }
    }

    /// The outcome of a check; a token found to be a principal's is
    /// remembered until its `exp` (plus the leeway).
    fn conclude(
        &self,
        token: &str,
        keys: &KeySet,
        checked: Result<Map<String, Value>, Rejection>,
        now: u64,
    ) -> Outcome {
        let claims = match checked {
            Ok(claims) => claims,
            Err(rejection) => return Outcome::Invalid(rejection.to_string()),
        };
        let outcome = self.principal(&claims);
        if let (Outcome::Principal(name), Some(exp)) = (&outcome, claims.get("exp").and_then(Value::as_f64)) {
            let until = (exp.max(0.0) as u64).saturating_add(self.expect.leeway_secs);
            self.verified.put(token, keys.generation, name, until, now);
        }
        outcome
    }

    fn principal(&self, claims: &Map<String, Value>) -> Outcome {
        match crate::governance::principals::by_claims(&self.principals, claims) {
            Some(name) => Outcome::Principal(name.to_string()),
            None => Outcome::NoPrincipal(format!(
                "the access token is valid (sub {}), but no [[principals]] entry's claims match it",
                claims
                    .get("sub")
                    .map(Value::to_string)
                    .unwrap_or_else(|| "not given".into())
            )),
        }
    }

    /// The configured issuer and audience, for `toolhost check`.
    pub fn describe(section: &OAuthSection) -> String {
        format!(
            "issuer {} ({}), audience {}, leeway {} s",
            section.issuer,
            match &section.jwks_url {
                Some(url) => format!("keys from {url}"),
                None => "keys through its discovery document".into(),
            },
            section.audience,
            section.leeway_secs
        )
    }
}

fn source(section: &OAuthSection) -> Source {
    Source {
        issuer: section.issuer.clone(),
        jwks_url: section.jwks_url.clone(),
    }
}

/// Whether a bearer token has a JWT's shape (three dot-separated parts),
/// so it is checked as one rather than as a static token.
pub fn looks_like_jwt(token: &str) -> bool {
    token.split('.').count() == 3
}
