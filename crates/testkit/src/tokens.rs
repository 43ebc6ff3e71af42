//! OAUTHBEARER tokens for tests: signing keys made for the run (never committed),
//! their public halves as JSON Web Keys, JWTs signed with them, and unsecured
//! (`alg: none`) tokens.
#![allow(clippy::expect_used)]

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as BASE64URL;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::rand::SystemRandom;
use ring::signature::{self, KeyPair};
use serde_json::{Value, json};

/// A private key that signs tokens, and its public JWK.
pub struct SigningKey {
    encoding: EncodingKey,
    algorithm: Algorithm,
    jwk: Value,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("jwk", &self.jwk)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// An ES256 (P-256) key with id `kid`.
    pub fn ec(kid: &str) -> SigningKey {
        let rng = SystemRandom::new();
        let pkcs8 = signature::EcdsaKeyPair::generate_pkcs8(
            &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            &rng,
        )
        .expect("a P-256 key");
        let pair = signature::EcdsaKeyPair::from_pkcs8(
            &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            pkcs8.as_ref(),
            &rng,
        )
        .expect("the key just made");
        // 0x04, then x and y.
        let point = pair.public_key().as_ref();
        let (x, y) = point.get(1..).unwrap_or_default().split_at(32);
        SigningKey {
            encoding: EncodingKey::from_ec_der(pkcs8.as_ref()),
            algorithm: Algorithm::ES256,
            jwk: json!({"kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "alg": "ES256",
                "x": BASE64URL.encode(x), "y": BASE64URL.encode(y)}),
        }
    }

    /// An Ed25519 key with id `kid`.
    pub fn ed(kid: &str) -> SigningKey {
        let pkcs8 = signature::Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).expect("a key");
        let pair = signature::Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).expect("the key");
        SigningKey {
            encoding: EncodingKey::from_ed_der(pkcs8.as_ref()),
            algorithm: Algorithm::EdDSA,
            jwk: json!({"kty": "OKP", "crv": "Ed25519", "kid": kid,
                "x": BASE64URL.encode(pair.public_key().as_ref())}),
        }
    }

    /// The public key as a JWK.
    pub fn jwk(&self) -> &Value {
        &self.jwk
    }

    /// A token of `claims` signed with this key, its header naming `kid`.
    pub fn sign_as(&self, kid: Option<&str>, claims: &Value) -> String {
        let mut header = Header::new(self.algorithm);
        header.kid = kid.map(str::to_owned);
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("a signed token")
    }

    /// A token of `claims` signed with this key, its header naming this key.
    pub fn sign(&self, claims: &Value) -> String {
        self.sign_as(self.jwk["kid"].as_str(), claims)
    }
}

/// A JSON Web Key Set of `keys`' public halves.
pub fn key_set_json(keys: &[&SigningKey]) -> String {
    let keys: Vec<&Value> = keys.iter().map(|key| key.jwk()).collect();
    json!({ "keys": keys }).to_string()
}

/// An unsecured token (`alg: none`, no signature), as librdkafka's
/// `enable.sasl.oauthbearer.unsecure.jwt` makes.
pub fn unsecured_token(claims: &Value) -> String {
    format!(
        "{}.{}.",
        BASE64URL.encode(r#"{"alg":"none"}"#),
        BASE64URL.encode(claims.to_string())
    )
}

/// Seconds since the Unix epoch, as JWT claims count.
pub fn unix_seconds() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_secs()).unwrap_or(i64::MAX)
}

/// OAUTHBEARER's client response for `token` (RFC 7628).
pub fn oauthbearer_response(token: &str) -> Vec<u8> {
    format!("n,,\u{1}auth=Bearer {token}\u{1}\u{1}").into_bytes()
}
