//! OAUTHBEARER through the broker, with a raw client: tokens signed by a key of the
//! configured key set (a file, or served over HTTP) log in, with the session's
//! lifetime the token's; expired, forged, wrong- or no-audience, wrong- or no-issuer
//! and unsecured tokens answer `SASL_AUTHENTICATION_FAILED` and close; a key added to
//! the file is picked up without a restart; a key set over HTTP is read again for an
//! unknown key id, with a backoff; unsecured tokens pass only where allowed; a broker
//! offering OAUTHBEARER with no key set, or one over 1 MiB, does not start. Real clients are in
//! `compat/test_oauthbearer.py`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::{
    MetadataRequest, RequestKind, ResponseKind, SaslAuthenticateRequest, SaslHandshakeRequest,
};
use kafka_protocol::protocol::StrBytes;
use serde_json::json;
use spool_broker::{Broker, BrokerConfig};
use spool_testkit::tokens::{
    SigningKey, key_set_json, oauthbearer_response, unix_seconds, unsecured_token,
};
use spool_testkit::{RawClient, TestBroker};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SASL_AUTHENTICATION_FAILED: i16 = 58;

/// Handshake and one SaslAuthenticate: (error, message, session lifetime).
async fn login(addr: SocketAddr, token: &str) -> (i16, String, i64, RawClient) {
    let mut client = RawClient::connect(addr).await;
    let request =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("OAUTHBEARER"));
    let ResponseKind::SaslHandshake(response) =
        client.call(RequestKind::SaslHandshake(request), 1).await
    else {
        panic!("not a SaslHandshake response")
    };
    assert_eq!(response.error_code, 0);
    let request = SaslAuthenticateRequest::default()
        .with_auth_bytes(Bytes::from(oauthbearer_response(token)));
    let ResponseKind::SaslAuthenticate(response) =
        client.call(RequestKind::SaslAuthenticate(request), 2).await
    else {
        panic!("not a SaslAuthenticate response")
    };
    let message = response
        .error_message
        .map(|m| m.to_string())
        .unwrap_or_default();
    (
        response.error_code,
        message,
        response.session_lifetime_ms,
        client,
    )
}

async fn metadata_works(client: &mut RawClient) -> bool {
    let request = MetadataRequest::default().with_topics(Some(Vec::new()));
    matches!(
        client.call(RequestKind::Metadata(request), 12).await,
        ResponseKind::Metadata(_)
    )
}

async fn broker(jwks_url: &str, extra: &[(&str, &str)]) -> TestBroker {
    let mut settings = vec![
        ("listeners", "SASL_PLAINTEXT://127.0.0.1:0"),
        ("sasl.enabled.mechanisms", "OAUTHBEARER"),
        ("sasl.oauthbearer.jwks.endpoint.url", jwks_url),
        ("connection.failed.authentication.delay.ms", "10"),
    ];
    settings.extend_from_slice(extra);
    TestBroker::start_with(&settings).await
}

fn claims(sub: &str, lifetime_s: i64) -> serde_json::Value {
    let now = unix_seconds();
    json!({"sub": sub, "iat": now, "exp": now + lifetime_s, "aud": "spool",
        "iss": "https://idp.test"})
}

/// Logs in with `token` until the broker takes it (within 30 s); how many logins it
/// took.
async fn login_until_accepted(addr: SocketAddr, token: &str, pause: Duration) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut attempts = 0;
    loop {
        attempts += 1;
        let (error, message, ..) = login(addr, token).await;
        if error == 0 {
            return attempts;
        }
        assert!(
            Instant::now() < deadline,
            "the token was never taken: {message}"
        );
        tokio::time::sleep(pause).await;
    }
}

/// An HTTP server on a free port answering every request with the head and body
/// `answer` gives, then closing; its URL.
async fn serve_http(answer: impl Fn() -> (String, Vec<u8>) + Send + Sync + 'static) -> String {
    let http = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks.json", http.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = http.accept().await {
            let mut request = vec![0_u8; 4096];
            let _ = socket.read(&mut request).await;
            let (head, body) = answer();
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(&body).await;
        }
    });
    url
}

/// Why a broker with `settings` does not start.
async fn start_error(settings: &[(&str, &str)]) -> String {
    let data = tempfile::tempdir().unwrap();
    let mut config = BrokerConfig {
        data_dir: data.path().to_path_buf(),
        ..BrokerConfig::default()
    };
    config.admin.listen = None;
    for (name, value) in settings {
        config.set(name, value).unwrap();
    }
    let Err(error) = Broker::builder(config).start().await else {
        panic!("a broker started with {settings:?}")
    };
    error.to_string()
}

