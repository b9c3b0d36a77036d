//! OAuth access tokens on `serve --http`: what checking a JWT costs a call,
//! with the issuer's key already cached (no network). A token seen for the
//! first time pays for its ES256 signature and the claim checks; a client
//! sends the same token on every call, and from the second call on the
//! verified-token cache answers: that is the cost a call carries, bounded
//! at 20 µs. The first-sight cost is reported beside it, without a bound.

use std::time::Duration;

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{EcdsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde_json::json;
use toolhost::mcp::oauth::keys::KeySet;
use toolhost::mcp::oauth::{OAuth, Outcome};

use crate::report::Bench;

/// The most the check may add to a call.
const BOUND: Duration = Duration::from_micros(20);

const ISSUER: &str = "https://idp.bench.invalid";
const AUDIENCE: &str = "https://tools.bench.invalid/mcp";

pub fn run(b: &mut Bench) -> anyhow::Result<()> {
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
        .map_err(|e| anyhow::anyhow!("generate a P-256 key: {e}"))?;
    let signing = EncodingKey::from_ec_der(pkcs8.as_ref());
    let mut jwk = Jwk::from_encoding_key(&signing, Algorithm::ES256)?;
    jwk.common.key_id = Some("bench".into());
    let keys = KeySet::from_jwks(&JwkSet { keys: vec![jwk] });

    let section = serde_json::from_value(json!({"issuer": ISSUER, "audience": AUDIENCE}))?;
    let principals = vec![serde_json::from_value(
        json!({"name": "bench", "claims": {"sub": "bench-client", "groups": ["eng"]}}),
    )?];
    let oauth = OAuth::preloaded(&section, &principals, keys).map_err(anyhow::Error::msg)?;

    let now = jsonwebtoken::get_current_timestamp();
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some("bench".into());
    let claims = json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "bench-client", "groups": ["eng", "ops"],
        "iat": now, "exp": now + 3600, "scope": "tools"});
    let token = encode(&header, &claims, &signing)?;
    let expected = Outcome::Principal("bench".into());
    anyhow::ensure!(
        oauth.verify_uncached(&token) == expected,
        "the bench token must verify"
    );

    let first = b.time(50, b.n(2_000), || {
        assert_eq!(oauth.verify_uncached(&token), expected);
    });
    b.row(
        "oauth",
        "JWT access token seen first: ES256 signature, iss/aud/exp, claims → principal",
        first,
        None,
    );
    let again = b.time(200, b.n(20_000), || {
        assert_eq!(oauth.identify_cached(&token), expected);
    });
    b.row(
        "oauth",
        "JWT access token on a later call (verified-token cache)",
        again,
        Some(BOUND),
    );
    Ok(())
}
