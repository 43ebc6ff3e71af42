//! SASL through the broker, with a raw client: on a SASL_PLAINTEXT listener only
//! ApiVersions and the SASL requests pass before authentication (anything else, or a
//! frame over 512 KiB, closes the connection); SCRAM and PLAIN log in with a
//! `--bootstrap-user` credential; a wrong password, a wrong nonce or an authzid
//! answer `SASL_AUTHENTICATION_FAILED` and close; a SaslHandshake v0 exchange with
//! bare tokens works too; the PLAINTEXT listener beside it stays open. Real clients
//! (and TLS) are in `compat/test_security.py`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiVersionsRequest, MetadataRequest, RequestKind, ResponseKind, SaslAuthenticateRequest,
    SaslHandshakeRequest,
};
use kafka_protocol::protocol::StrBytes;
use spool_sasl::scram::Mechanism;
use spool_sasl::scram_client::ClientExchange;
use spool_testkit::{RawClient, TestBroker};

const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
const ILLEGAL_SASL_STATE: i16 = 34;
const SASL_AUTHENTICATION_FAILED: i16 = 58;

async fn broker() -> (TestBroker, SocketAddr) {
    let broker = TestBroker::start_secured(
        &[
            (
                "listeners",
                "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            ),
            (
                "sasl.enabled.mechanisms",
                "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN",
            ),
            ("connection.failed.authentication.delay.ms", "10"),
        ],
        ("alice", "alice-secret"),
    )
    .await;
    let sasl = broker.listener_addr("SASL_PLAINTEXT");
    (broker, sasl)
}

async fn handshake(client: &mut RawClient, mechanism: &str, version: i16) -> i16 {
    let request =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_string(mechanism.to_owned()));
    let ResponseKind::SaslHandshake(response) = client
        .call(RequestKind::SaslHandshake(request), version)
        .await
    else {
        panic!("not a SaslHandshake response")
    };
    response.error_code
}

async fn authenticate(client: &mut RawClient, token: Vec<u8>) -> (i16, Vec<u8>, i64) {
    let request = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token));
    let ResponseKind::SaslAuthenticate(response) =
        client.call(RequestKind::SaslAuthenticate(request), 2).await
    else {
        panic!("not a SaslAuthenticate response")
    };
    (
        response.error_code,
        response.auth_bytes.to_vec(),
        response.session_lifetime_ms,
    )
}

async fn metadata_works(client: &mut RawClient) -> bool {
    let request = MetadataRequest::default().with_topics(Some(Vec::new()));
    matches!(
        client.call(RequestKind::Metadata(request), 12).await,
        ResponseKind::Metadata(_)
    )
}

/// Logs in with SCRAM-SHA-256 (`spool_sasl`'s client, which the unit tests pin to
/// RFC 7677's vector); `nonce_suffix` alters the nonce sent back. The final answer's
/// error.
async fn scram_login(
    client: &mut RawClient,
    user: &str,
    password: &str,
    nonce_suffix: &str,
) -> i16 {
    assert_eq!(handshake(client, "SCRAM-SHA-256", 1).await, 0);
    let (mut exchange, first) = ClientExchange::start(Mechanism::Sha256, user, password.as_bytes());
    let (error, server_first, _) = authenticate(client, first).await;
    if error != 0 {
        return error;
    }
    let last = String::from_utf8(exchange.respond(&server_first).unwrap()).unwrap();
    let last = last.replace(",p=", &format!("{nonce_suffix},p="));
    authenticate(client, last.into_bytes()).await.0
}

