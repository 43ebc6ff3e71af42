//! OAUTHBEARER tokens against a key set: keys made for the run (ring), tokens signed
//! with `jsonwebtoken`, each rule of `spool_sasl::jwt` shown to refuse what it must.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as BASE64URL;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use spool_sasl::jwt::{TokenError, TokenRules, parse_key_set, verify};
use spool_testkit::tokens::{SigningKey, key_set_json, unix_seconds as now_s, unsecured_token};

fn key_set(keys: &[&SigningKey]) -> JwkSet {
    parse_key_set(key_set_json(keys).as_bytes()).unwrap()
}

fn rules() -> TokenRules {
    TokenRules::default()
}

#[test]
fn a_signed_token_gives_its_subject_and_expiry() {
    let (ec, ed) = (SigningKey::ec("ec-1"), SigningKey::ed("ed-1"));
    let keys = key_set(&[&ec, &ed]);
    let exp = now_s() + 600;
    for key in [&ec, &ed] {
        let token = key.sign(&json!({"sub": "alice", "exp": exp}));
        let verified = verify(&token, &keys, &rules(), now_s() * 1000).unwrap();
        assert_eq!(verified.principal, "alice");
        assert_eq!(verified.expires_at_ms, exp * 1000);
    }
    // No kid: the set's only key.
    let alone = key_set(&[&ec]);
    let token = ec.sign_as(None, &json!({"sub": "bob", "exp": exp}));
    assert_eq!(
        verify(&token, &alone, &rules(), 0).unwrap().principal,
        "bob"
    );
    // Another claim names the principal.
    let token = ec.sign(&json!({"sub": "x", "azp": "svc", "exp": exp}));
    let by_azp = TokenRules {
        principal_claim: "azp".to_owned(),
        ..rules()
    };
    assert_eq!(verify(&token, &keys, &by_azp, 0).unwrap().principal, "svc");
}

#[test]
fn a_token_not_signed_by_the_set_is_refused() {
    let (ec, other) = (SigningKey::ec("ec-1"), SigningKey::ec("ec-1"));
    let keys = key_set(&[&ec]);
    let claims = json!({"sub": "alice", "exp": now_s() + 600});
    let forged = other.sign_as(Some("ec-1"), &claims);
    assert_eq!(
        verify(&forged, &keys, &rules(), 0),
        Err(TokenError::Signature)
    );
    let unknown = ec.sign_as(Some("ec-2"), &claims);
    assert_eq!(
        verify(&unknown, &keys, &rules(), 0),
        Err(TokenError::UnknownKey(Some("ec-2".to_owned())))
    );
    // A changed claim breaks the signature.
    let token = ec.sign_as(Some("ec-1"), &claims);
    let parts: Vec<&str> = token.split('.').collect();
    let tampered = format!(
        "{}.{}.{}",
        parts[0],
        BASE64URL.encode(json!({"sub": "root", "exp": now_s() + 600}).to_string()),
        parts[2]
    );
    assert_eq!(
        verify(&tampered, &keys, &rules(), 0),
        Err(TokenError::Signature)
    );
}

#[test]
fn algorithm_confusion_is_refused() {
    let ec = SigningKey::ec("ec-1");
    let keys = key_set(&[&ec]);
    let claims = json!({"sub": "alice", "exp": now_s() + 600});
    // HS256 keyed with the public key's bytes: the classic confusion, against a key
    // that declares its algorithm and one that does not.
    let public = serde_json::to_vec(ec.jwk()).unwrap();
    let mut undeclared = ec.jwk().clone();
    undeclared.as_object_mut().unwrap().remove("alg");
    let undeclared = parse_key_set(json!({ "keys": [undeclared] }).to_string().as_bytes()).unwrap();
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("ec-1".to_owned());
    let token = jsonwebtoken::encode(&header, &claims, &EncodingKey::from_secret(&public)).unwrap();
    for keys in [&keys, &undeclared] {
        assert!(matches!(
            verify(&token, keys, &rules(), 0),
            Err(TokenError::AlgorithmMismatch(_))
        ));
    }
    // An EdDSA token for an ES256 key, declared or not.
    let ed = SigningKey::ed("ec-1");
    let token = ed.sign_as(Some("ec-1"), &claims);
    for keys in [&keys, &undeclared] {
        assert!(matches!(
            verify(&token, keys, &rules(), 0),
            Err(TokenError::AlgorithmMismatch(_))
        ));
    }
}

