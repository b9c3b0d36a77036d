//! Checks one access token against the keys at hand: the signature with a
//! key the token's `kid` names and an algorithm that key's type allows,
//! then `iss` (exact), `aud` (contains the audience), `exp` and `nbf`
//! (with the configured leeway). Nothing else of the token is trusted.

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{decode, decode_header, Validation};
use serde_json::{Map, Value};

use super::keys::KeySet;

/// What a token must say besides its signature.
#[derive(Debug, Clone)]
pub struct Expect {
    /// `iss`, exactly.
    pub issuer: String,
    /// One of the `aud` values.
    pub audience: String,
    /// Seconds of clock skew allowed on `exp` and `nbf`.
    pub leeway_secs: u64,
}

/// Why a token was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// No key of the set has the token's `kid` (a new key may have been
    /// published since the set was fetched).
    #[error("the token is signed with a key the issuer does not publish (kid {})", .0.as_deref().unwrap_or("not given"))]
    UnknownKey(Option<String>),
    /// Anything else: the description says what (it goes back to the
    /// client in `error_description`).
    #[error("{0}")]
    Invalid(String),
}

/// The token's claims, if it is valid under `expect` and signed by a key of
/// `keys`.
pub fn verify(token: &str, keys: &KeySet, expect: &Expect) -> Result<Map<String, Value>, Rejection> {
    let header = decode_header(token).map_err(|e| {
        Rejection::Invalid(format!(
            "the token is not a signed JWT: {}",
            describe(e.kind(), expect)
        ))
    })?;
    let candidates = keys.named(header.kid.as_deref());
    if candidates.is_empty() {
        return Err(Rejection::UnknownKey(header.kid));
    }
    let Some(key) = candidates.iter().find(|k| k.algorithms.contains(&header.alg)) else {
        return Err(Rejection::Invalid(format!(
            "alg {:?} is not allowed with the {} key {} (allowed: {:?})",
            header.alg,
            candidates[0].kind,
            header.kid.as_deref().unwrap_or("(no kid)"),
            candidates[0].algorithms
        )));
    };
    let mut validation = Validation::new(header.alg);
    validation.set_issuer(&[&expect.issuer]);
    validation.set_audience(&[&expect.audience]);
    validation.set_required_spec_claims(&["exp", "iss", "aud"]);
    validation.leeway = expect.leeway_secs;
    validation.validate_exp = true;
    validation.validate_nbf = true;
    decode::<Map<String, Value>>(token, &key.decoding, &validation)
        .map(|data| data.claims)
        .map_err(|e| Rejection::Invalid(describe(e.kind(), expect)))
}

/// A client-facing reason, without the token's content.
fn describe(kind: &ErrorKind, expect: &Expect) -> String {
    match kind {
        ErrorKind::ExpiredSignature => "the token has expired (exp)".into(),
        ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)".into(),
        ErrorKind::InvalidIssuer => format!("the token's iss is not {}", expect.issuer),
        ErrorKind::InvalidAudience => format!("the token's aud does not contain {}", expect.audience),
        ErrorKind::InvalidSignature => "the token's signature does not verify".into(),
        ErrorKind::MissingRequiredClaim(claim) => format!("the token has no {claim} claim"),
        ErrorKind::InvalidClaimFormat(claim) => format!("the token's {claim} claim is malformed"),
        ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName | ErrorKind::UnsupportedAlgorithm => {
            "the token's alg is not allowed".into()
        }
        ErrorKind::InvalidToken | ErrorKind::Base64(_) | ErrorKind::Json(_) | ErrorKind::Utf8(_) => {
            "the token is malformed".into()
        }
        other => format!("the token was refused: {other:?}"),
    }
}