#[tokio::test]
async fn only_sasl_and_api_versions_pass_before_authentication() {
    let (broker, sasl) = broker().await;
    let mut client = RawClient::connect(sasl).await;
    let ResponseKind::ApiVersions(versions) = client
        .call(RequestKind::ApiVersions(ApiVersionsRequest::default()), 3)
        .await
    else {
        panic!("not ApiVersions")
    };
    assert!(
        versions.api_keys.iter().any(|api| api.api_key == 36),
        "SaslAuthenticate advertised"
    );
    let request = MetadataRequest::default().with_topics(Some(Vec::new()));
    client.send(&RequestKind::Metadata(request), 12).await;
    assert!(
        client.is_closed().await,
        "Metadata before authentication closes"
    );

    // A frame over the pre-authentication limit closes, before it is read.
    let mut big = RawClient::connect(sasl).await;
    big.send_bytes(&(600 * 1024_i32).to_be_bytes()).await;
    assert!(
        big.is_closed().await,
        "a 600 KiB frame before authentication"
    );

    // The PLAINTEXT listener next to it needs nothing.
    let mut open = RawClient::connect(broker.addr()).await;
    assert!(metadata_works(&mut open).await);
    assert_eq!(
        handshake(&mut open, "PLAIN", 1).await,
        ILLEGAL_SASL_STATE,
        "no SASL on a PLAINTEXT listener"
    );
}

#[tokio::test]
async fn scram_and_plain_log_in_and_wrong_secrets_are_refused_and_closed() {
    let (_broker, sasl) = broker().await;
    let mut client = RawClient::connect(sasl).await;
    assert_eq!(
        scram_login(&mut client, "alice", "alice-secret", "").await,
        0
    );
    assert!(metadata_works(&mut client).await, "authenticated");

    for (password, suffix) in [("wrong", ""), ("alice-secret", "X")] {
        let mut client = RawClient::connect(sasl).await;
        assert_eq!(
            scram_login(&mut client, "alice", password, suffix).await,
            SASL_AUTHENTICATION_FAILED,
            "{password} {suffix}"
        );
        assert!(client.is_closed().await, "closed after a failed login");
    }
    let mut client = RawClient::connect(sasl).await;
    assert_eq!(
        scram_login(&mut client, "nobody", "x", "").await,
        SASL_AUTHENTICATION_FAILED
    );

    let mut client = RawClient::connect(sasl).await;
    assert_eq!(
        handshake(&mut client, "GSSAPI", 1).await,
        UNSUPPORTED_SASL_MECHANISM
    );
    assert_eq!(handshake(&mut client, "PLAIN", 1).await, 0);
    let (error, _, _) = authenticate(&mut client, b"\0alice\0alice-secret".to_vec()).await;
    assert_eq!(error, 0);
    assert!(metadata_works(&mut client).await);

    for token in [
        &b"mallory\0alice\0alice-secret"[..],
        b"\0alice\0nope",
        b"garbage",
    ] {
        let mut client = RawClient::connect(sasl).await;
        assert_eq!(handshake(&mut client, "PLAIN", 1).await, 0);
        let (error, _, _) = authenticate(&mut client, token.to_vec()).await;
        assert_eq!(error, SASL_AUTHENTICATION_FAILED, "{token:?}");
        assert!(client.is_closed().await);
    }
}

#[tokio::test]
async fn a_v0_handshake_takes_bare_tokens() {
    let (_broker, sasl) = broker().await;
    let mut client = RawClient::connect(sasl).await;
    assert_eq!(handshake(&mut client, "PLAIN", 0).await, 0);
    let token = b"\0alice\0alice-secret";
    let mut frame = i32::try_from(token.len()).unwrap().to_be_bytes().to_vec();
    frame.extend_from_slice(token);
    client.send_bytes(&frame).await;
    let answer = client.read_frame().await.expect("an answer to the token");
    assert!(answer.is_empty(), "PLAIN's last token is empty");
    assert!(metadata_works(&mut client).await);
}

#[tokio::test]
async fn a_session_lifetime_is_announced_when_reauthentication_is_on() {
    let broker = TestBroker::start_secured(
        &[
            ("listeners", "SASL_PLAINTEXT://127.0.0.1:0"),
            ("sasl.enabled.mechanisms", "PLAIN"),
            ("connections.max.reauth.ms", "60000"),
        ],
        ("bob", "bob-secret"),
    )
    .await;
    let mut client = RawClient::connect(broker.addr()).await;
    assert_eq!(handshake(&mut client, "PLAIN", 1).await, 0);
    let (error, _, lifetime) = authenticate(&mut client, b"\0bob\0bob-secret".to_vec()).await;
    assert_eq!((error, lifetime), (0, 60_000));
    // A re-authentication as the same principal is taken (another principal is
    // refused: see the session's unit test).
    assert_eq!(handshake(&mut client, "PLAIN", 1).await, 0);
    let (error, _, _) = authenticate(&mut client, b"\0bob\0bob-secret".to_vec()).await;
    assert_eq!(error, 0, "the same principal again");
}

