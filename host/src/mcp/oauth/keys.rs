//! The issuer's signing keys, as the host uses them: each with the
//! algorithms its key type allows, so a token cannot choose how it is
//! checked (no `none`, no HS256 "signed" with an RSA public key as the
//! secret: algorithm confusion).

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};

/// One usable signing key.
pub struct Key {
    /// `kid`, as the JWKS names it.
    pub kid: Option<String>,
    /// The public key.
    pub decoding: DecodingKey,
    /// What a token signed with it may say in `alg`.
    pub algorithms: Vec<Algorithm>,
    /// The key type, for messages (`RSA`, `EC P-256`, `OKP Ed25519`).
    pub kind: &'static str,
}

/// The keys of one JWKS fetch.
#[derive(Default)]
pub struct KeySet {
    /// Usable keys, in the JWKS's order.
    pub keys: Vec<Key>,
    /// Keys left out (symmetric, encryption, unknown type), for the log.
    pub skipped: usize,
    /// Which fetch this is (0: none yet); tokens verified under one
    /// generation are checked again under the next.
    pub generation: u64,
}

impl KeySet {
    /// The public signing keys of a JWKS; the others are counted, not kept.
    pub fn from_jwks(set: &JwkSet) -> KeySet {
        let mut out = KeySet::default();
        for jwk in &set.keys {
            match usable(jwk) {
                Some(key) => out.keys.push(key),
                None => out.skipped += 1,
            }
        }
        out
    }

    /// The keys a token's `kid` names. Without a `kid`, the only key when
    /// the set holds exactly one (an IdP with several keys must say which).
    pub fn named(&self, kid: Option<&str>) -> Vec<&Key> {
        match kid {
            Some(kid) => self
                .keys
                .iter()
                .filter(|k| k.kid.as_deref() == Some(kid))
                .collect(),
            None if self.keys.len() == 1 => self.keys.iter().collect(),
            None => Vec::new(),
        }
    }
}

/// A key the host verifies with, or `None` for one it must not use:
/// symmetric keys (a shared secret in a public document), keys marked for
/// encryption, curves and types the crate does not verify.
fn usable(jwk: &Jwk) -> Option<Key> {
    if matches!(&jwk.common.public_key_use, Some(u) if *u != PublicKeyUse::Signature) {
        return None;
    }
    let (kind, family): (&'static str, Vec<Algorithm>) = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => (
            "RSA",
            vec![
                Algorithm::RS256,
                Algorithm::RS384,
                Algorithm::RS512,
                Algorithm::PS256,
                Algorithm::PS384,
                Algorithm::PS512,
            ],
        ),
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => ("EC P-256", vec![Algorithm::ES256]),
            EllipticCurve::P384 => ("EC P-384", vec![Algorithm::ES384]),
            _ => return None,
        },
        AlgorithmParameters::OctetKeyPair(okp) if okp.curve == EllipticCurve::Ed25519 => {
            ("OKP Ed25519", vec![Algorithm::EdDSA])
        }
        _ => return None,
    };
    // A key that names its algorithm allows that one only (if its type
    // allows it at all).
    let algorithms = match jwk.common.key_algorithm {
        Some(named) => {
            let named = Algorithm::try_from(named).ok()?;
            if !family.contains(&named) {
                return None;
            }
            vec![named]
        }
        None => family,
    };
    let decoding = DecodingKey::from_jwk(jwk).ok()?;
    Some(Key {
        kid: jwk.common.key_id.clone(),
        decoding,
        algorithms,
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(json: serde_json::Value) -> KeySet {
        KeySet::from_jwks(&serde_json::from_value(json).expect("jwks"))
    }

    #[test]
    fn symmetric_and_encryption_keys_are_left_out() {
        let keys = set(serde_json::json!({"keys": [
            {"kty": "oct", "kid": "s", "k": "c2VjcmV0"},
            {"kty": "EC", "kid": "enc", "use": "enc", "crv": "P-256",
             "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
             "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"},
            {"kty": "EC", "kid": "sig", "crv": "P-256",
             "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
             "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}
        ]}));
        assert_eq!(keys.keys.len(), 1);
        assert_eq!(keys.skipped, 2);
        assert_eq!(keys.keys[0].algorithms, [Algorithm::ES256]);
        assert_eq!(
            keys.named(None).len(),
            1,
            "the only key serves a token without kid"
        );
        assert!(keys.named(Some("s")).is_empty());
    }

    #[test]
    fn a_named_algorithm_must_fit_the_key_type() {
        let rsa = |alg: &str| serde_json::json!({"kty": "RSA", "kid": "r", "alg": alg, "n": "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw", "e": "AQAB"});
        assert_eq!(
            set(serde_json::json!({"keys": [rsa("PS256")]})).keys[0].algorithms,
            [Algorithm::PS256]
        );
        assert!(set(serde_json::json!({"keys": [rsa("HS256")]})).keys.is_empty());
        assert!(set(serde_json::json!({"keys": [rsa("ES256")]})).keys.is_empty());
    }
}
