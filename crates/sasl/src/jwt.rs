//! The JWT of an OAUTHBEARER login, checked as Kafka's broker-side validator does
//! (KIP-768): signed by a key of the configured JSON Web Key Set (RS256/384/512,
//! PS256/384/512, ES256/384 or EdDSA; the `kid` picks the key), not expired, already
//! valid, for the expected audience and issuer if set (a token without `aud` or `iss`
//! then fails), naming its principal in `sub` (or the claim set).
//!
//! Unsecured tokens (`alg: none`, what librdkafka's
//! `enable.sasl.oauthbearer.unsecure.jwt` makes) are refused unless the broker allows
//! them, which it does only when told to, for tests.
//!
//! Signatures are checked by `jsonwebtoken`; this module picks the key, refuses what
//! does not fit it, and checks the claims against the time it is given, signed and
//! unsecured tokens alike.

use std::collections::HashSet;
use std::str::FromStr;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as BASE64URL;
use jsonwebtoken::jwk::{Jwk, JwkSet, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;

/// What a token must satisfy, besides its signature.
#[derive(Debug, Clone)]
pub struct TokenRules {
    /// `sasl.oauthbearer.sub.claim.name`: the claim naming the principal.
    pub principal_claim: String,
    /// `sasl.oauthbearer.expected.audience`: one of these must be in `aud`; empty for
    /// no check.
    pub audience: Vec<String>,
    /// `sasl.oauthbearer.expected.issuer`: `iss` must be this, if set.
    pub issuer: Option<String>,
    /// `sasl.oauthbearer.clock.skew.seconds`: how far `exp` and `nbf` may be off.
    pub clock_skew_seconds: u64,
    /// Whether `alg: none` tokens are taken (tests only).
    pub allow_unsecured: bool,
}

impl Default for TokenRules {
    fn default() -> Self {
        TokenRules {
            principal_claim: "sub".to_owned(),
            audience: Vec::new(),
            issuer: None,
            clock_skew_seconds: 30,
            allow_unsecured: false,
        }
    }
}

/// A token that passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The user name the principal claim gives.
    pub principal: String,
    /// When the token expires, in ms since the Unix epoch.
    pub expires_at_ms: i64,
}

/// Why a token is refused; the message goes back to the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("malformed token: {0}")]
    Malformed(&'static str),
    #[error("unsecured tokens (alg none) are not accepted")]
    Unsecured,
    /// No key of the set has this id: the set may be out of date.
    #[error("no key of the key set has id {0:?}")]
    UnknownKey(Option<String>),
    #[error("the token's algorithm {0} does not fit its key")]
    AlgorithmMismatch(String),
    #[error("the token is expired")]
    Expired,
    #[error("the token is not valid yet")]
    NotYetValid,
    #[error("the token is not for this audience")]
    Audience,
    #[error("the token is not from the expected issuer")]
    Issuer,
    #[error("the token has no string claim {0:?} naming the principal")]
    NoPrincipal(String),
    #[error("the token has no numeric exp claim")]
    NoExpiry,
    #[error("the token's signature does not verify")]
    Signature,
    #[error("the token cannot be checked: {0}")]
    Invalid(String),
}

/// Checks `token` against `keys` and `rules` at `now_ms` (ms since the Unix epoch).
pub fn verify(
    token: &str,
    keys: &JwkSet,
    rules: &TokenRules,
    now_ms: i64,
) -> Result<Verified, TokenError> {
    let mut parts = token.split('.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(TokenError::Malformed("a JWT is three parts"));
    };
    let header = decode_json(header)?;
    let algorithm = header
        .get("alg")
        .and_then(Value::as_str)
        .ok_or(TokenError::Malformed("no alg in the header"))?;
    let claims = if algorithm == "none" {
        if !rules.allow_unsecured {
            return Err(TokenError::Unsecured);
        }
        if !signature.is_empty() {
            return Err(TokenError::Malformed("an unsecured token with a signature"));
        }
        decode_json(payload)?
    } else {
        let algorithm =
            Algorithm::from_str(algorithm).map_err(|_| TokenError::Malformed("an unknown alg"))?;
        let kid = header.get("kid").and_then(Value::as_str);
        let jwk = key_for(keys, kid)?;
        verify_signature(token, algorithm, jwk)?
    };
    check_claims(&claims, rules, now_ms)?;
    let principal = claims
        .get(&rules.principal_claim)
        .and_then(Value::as_str)
        .filter(|name| !name.is_empty())
        .ok_or_else(|| TokenError::NoPrincipal(rules.principal_claim.clone()))?;
    let expires = claims
        .get("exp")
        .and_then(Value::as_f64)
        .ok_or(TokenError::NoExpiry)?;
    Ok(Verified {
        principal: principal.to_owned(),
        // Saturating: a float out of range becomes the extreme.
        #[allow(clippy::cast_possible_truncation)]
        expires_at_ms: (expires * 1000.0) as i64,
    })
}