/// KIP-554 through the raw client: a credential set with AlterUserScramCredentials
/// (the client salts, the broker derives the keys) logs in; bad ones are refused per
/// user; Describe shows mechanisms and iterations; a deletion takes the login away.
#[tokio::test]
async fn scram_credentials_are_set_described_and_deleted_over_kip_554() {
    use kafka_protocol::messages::alter_user_scram_credentials_request::{
        ScramCredentialDeletion, ScramCredentialUpsertion,
    };
    use kafka_protocol::messages::{
        AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest,
    };
    let (broker, sasl) = broker().await;
    let mut admin = RawClient::connect(broker.addr()).await;
    let (salt, salted) = spool_broker::salt_password(1, b"dave-secret", 4096).unwrap();
    let upsert = |name: &str, mechanism: i8, iterations: i32| {
        ScramCredentialUpsertion::default()
            .with_name(StrBytes::from_string(name.to_owned()))
            .with_mechanism(mechanism)
            .with_iterations(iterations)
            .with_salt(Bytes::from(salt.clone()))
            .with_salted_password(Bytes::from(salted.clone()))
    };
    let request = AlterUserScramCredentialsRequest::default().with_upsertions(vec![
        upsert("dave", 1, 4096),
        upsert("erin", 1, 100),
        upsert("frank", 3, 4096),
    ]);
    let ResponseKind::AlterUserScramCredentials(altered) = admin
        .call(RequestKind::AlterUserScramCredentials(request), 0)
        .await
    else {
        panic!("not AlterUserScramCredentials")
    };
    let codes: Vec<(String, i16)> = altered
        .results
        .iter()
        .map(|r| (r.user.to_string(), r.error_code))
        .collect();
    assert_eq!(
        codes,
        vec![
            ("dave".to_owned(), 0),
            ("erin".to_owned(), 93),
            ("frank".to_owned(), UNSUPPORTED_SASL_MECHANISM)
        ]
    );
    let mut client = RawClient::connect(sasl).await;
    assert_eq!(scram_login(&mut client, "dave", "dave-secret", "").await, 0);

    let ResponseKind::DescribeUserScramCredentials(described) = admin
        .call(
            RequestKind::DescribeUserScramCredentials(
                DescribeUserScramCredentialsRequest::default(),
            ),
            0,
        )
        .await
    else {
        panic!("not DescribeUserScramCredentials")
    };
    let users: Vec<(String, Vec<(i8, i32)>)> = described
        .results
        .iter()
        .map(|r| {
            (
                r.user.to_string(),
                r.credential_infos
                    .iter()
                    .map(|c| (c.mechanism, c.iterations))
                    .collect(),
            )
        })
        .collect();
    assert_eq!(
        users,
        vec![
            ("alice".to_owned(), vec![(1, 8192), (2, 8192)]),
            ("dave".to_owned(), vec![(1, 4096)])
        ]
    );

    let delete = AlterUserScramCredentialsRequest::default().with_deletions(vec![
        ScramCredentialDeletion::default()
            .with_name(StrBytes::from_static_str("dave"))
            .with_mechanism(1),
    ]);
    let ResponseKind::AlterUserScramCredentials(deleted) = admin
        .call(RequestKind::AlterUserScramCredentials(delete), 0)
        .await
    else {
        panic!("not AlterUserScramCredentials")
    };
    assert_eq!(deleted.results[0].error_code, 0);
    let mut client = RawClient::connect(sasl).await;
    assert_eq!(
        scram_login(&mut client, "dave", "dave-secret", "").await,
        SASL_AUTHENTICATION_FAILED
    );
}
