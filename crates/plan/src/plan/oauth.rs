//! `[host.oauth]`: `serve --http` accepts access tokens (JWTs) issued by an
//! OAuth 2.1 / OpenID Connect provider beside the static bearer tokens.
//!
//! Only the shape and the URLs are checked here; the host fetches the keys
//! and checks tokens when it serves.

use serde::Deserialize;

/// `[host.oauth]` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthSection {
    /// The issuer: a token's `iss` must equal it exactly, and (unless
    /// `jwks_url` is given) its keys are found through
    /// `<issuer>/.well-known/openid-configuration`.
    pub issuer: String,
    /// The issuer's JWKS, fetched directly (no discovery document).
    pub jwks_url: Option<String>,
    /// This server's resource URI (the MCP endpoint's URL as clients use
    /// it): a token's `aud` must contain it. The protected-resource
    /// metadata is published under it.
    pub audience: String,
    /// Clock skew allowed on `exp` and `nbf`, in seconds (default 60, at
    /// most 300).
    #[serde(default = "default_leeway_secs")]
    pub leeway_secs: u64,
    /// A token naming a key the host does not know makes it fetch the JWKS
    /// again, at most once per this many seconds (default 10, at least 1):
    /// tokens with made-up key ids cannot make the host hammer the IdP.
    #[serde(default = "default_jwks_min_refetch_secs")]
    pub jwks_min_refetch_secs: u64,
    /// The JWKS is fetched again on first use after this many seconds
    /// (default 600), so a key the IdP withdrew stops being accepted.
    #[serde(default = "default_jwks_max_age_secs")]
    pub jwks_max_age_secs: u64,
}

fn default_leeway_secs() -> u64 {
    60
}

fn default_jwks_min_refetch_secs() -> u64 {
    10
}

fn default_jwks_max_age_secs() -> u64 {
    600
}

/// The largest `leeway_secs` accepted: more would keep expired tokens alive.
pub const MAX_LEEWAY_SECS: u64 = 300;

/// Why `[host.oauth]` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum OAuthConfigError {
    /// `issuer`, `jwks_url` or `audience` is no absolute http(s) URL.
    #[error("[host.oauth] {key} '{value}' is not an absolute http(s) URL: {why}")]
    NotUrl {
        /// Which key.
        key: &'static str,
        /// As written.
        value: String,
        /// What is wrong with it.
        why: String,
    },
    /// Plain `http://` to an IdP beyond this machine.
    #[error(
        "[host.oauth] {key} '{value}' uses http:// to a host other than loopback: keys fetched in clear \
         could be replaced on the way; use https://"
    )]
    Cleartext {
        /// Which key.
        key: &'static str,
        /// As written.
        value: String,
    },
    /// `leeway_secs` past [`MAX_LEEWAY_SECS`].
    #[error("[host.oauth] leeway_secs = {0} is more than {MAX_LEEWAY_SECS}: expired tokens would stay valid that long")]
    Leeway(u64),
    /// `jwks_min_refetch_secs = 0`.
    #[error("[host.oauth] jwks_min_refetch_secs must be at least 1 (it bounds how often a token can make the host fetch the JWKS)")]
    RefetchFloor,
    /// `jwks_max_age_secs` below the refetch floor.
    #[error("[host.oauth] jwks_max_age_secs ({max_age}) must be at least jwks_min_refetch_secs ({floor})")]
    MaxAge {
        /// As written.
        max_age: u64,
        /// `jwks_min_refetch_secs`.
        floor: u64,
    },
}

impl OAuthSection {
    /// Checks the URLs and bounds.
    pub fn check(&self) -> Result<(), OAuthConfigError> {
        url_key("issuer", &self.issuer, true)?;
        if let Some(jwks) = &self.jwks_url {
            url_key("jwks_url", jwks, true)?;
        }
        url_key("audience", &self.audience, false)?;
        if self.leeway_secs > MAX_LEEWAY_SECS {
            return Err(OAuthConfigError::Leeway(self.leeway_secs));
        }
        if self.jwks_min_refetch_secs == 0 {
            return Err(OAuthConfigError::RefetchFloor);
        }
        if self.jwks_max_age_secs < self.jwks_min_refetch_secs {
            return Err(OAuthConfigError::MaxAge {
                max_age: self.jwks_max_age_secs,
                floor: self.jwks_min_refetch_secs,
            });
        }
        Ok(())
    }
}

/// Checks a URL the host will fetch keys from (a discovery document's
/// `jwks_uri` too): https, or plain http to loopback only.
pub fn fetchable(key: &'static str, value: &str) -> Result<(), OAuthConfigError> {
    url_key(key, value, true)
}