#[tokio::test]
async fn signed_tokens_log_in_and_bad_ones_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let key = SigningKey::ec("key-1");
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, key_set_json(&[&key])).unwrap();
    let broker = broker(
        jwks.to_str().unwrap(),
        &[
            ("sasl.oauthbearer.expected.audience", "spool"),
            ("sasl.oauthbearer.expected.issuer", "https://idp.test"),
        ],
    )
    .await;
    let addr = broker.addr();

    let (error, message, lifetime, mut client) =
        login(addr, &key.sign(&claims("alice", 600))).await;
    assert_eq!(error, 0, "{message}");
    // The session lasts as long as the token: about ten minutes.
    assert!(
        (590_000..=600_000).contains(&lifetime),
        "session lifetime {lifetime}"
    );
    assert!(metadata_works(&mut client).await);

    let now = unix_seconds();
    let forger = SigningKey::ec("key-1");
    let unknown = SigningKey::ec("key-9");
    let cases = [
        (key.sign(&claims("alice", -120)), "expired"),
        (forger.sign(&claims("alice", 600)), "signature"),
        (unknown.sign(&claims("alice", 600)), "key-9"),
        (
            key.sign(&json!({"sub": "alice", "exp": now + 600, "aud": "other", "iss": "https://idp.test"})),
            "audience",
        ),
        (
            key.sign(&json!({"sub": "alice", "exp": now + 600, "aud": "spool", "iss": "https://evil"})),
            "issuer",
        ),
        (
            key.sign(&json!({"exp": now + 600, "aud": "spool", "iss": "https://idp.test"})),
            "principal",
        ),
        (
            key.sign(&json!({"sub": "alice", "exp": now + 600, "iss": "https://idp.test"})),
            "audience",
        ),
        (
            key.sign(&json!({"sub": "alice", "exp": now + 600, "aud": "spool"})),
            "issuer",
        ),
        (unsecured_token(&claims("alice", 600)), "unsecured"),
        ("not-a-jwt".to_owned(), "malformed"),
    ];
    for (token, why) in cases {
        let (error, message, _, mut client) = login(addr, &token).await;
        assert_eq!(error, SASL_AUTHENTICATION_FAILED, "{why}: {message}");
        assert!(message.contains(why), "{why}: {message}");
        assert!(
            client.is_closed().await,
            "{why}: closed after a failed login"
        );
    }
}

#[tokio::test]
async fn a_key_added_to_the_file_is_picked_up_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = (SigningKey::ec("old"), SigningKey::ed("new"));
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, key_set_json(&[&old])).unwrap();
    let broker = broker(jwks.to_str().unwrap(), &[]).await;
    let token = new.sign(&claims("bob", 600));
    let (error, ..) = login(broker.addr(), &token).await;
    assert_eq!(error, SASL_AUTHENTICATION_FAILED, "not in the set yet");

    let replacement = dir.path().join("jwks.json.new");
    std::fs::write(&replacement, key_set_json(&[&old, &new])).unwrap();
    std::fs::rename(&replacement, &jwks).unwrap();
    login_until_accepted(broker.addr(), &token, Duration::from_millis(250)).await;
    let (error, ..) = login(broker.addr(), &old.sign(&claims("bob", 600))).await;
    assert_eq!(error, 0, "the old key still signs");
}

/// A key set served over HTTP, as identity providers publish theirs: read at start,
/// and read again when a token names a key the broker has not seen, at most once per
/// backoff however many such logins come.
#[tokio::test]
async fn a_key_set_is_fetched_over_http() {
    let (first, rotated) = (SigningKey::ec("http-1"), SigningKey::ec("http-2"));
    let served = Arc::new(Mutex::new((key_set_json(&[&first]), 0_u32)));
    let server = served.clone();
    let url = serve_http(move || {
        let mut served = server.lock().unwrap();
        served.1 += 1;
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            served.0.len()
        );
        (head, served.0.clone().into_bytes())
    })
    .await;
    let broker = broker(&url, &[]).await;
    let (error, message, ..) = login(broker.addr(), &first.sign(&claims("carol", 60))).await;
    assert_eq!(error, 0, "{message}");
    assert_eq!(served.lock().unwrap().1, 1, "read once, at start");

    // The provider rotates its key; logins with the new one fail until the broker
    // reads the set again (Spool's backoff: 10 s after the last read).
    served.lock().unwrap().0 = key_set_json(&[&first, &rotated]);
    let token = rotated.sign(&claims("carol", 60));
    let attempts = login_until_accepted(broker.addr(), &token, Duration::from_millis(100)).await;
    let fetches = served.lock().unwrap().1;
    assert!(attempts > 10, "{attempts} logins before the refetch");
    assert!(fetches <= 3, "{fetches} fetches for {attempts} logins");
}

#[tokio::test]
async fn unsecured_tokens_pass_only_where_allowed() {
    let broker = TestBroker::start_with(&[
        ("listeners", "SASL_PLAINTEXT://127.0.0.1:0"),
        ("sasl.enabled.mechanisms", "OAUTHBEARER,PLAIN"),
        ("sasl.oauthbearer.unsecured.jwt.allowed", "true"),
        ("connection.failed.authentication.delay.ms", "10"),
    ])
    .await;
    let (error, message, lifetime, mut client) =
        login(broker.addr(), &unsecured_token(&claims("dave", 60))).await;
    assert_eq!(error, 0, "{message}");
    assert!((50_000..=60_000).contains(&lifetime), "{lifetime}");
    assert!(metadata_works(&mut client).await);
    let (error, ..) = login(broker.addr(), &unsecured_token(&claims("dave", -120))).await;
    assert_eq!(error, SASL_AUTHENTICATION_FAILED, "expired");

    // Without a key set and without the test switch, a broker offering OAUTHBEARER
    // does not start.
    let error = start_error(&[
        ("listeners", "SASL_PLAINTEXT://127.0.0.1:0"),
        ("sasl.enabled.mechanisms", "OAUTHBEARER"),
    ])
    .await;
    assert!(
        error.contains("sasl.oauthbearer.jwks.endpoint.url"),
        "{error}"
    );
}

/// A key set larger than 1 MiB is refused however it comes (here without a length,
/// until the server closes): the broker does not start on it.
#[tokio::test]
async fn an_oversized_key_set_is_refused() {
    let url = serve_http(|| {
        let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n";
        (head.to_owned(), vec![b' '; 4 << 20])
    })
    .await;
    let error = start_error(&[
        ("listeners", "SASL_PLAINTEXT://127.0.0.1:0"),
        ("sasl.enabled.mechanisms", "OAUTHBEARER"),
        ("sasl.oauthbearer.jwks.endpoint.url", url.as_str()),
    ])
    .await;
    assert!(error.contains("over 1048576 bytes"), "{error}");
}