#[test]
fn claims_are_checked() {
    let ec = SigningKey::ec("k");
    let keys = key_set(&[&ec]);
    let now = now_s();
    let check = |claims: Value, rules: &TokenRules| {
        verify(&ec.sign_as(Some("k"), &claims), &keys, rules, now * 1000)
    };
    assert_eq!(
        check(json!({"sub": "a", "exp": now - 120}), &rules()),
        Err(TokenError::Expired)
    );
    // Within the clock skew: still good.
    assert!(check(json!({"sub": "a", "exp": now - 5}), &rules()).is_ok());
    assert_eq!(
        check(
            json!({"sub": "a", "exp": now + 600, "nbf": now + 300}),
            &rules()
        ),
        Err(TokenError::NotYetValid)
    );
    assert_eq!(
        check(json!({"sub": "a"}), &rules()),
        Err(TokenError::NoExpiry)
    );
    assert_eq!(
        check(json!({"exp": now + 600}), &rules()),
        Err(TokenError::NoPrincipal("sub".to_owned()))
    );
    assert_eq!(
        check(json!({"sub": "", "exp": now + 600}), &rules()),
        Err(TokenError::NoPrincipal("sub".to_owned()))
    );
    let strict = TokenRules {
        audience: vec!["spool".to_owned()],
        issuer: Some("https://idp.example".to_owned()),
        ..rules()
    };
    let good = json!({"sub": "a", "exp": now + 600, "aud": ["x", "spool"],
        "iss": "https://idp.example"});
    assert!(check(good, &strict).is_ok());
    assert_eq!(
        check(
            json!({"sub": "a", "exp": now + 600, "aud": "x", "iss": "https://idp.example"}),
            &strict
        ),
        Err(TokenError::Audience)
    );
    assert_eq!(
        check(
            json!({"sub": "a", "exp": now + 600, "aud": "spool", "iss": "https://evil"}),
            &strict
        ),
        Err(TokenError::Issuer)
    );
    // An expected audience or issuer makes its claim required.
    assert_eq!(
        check(
            json!({"sub": "a", "exp": now + 600, "iss": "https://idp.example"}),
            &strict
        ),
        Err(TokenError::Audience)
    );
    assert_eq!(
        check(
            json!({"sub": "a", "exp": now + 600, "aud": "spool"}),
            &strict
        ),
        Err(TokenError::Issuer)
    );
    // No expected audience: a token's aud is not held against it.
    assert!(check(json!({"sub": "a", "exp": now + 600, "aud": "x"}), &rules()).is_ok());
}

#[test]
fn unsecured_tokens_only_when_allowed() {
    let keys = key_set(&[&SigningKey::ec("k")]);
    let now = now_s();
    let token = unsecured_token(&json!({"sub": "alice", "exp": now + 60, "iat": now}));
    assert_eq!(
        verify(&token, &keys, &rules(), now * 1000),
        Err(TokenError::Unsecured)
    );
    let allowed = TokenRules {
        allow_unsecured: true,
        audience: vec!["spool".to_owned()],
        ..rules()
    };
    assert_eq!(
        verify(&token, &keys, &allowed, now * 1000),
        Err(TokenError::Audience)
    );
    let allowed = TokenRules {
        allow_unsecured: true,
        ..rules()
    };
    assert_eq!(
        verify(&token, &keys, &allowed, now * 1000)
            .unwrap()
            .principal,
        "alice"
    );
    let expired = unsecured_token(&json!({"sub": "alice", "exp": now - 120}));
    assert_eq!(
        verify(&expired, &keys, &allowed, now * 1000),
        Err(TokenError::Expired)
    );
    let signed_none = format!("{}sig", token);
    assert!(matches!(
        verify(&signed_none, &keys, &allowed, now * 1000),
        Err(TokenError::Malformed(_))
    ));
}

#[test]
fn malformed_tokens_and_key_sets_are_refused() {
    let keys = key_set(&[&SigningKey::ec("k")]);
    for bad in ["", "a.b", "a.b.c.d", "!!.e30.", "e30.e30.", "W10.e30."] {
        assert!(
            matches!(
                verify(bad, &keys, &rules(), 0),
                Err(TokenError::Malformed(_))
            ),
            "{bad}"
        );
    }
    assert!(parse_key_set(b"{}").is_err());
    assert!(parse_key_set(b"{\"keys\": []}").is_err());
    assert!(parse_key_set(b"not json").is_err());
    // Encryption keys and keys of unknown types are left out.
    let ec = SigningKey::ec("sig");
    let mut enc = SigningKey::ec("enc").jwk().clone();
    enc["use"] = json!("enc");
    let set = json!({"keys": [ec.jwk(), enc, {"kty": "weird", "kid": "w"}]});
    let parsed = parse_key_set(set.to_string().as_bytes()).unwrap();
    assert_eq!(parsed.keys.len(), 1);
}
