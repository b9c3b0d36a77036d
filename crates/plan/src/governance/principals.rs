//! `[[principals]]`: the names calls run for, and the bearer tokens that
//! identify them over HTTP.
//!
//! A token is never kept in the plan in clear: either the plan names an
//! environment variable that holds it (`token_env`, read when the server
//! starts) or it gives the token's SHA-256 (`token_sha256`). Only SHA-256
//! digests are held in memory and compared.

use serde::Deserialize;

use super::error::{GovernanceError, PrincipalProblem};

/// One `[[principals]]` entry as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrincipalEntry {
    /// The name grants and audit records use.
    pub name: String,
    /// An environment variable holding the principal's bearer token.
    pub token_env: Option<String>,
    /// Or the hex SHA-256 of the token.
    pub token_sha256: Option<String>,
    /// Or (beside a token too) the claims an OAuth access token must carry
    /// to be this principal's (see [`super::claims`]).
    pub claims: Option<super::claims::Claims>,
}

/// The default `[host] principal`: who stdio and CLI calls run for.
pub const LOCAL: &str = "local";

/// Checks the entries: names unique and well-formed, at most one token
/// source each and a token or claims (but the host principal), digests 64
/// hex digits, claims tables usable.
pub fn check(entries: &[PrincipalEntry], host_principal: &str) -> Result<(), GovernanceError> {
    let mut seen = std::collections::HashSet::new();
    for (i, p) in entries.iter().enumerate() {
        let fail = |problem| {
            Err(GovernanceError::Principal {
                which: format!("[[principals]] #{} ('{}')", i + 1, p.name),
                problem,
            })
        };
        if p.name.is_empty()
            || !p
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.@".contains(c))
        {
            return fail(PrincipalProblem::BadName);
        }
        if !seen.insert(p.name.as_str()) {
            return fail(PrincipalProblem::Duplicate);
        }
        if let Some(claims) = &p.claims {
            if let Err(why) = super::claims::check(claims) {
                return fail(PrincipalProblem::BadClaims(why));
            }
        }
        match (&p.token_env, &p.token_sha256) {
            (Some(_), Some(_)) => {
                return fail(PrincipalProblem::BothTokens);
            }
            (None, None) if p.name != host_principal && p.claims.is_none() => {
                return fail(PrincipalProblem::NoToken {
                    host_principal: host_principal.to_string(),
                });
            }
            (_, Some(hex)) if hex.len() != 64 || !hex.chars().all(|c| c.is_ascii_hexdigit()) => {
                return fail(PrincipalProblem::BadDigest);
            }
            _ => {}
        }
    }
    Ok(())
}

/// Token digests by principal, resolved when a server starts.
#[derive(Debug, Clone, Default)]
pub struct Directory {
    /// (principal, hex SHA-256 of its token).
    digests: Vec<(String, String)>,
}

impl Directory {
    /// Reads each `token_env` variable now. A variable that is unset or
    /// empty leaves that principal unable to authenticate; the returned
    /// warnings say which.
    pub fn resolve(entries: &[PrincipalEntry]) -> (Directory, Vec<String>) {
        let mut warnings = Vec::new();
        let mut digests = Vec::new();
        for p in entries {
            let digest = match (&p.token_env, &p.token_sha256) {
                (_, Some(hex)) => Some(hex.to_ascii_lowercase()),
                (Some(var), None) => match std::env::var(var) {
                    Ok(token) if !token.trim().is_empty() => {
                        Some(crate::canonical::sha256_hex(token.trim().as_bytes()))
                    }
                    _ => {
                        warnings.push(format!(
                            "principal '{}': ${var} is unset or empty, so no token identifies it",
                            p.name
                        ));
                        None
                    }
                },
                (None, None) => None,
            };
            if let Some(digest) = digest {
                digests.push((p.name.clone(), digest));
            }
        }
        (Directory { digests }, warnings)
    }

    /// Whether no principal has a token.
    pub fn is_empty(&self) -> bool {
        self.digests.is_empty()
    }

    /// The principal whose token this is. Every digest is compared (no
    /// early exit), so timing does not tell which principal came close.
    pub fn identify(&self, token: &str) -> Option<&str> {
        let digest = crate::canonical::sha256_hex(token.as_bytes());
        let mut found = None;
        for (name, known) in &self.digests {
            if same(digest.as_bytes(), known.as_bytes()) && found.is_none() {
                found = Some(name.as_str());
            }
        }
        found
    }
}

/// The first principal (in plan order) whose `claims` an access token's
/// claims satisfy.
pub fn by_claims<'a>(
    entries: &'a [PrincipalEntry],
    token: &serde_json::Map<String, serde_json::Value>,
) -> Option<&'a str> {
    entries
        .iter()
        .find(|p| {
            p.claims
                .as_ref()
                .is_some_and(|c| super::claims::matches(c, token))
        })
        .map(|p| p.name.as_str())
}

/// Compares without stopping at the first difference, so response times do
/// not reveal how much of a guess was right.
pub fn same(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for (i, x) in a.iter().enumerate() {
        diff |= usize::from(x ^ b.get(i).copied().unwrap_or(0));
    }
    diff == 0
}
