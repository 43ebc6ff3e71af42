//! Hostile clients that do nothing wrong on the wire but would exhaust a careless
//! broker: more connections than allowed, connections that stay idle, and a client
//! that sends requests without ever reading the answers. In each case the broker
//! stays up, bounds what it holds, and serves everyone else.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use bytes::BytesMut;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, RequestHeader, RequestKind, ResponseKind,
};
use kafka_protocol::protocol::{Encodable, StrBytes};
use spool_testkit::{BatchBuilder, FetchAt, RawClient, TestBroker, fetch_request};

/// Partition 0 from the start, up to 1 MiB.
const WHOLE_PARTITION: [FetchAt; 1] = [FetchAt {
    partition: 0,
    offset: 0,
    max_bytes: 1 << 20,
}];

/// One Fetch v11 request for 1 MiB of partition 0 of `flood`, framed.
fn encoded_fetch() -> Vec<u8> {
    let RequestKind::Fetch(request) = fetch_request("flood", &WHOLE_PARTITION, 1, 0, 1 << 20)
    else {
        unreachable!()
    };
    let mut body = BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(ApiKey::Fetch as i16)
        .with_request_api_version(11)
        .with_correlation_id(1)
        .with_client_id(Some(StrBytes::from_static_str("flood")))
        .encode(&mut body, ApiKey::Fetch.request_header_version(11))
        .unwrap();
    request.encode(&mut body, 11).unwrap();
    let mut frame = u32::try_from(body.len()).unwrap().to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    frame
}

/// This process's resident memory (the broker runs in it).
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

async fn served(broker: &TestBroker) -> bool {
    let mut client = broker.client().await;
    let answer = tokio::time::timeout(
        Duration::from_secs(2),
        client.call(RequestKind::ApiVersions(ApiVersionsRequest::default()), 3),
    )
    .await;
    matches!(answer, Ok(ResponseKind::ApiVersions(r)) if r.error_code == 0)
}

#[tokio::test(flavor = "multi_thread")]
async fn connections_beyond_the_limit_are_refused_and_idle_ones_closed() {
    let broker = TestBroker::start_with(&[
        ("max.connections", "20"),
        ("connections.max.idle.ms", "1000"),
    ])
    .await;
    let mut idle = Vec::new();
    for _ in 0..20 {
        idle.push(RawClient::connect(broker.addr()).await);
    }
    // Let the broker accept all twenty before knocking again.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut refused = RawClient::connect(broker.addr()).await;
    assert!(refused.is_closed().await, "the 21st connection is refused");

    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        idle[0].is_closed().await,
        "an idle connection is closed after connections.max.idle.ms"
    );
    assert!(served(&broker).await, "the freed places serve new clients");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_never_reads_is_held_back_and_others_are_served() {
    let broker = TestBroker::start().await;
    let mut setup = broker.client().await;
    assert_eq!(setup.create_topic("flood", 1).await, 0);
    for _ in 0..16 {
        let batch = BatchBuilder::new().values(64, 1024).build();
        assert_eq!(setup.produce("flood", 0, batch).await.0, 0);
    }
    // Fetch requests for 1 MiB each, written 1 MiB of requests at a time and never
    // read: 128 MiB of them would ask for terabytes of answers.
    let frame = encoded_fetch();
    let chunk: Vec<u8> = frame.repeat((1 << 20) / frame.len());
    let mut flooder = broker.client().await;
    let rss_before = resident_bytes();
    let mut chunks = 0u32;
    let flooding = tokio::time::timeout(Duration::from_secs(5), async {
        for _ in 0..128 {
            flooder.send_bytes(&chunk).await;
            chunks += 1;
        }
    })
    .await;
    assert!(
        flooding.is_err(),
        "the broker stops reading a connection whose answers pile up (all {chunks} MiB were taken)"
    );
    let grown = resident_bytes().saturating_sub(rss_before);
    assert!(
        grown < 96 << 20,
        "memory stays bounded: {} MiB more after {chunks} MiB of requests",
        grown >> 20
    );
    assert!(served(&broker).await, "other clients are served meanwhile");
    drop(flooder);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(served(&broker).await, "and after the flooder is gone");
    let data = setup
        .fetch(11, "flood", &WHOLE_PARTITION, 1, 0, 1 << 20)
        .await;
    assert_eq!(data[0].high_watermark, 16 * 64, "the log is as it was");
}
