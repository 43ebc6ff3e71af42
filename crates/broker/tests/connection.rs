//! Connections: ApiVersions, ordering of pipelined responses, and bad input that must
//! close only the offending connection.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bytes::Buf;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, RequestKind, ResponseKind,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use spool_testkit::{TestBroker, correlation_of};

fn api_versions() -> RequestKind {
    RequestKind::ApiVersions(
        ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("spool-test"))
            .with_client_software_version(StrBytes::from_static_str("1")),
    )
}

#[tokio::test]
async fn api_versions_lists_exactly_the_implemented_apis() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    for version in 0..=4 {
        let ResponseKind::ApiVersions(response) = client.call(api_versions(), version).await else {
            panic!("not an ApiVersions response")
        };
        assert_eq!(response.error_code, 0);
        let keys: Vec<i16> = response.api_keys.iter().map(|k| k.api_key).collect();
        assert!(keys.contains(&(ApiKey::ApiVersions as i16)));
        assert!(keys.contains(&(ApiKey::Metadata as i16)));
        for key in &response.api_keys {
            assert!(key.min_version <= key.max_version);
        }
    }
}

#[tokio::test]
async fn an_unsupported_api_versions_version_gets_a_v0_error_with_the_list() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    // Version 99 with a v2 header: the broker cannot read the body, answers v0.
    let mut request = vec![0, 18, 0, 99, 0, 0, 0, 7, 0, 4];
    request.extend_from_slice(b"test");
    request.push(0); // header tagged fields
    request.extend_from_slice(&[0, 0, 0]); // a body it will not read
    client.send_raw(&request).await;
    let mut frame = client.read_frame().await.expect("a response");
    assert_eq!(correlation_of(&frame), 7);
    frame.advance(4);
    let response = ApiVersionsResponse::decode(&mut frame, 0).unwrap();
    assert_eq!(response.error_code, 35, "UNSUPPORTED_VERSION");
    assert!(!response.api_keys.is_empty());
}

#[tokio::test]
async fn pipelined_requests_are_answered_in_order() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    let mut sent = Vec::new();
    for i in 0..50 {
        let (request, version) = if i % 2 == 0 {
            (api_versions(), 3)
        } else {
            (RequestKind::Metadata(MetadataRequest::default()), 12)
        };
        sent.push(client.send(&request, version).await);
    }
    for expected in sent {
        let frame = client.read_frame().await.expect("a response");
        assert_eq!(correlation_of(&frame), expected);
    }
}

/// Sends `bytes` on a fresh connection, checks that the broker closes it, and that
/// another connection is still served.
async fn closes_only_that_connection(broker: &TestBroker, bytes: &[u8], framed: bool) {
    let mut bad = broker.client().await;
    if framed {
        bad.send_raw(bytes).await;
    } else {
        bad.send_bytes(bytes).await;
    }
    assert!(
        bad.is_closed().await,
        "the broker must close a connection sending {bytes:02x?}"
    );
    let mut good = broker.client().await;
    let ResponseKind::ApiVersions(response) = good.call(api_versions(), 3).await else {
        panic!("not an ApiVersions response")
    };
    assert_eq!(response.error_code, 0);
}

#[tokio::test]
async fn bad_frames_close_only_their_connection() {
    let broker = TestBroker::start().await;
    // A negative size.
    closes_only_that_connection(&broker, &[0xff, 0xff, 0xff, 0xf0, 1, 2, 3], false).await;
    // Over socket.request.max.bytes (100 MiB): refused before anything is allocated.
    closes_only_that_connection(&broker, &[0x7f, 0xff, 0xff, 0xff, 0, 0], false).await;
    // Too short for a header.
    closes_only_that_connection(&broker, &[0, 3], true).await;
    // An unknown API key.
    closes_only_that_connection(&broker, &[0x7f, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff], true).await;
    // Metadata v12 claiming 2^28 topics in a few bytes: the wire guard refuses it.
    let mut huge = vec![0, 3, 0, 12, 0, 0, 0, 9, 0xff, 0xff, 0];
    huge.extend_from_slice(&[0x81, 0x80, 0x80, 0x80, 0x01, 0, 0, 0]);
    closes_only_that_connection(&broker, &huge, true).await;
    // Metadata v0 with a non-flexible count of 2^31 - 1.
    let count = [0, 3, 0, 0, 0, 0, 0, 9, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff];
    closes_only_that_connection(&broker, &count, true).await;
    // A truncated body after a valid header.
    let truncated = [0, 3, 0, 1, 0, 0, 0, 9, 0xff, 0xff, 0, 0, 0, 1, 0, 9];
    closes_only_that_connection(&broker, &truncated, true).await;
}

#[tokio::test]
async fn a_version_outside_the_declared_range_closes_the_connection() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    client
        .send(&RequestKind::Metadata(MetadataRequest::default()), 13)
        .await;
    assert!(client.is_closed().await);
}

#[tokio::test]
async fn a_second_broker_on_a_data_directory_in_use_is_refused() {
    use spool_broker::{Broker, BrokerConfig, BrokerError};

    let first = TestBroker::start().await;
    let config = BrokerConfig {
        listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        data_dir: first.data_dir().to_path_buf(),
        ..BrokerConfig::default()
    };
    let refused = Broker::builder(config.clone()).start().await.unwrap_err();
    assert!(
        matches!(refused, BrokerError::DataDirInUse { .. }),
        "{refused}"
    );
    let message = refused.to_string();
    assert!(
        message.contains(first.data_dir().to_str().unwrap()),
        "{message}"
    );
    // The first broker is unharmed, and once it stops the directory is free.
    assert_eq!(first.client().await.create_topic("still-here", 1).await, 0);
    let data = first.stop().await;
    let second = Broker::builder(config)
        .start()
        .await
        .expect("the lock went with the first broker");
    second.shutdown().await.unwrap();
    drop(data);
}