/// An absolute http(s) URL; with `fetched`, plain http only to loopback
/// (the host fetches it and trusts what comes back).
fn url_key(key: &'static str, value: &str, fetched: bool) -> Result<(), OAuthConfigError> {
    let not_url = |why: String| OAuthConfigError::NotUrl {
        key,
        value: value.to_string(),
        why,
    };
    let url = url::Url::parse(value).map_err(|e| not_url(e.to_string()))?;
    match url.scheme() {
        "https" => {}
        "http" if !fetched => {}
        "http" => {
            let loopback = match url.host() {
                Some(url::Host::Domain(name)) => name == "localhost",
                Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
                Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
                None => false,
            };
            if !loopback {
                return Err(OAuthConfigError::Cleartext {
                    key,
                    value: value.to_string(),
                });
            }
        }
        other => return Err(not_url(format!("the scheme is '{other}'"))),
    }
    if url.host().is_none() {
        return Err(not_url("it names no host".into()));
    }
    if url.fragment().is_some() {
        return Err(not_url("it has a #fragment".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(issuer: &str, audience: &str) -> OAuthSection {
        OAuthSection {
            issuer: issuer.into(),
            jwks_url: None,
            audience: audience.into(),
            leeway_secs: 60,
            jwks_min_refetch_secs: 10,
            jwks_max_age_secs: 600,
        }
    }

    #[test]
    fn urls_are_checked() {
        assert!(section("https://idp.example", "https://tools.example/mcp")
            .check()
            .is_ok());
        assert!(section("http://127.0.0.1:9", "http://127.0.0.1:8/mcp")
            .check()
            .is_ok());
        assert!(section("http://localhost:9", "http://tools.example/mcp")
            .check()
            .is_ok());
        assert!(matches!(
            section("http://idp.example", "https://t.example/mcp").check(),
            Err(OAuthConfigError::Cleartext { key: "issuer", .. })
        ));
        assert!(matches!(
            section("idp.example", "https://t.example/mcp").check(),
            Err(OAuthConfigError::NotUrl { key: "issuer", .. })
        ));
        assert!(matches!(
            section("https://idp.example", "urn:toolhost").check(),
            Err(OAuthConfigError::NotUrl { key: "audience", .. })
        ));
        let mut s = section("https://idp.example", "https://t.example/mcp");
        s.jwks_url = Some("http://10.0.0.1/jwks".into());
        assert!(matches!(
            s.check(),
            Err(OAuthConfigError::Cleartext { key: "jwks_url", .. })
        ));
    }

    #[test]
    fn bounds_are_checked() {
        let mut s = section("https://idp.example", "https://t.example/mcp");
        s.leeway_secs = 301;
        assert!(matches!(s.check(), Err(OAuthConfigError::Leeway(301))));
        s.leeway_secs = 0;
        s.jwks_min_refetch_secs = 0;
        assert!(matches!(s.check(), Err(OAuthConfigError::RefetchFloor)));
        s.jwks_min_refetch_secs = 20;
        s.jwks_max_age_secs = 10;
        assert!(matches!(s.check(), Err(OAuthConfigError::MaxAge { .. })));
    }

    fn parse(text: &str) -> Result<crate::plan::Plan, crate::plan::PlanError> {
        crate::plan::Plan::parse(text, std::path::Path::new("/plans/p.toml"))
    }

    const OAUTH: &str =
        "[host.oauth]\nissuer = \"https://idp.example\"\naudience = \"https://t.example/mcp\"\n";

    #[test]
    fn a_plan_takes_the_section_and_principals_by_claims() {
        let plan = parse(&format!(
            "{OAUTH}[[principals]]\nname = \"alice\"\nclaims = {{ sub = \"a\", groups = [\"eng\"] }}\n"
        ))
        .expect("plan");
        let oauth = plan.host.oauth.as_ref().expect("oauth");
        assert_eq!(
            (
                oauth.leeway_secs,
                oauth.jwks_min_refetch_secs,
                oauth.jwks_max_age_secs
            ),
            (60, 10, 600)
        );
        assert!(plan.governance.principals[0].claims.is_some());
        // Unknown keys are errors, like everywhere in a plan.
        assert!(matches!(
            parse(&format!("{OAUTH}isuer = \"x\"\n")),
            Err(crate::plan::PlanError::Syntax { .. })
        ));
        assert!(matches!(
            parse("[host.oauth]\nissuer = \"http://idp.example\"\naudience = \"https://t.example/mcp\"\n"),
            Err(crate::plan::PlanError::OAuth { .. })
        ));
        // A principal needs a token or claims; empty claims match everything.
        assert!(matches!(
            parse(&format!("{OAUTH}[[principals]]\nname = \"x\"\nclaims = {{}}\n")),
            Err(crate::plan::PlanError::Governance { .. })
        ));
        assert!(matches!(
            parse(&format!("{OAUTH}[[principals]]\nname = \"x\"\n")),
            Err(crate::plan::PlanError::Governance { .. })
        ));
    }
}
