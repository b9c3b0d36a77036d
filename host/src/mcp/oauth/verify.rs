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

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    /// A P-256 public key (RFC 7515's example), kid `sig`.
    fn keys() -> KeySet {
        KeySet::from_jwks(
            &serde_json::from_value(
                serde_json::json!({"keys": [{"kty": "EC", "kid": "sig", "crv": "P-256",
                "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
                "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}),
            )
            .expect("jwks"),
        )
    }

    fn expect() -> Expect {
        Expect {
            issuer: "https://idp.example".into(),
            audience: "https://t.example/mcp".into(),
            leeway_secs: 0,
        }
    }

    fn b64(json: serde_json::Value) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json.to_string())
    }

    fn claims() -> serde_json::Value {
        serde_json::json!({"iss": "https://idp.example", "aud": "https://t.example/mcp", "sub": "a",
            "exp": jsonwebtoken::get_current_timestamp() + 600})
    }

    #[test]
    fn a_token_cannot_choose_an_hmac_algorithm_with_the_public_key() {
        // The classic confusion: HS256 "signed" with the public key's bytes.
        let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode("f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU")
            .expect("x");
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
        header.kid = Some("sig".into());
        let token = jsonwebtoken::encode(
            &header,
            &claims(),
            &jsonwebtoken::EncodingKey::from_secret(&secret),
        )
        .expect("encode");
        let refused = verify(&token, &keys(), &expect()).expect_err("HS256 refused");
        assert!(
            refused.to_string().contains("not allowed with the EC P-256 key"),
            "{refused}"
        );
    }

    #[test]
    fn unsigned_and_unknown_key_tokens_are_refused() {
        let none = format!(
            "{}.{}.",
            b64(serde_json::json!({"alg": "none", "kid": "sig"})),
            b64(claims())
        );
        assert!(matches!(
            verify(&none, &keys(), &expect()),
            Err(Rejection::Invalid(_))
        ));
        let other = format!(
            "{}.{}.c2ln",
            b64(serde_json::json!({"alg": "ES256", "kid": "other"})),
            b64(claims())
        );
        assert_eq!(
            verify(&other, &keys(), &expect()),
            Err(Rejection::UnknownKey(Some("other".into())))
        );
        let forged = format!(
            "{}.{}.c2ln",
            b64(serde_json::json!({"alg": "ES256", "kid": "sig"})),
            b64(claims())
        );
        let refused = verify(&forged, &keys(), &expect()).expect_err("bad signature");
        assert!(matches!(refused, Rejection::Invalid(_)), "{refused}");
    }
}