/// The key `kid` names; without a `kid`, the set's only key.
fn key_for<'a>(keys: &'a JwkSet, kid: Option<&str>) -> Result<&'a Jwk, TokenError> {
    match kid {
        Some(kid) => keys.find(kid),
        None if keys.keys.len() == 1 => keys.keys.first(),
        None => None,
    }
    .ok_or_else(|| TokenError::UnknownKey(kid.map(str::to_owned)))
}

/// The claims of a token whose signature `jwk` verifies.
fn verify_signature(token: &str, algorithm: Algorithm, jwk: &Jwk) -> Result<Value, TokenError> {
    // A key that says its algorithm is used with that one only; HMAC keys are shared
    // secrets, not a key set an identity provider publishes.
    let mismatch = || TokenError::AlgorithmMismatch(format!("{algorithm:?}"));
    // (`KeyAlgorithm` and `Algorithm` are two enums with the same names.)
    if let Some(declared) = jwk.common.key_algorithm
        && format!("{declared:?}") != format!("{algorithm:?}")
    {
        return Err(mismatch());
    }
    if matches!(
        algorithm,
        Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512
    ) {
        return Err(mismatch());
    }
    let key = DecodingKey::from_jwk(jwk).map_err(|error| TokenError::Invalid(error.to_string()))?;
    // The signature only: the claims are `check_claims`', against the time given.
    let mut validation = Validation::new(algorithm);
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    validation.required_spec_claims = HashSet::new();
    let data = jsonwebtoken::decode::<Value>(token, &key, &validation).map_err(|error| {
        use jsonwebtoken::errors::ErrorKind;
        match error.kind() {
            ErrorKind::InvalidSignature => TokenError::Signature,
            ErrorKind::InvalidAlgorithm => mismatch(),
            _ => TokenError::Invalid(error.to_string()),
        }
    })?;
    Ok(data.claims)
}

/// `exp` (required), `nbf`, `aud` and `iss` against `rules` at `now_ms`. An expected
/// audience or issuer makes its claim required.
fn check_claims(claims: &Value, rules: &TokenRules, now_ms: i64) -> Result<(), TokenError> {
    let skew_ms = i64::try_from(rules.clock_skew_seconds.saturating_mul(1000)).unwrap_or(i64::MAX);
    let seconds = |name: &str| claims.get(name).and_then(Value::as_f64);
    #[allow(clippy::cast_possible_truncation)]
    let ms = |seconds: f64| (seconds * 1000.0) as i64;
    let expires = seconds("exp").ok_or(TokenError::NoExpiry)?;
    if ms(expires) <= now_ms.saturating_sub(skew_ms) {
        return Err(TokenError::Expired);
    }
    if let Some(not_before) = seconds("nbf")
        && ms(not_before) > now_ms.saturating_add(skew_ms)
    {
        return Err(TokenError::NotYetValid);
    }
    if !rules.audience.is_empty() {
        let audiences: HashSet<&str> = match claims.get("aud") {
            Some(Value::String(one)) => HashSet::from([one.as_str()]),
            Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
            _ => HashSet::new(),
        };
        if !rules
            .audience
            .iter()
            .any(|a| audiences.contains(a.as_str()))
        {
            return Err(TokenError::Audience);
        }
    }
    if let Some(issuer) = &rules.issuer
        && claims.get("iss").and_then(Value::as_str) != Some(issuer.as_str())
    {
        return Err(TokenError::Issuer);
    }
    Ok(())
}

/// A base64url JSON object of a token.
fn decode_json(part: &str) -> Result<Value, TokenError> {
    let bytes = BASE64URL
        .decode(part.trim_end_matches('='))
        .map_err(|_| TokenError::Malformed("a part is not base64url"))?;
    let value: Value =
        serde_json::from_slice(&bytes).map_err(|_| TokenError::Malformed("a part is not JSON"))?;
    if value.is_object() {
        Ok(value)
    } else {
        Err(TokenError::Malformed("a part is not a JSON object"))
    }
}

/// Parses a JSON Web Key Set (`{"keys": [...]}`); keys of types this cannot use are
/// left out, as identity providers publish encryption keys too.
pub fn parse_key_set(json: &[u8]) -> Result<JwkSet, String> {
    let value: Value = serde_json::from_slice(json).map_err(|error| error.to_string())?;
    let keys = value
        .get("keys")
        .and_then(Value::as_array)
        .ok_or("a JSON Web Key Set is an object with a \"keys\" array")?;
    let keys: Vec<Jwk> = keys
        .iter()
        .filter_map(|key| serde_json::from_value::<Jwk>(key.clone()).ok())
        .filter(|key| key.common.public_key_use != Some(PublicKeyUse::Encryption))
        .filter(|key| DecodingKey::from_jwk(key).is_ok())
        .collect();
    if keys.is_empty() {
        return Err("the key set holds no signature key Spool can use".to_owned());
    }
    Ok(JwkSet { keys })
}
