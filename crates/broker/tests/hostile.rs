//! Hostile clients that do nothing wrong on the wire but would exhaust a careless
//! broker: more connections than allowed, thousands of connections that stay idle, a
//! client that sends requests without ever reading the answers, a compressed batch
//! that inflates enormously, and frames started before authentication. In each case the broker stays up, bounds what it holds,
//! and serves everyone else.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::time::Duration;

use bytes::BytesMut;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, RequestHeader, RequestKind, ResponseKind,
};
use kafka_protocol::protocol::{Encodable, StrBytes};
use spool_testkit::{BatchBuilder, FetchAt, RawClient, TestBroker, fetch_request, put_varint};

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

/// The tests that measure this process's memory run one at a time.
static MEMORY_MEASURED: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

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
    let _alone = MEMORY_MEASURED.lock().await;
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

/// Raises this process's open-file limit to its hard limit; returns the limit now.
fn raise_open_file_limit() -> usize {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    limit.current = limit.maximum;
    let _ = setrlimit(Resource::Nofile, limit);
    getrlimit(Resource::Nofile)
        .current
        .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX))
}

#[tokio::test(flavor = "multi_thread")]
async fn thousands_of_idle_connections_cost_little_and_others_are_served() {
    let _alone = MEMORY_MEASURED.lock().await;
    // Each connection is two descriptors here, the client's and the broker's.
    let limit = raise_open_file_limit();
    let count = 5_000.min(limit.saturating_sub(512) / 2);
    assert!(
        count >= 2_000,
        "the open-file limit ({limit}) leaves room for only {count} connections"
    );
    let broker = TestBroker::start().await;
    let mut setup = broker.client().await;
    assert_eq!(setup.create_topic("calm", 1).await, 0);
    let batch = BatchBuilder::new().values(10, 100).build();
    assert_eq!(setup.produce("calm", 0, batch).await.0, 0);

    let rss_before = resident_bytes();
    let mut idle = Vec::with_capacity(count);
    for _ in 0..count {
        idle.push(tokio::net::TcpStream::connect(broker.addr()).await.unwrap());
    }
    // Every connection has been accepted once a new one is served behind them.
    assert!(
        served(&broker).await,
        "a new client is served among {count} idle ones"
    );
    let grown = resident_bytes().saturating_sub(rss_before);
    assert!(
        grown < (count as u64) * (32 << 10),
        "{count} idle connections cost {} KiB each",
        (grown / count as u64) >> 10
    );
    let mut probe = [0u8; 1];
    let first_still_open =
        tokio::time::timeout(Duration::from_millis(100), idle[0].peek(&mut probe)).await;
    assert!(
        first_still_open.is_err(),
        "idle connections are kept until the idle timeout"
    );

    drop(idle);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(served(&broker).await, "and after they have all gone");
    let data = setup
        .fetch(11, "calm", &WHOLE_PARTITION, 1, 0, 1 << 20)
        .await;
    assert_eq!(data[0].high_watermark, 10, "the log is as it was");
}

/// A gzip records section that inflates to one record holding `inflated` zero bytes,
/// compressed as it streams so that the test never holds the inflated bytes either.
fn gzip_bomb(inflated: usize) -> Vec<u8> {
    let value_len = i64::try_from(inflated).unwrap();
    let mut record_head = vec![0]; // attributes
    put_varint(&mut record_head, 0); // timestamp delta
    put_varint(&mut record_head, 0); // offset delta
    put_varint(&mut record_head, -1); // no key
    put_varint(&mut record_head, value_len);
    let record_len = i64::try_from(record_head.len()).unwrap() + value_len + 1; // + no headers
    let mut head = Vec::new();
    put_varint(&mut head, record_len);
    head.extend_from_slice(&record_head);

    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(&head).unwrap();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..inflated / zeros.len() {
        encoder.write_all(&zeros).unwrap();
    }
    encoder.write_all(&[0]).unwrap(); // header count 0
    encoder.finish().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_compression_bomb_is_stored_as_sent_without_being_inflated() {
    let _alone = MEMORY_MEASURED.lock().await;
    let inflated = 256 << 20;
    let body = gzip_bomb(inflated);
    assert!(
        body.len() < 2 << 20,
        "the bomb is small: {} bytes",
        body.len()
    );
    let bomb = BatchBuilder::new()
        .attributes(1) // gzip
        .raw_records(1, body)
        .build();
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("bomb", 1).await, 0);

    let rss_before = resident_bytes();
    assert_eq!(client.produce("bomb", 0, bomb.clone()).await, (0, 0));
    let grown = resident_bytes().saturating_sub(rss_before);
    assert!(
        grown < 64 << 20,
        "the broker did not inflate the batch: {} MiB more",
        grown >> 20
    );
    let at_start = [FetchAt {
        partition: 0,
        offset: 0,
        max_bytes: 4 << 20,
    }];
    let data = client.fetch(11, "bomb", &at_start, 1, 0, 4 << 20).await;
    assert_eq!(
        data[0].records.as_deref(),
        Some(&bomb[..]),
        "the batch is stored and served as the producer compressed it"
    );
    assert!(served(&broker).await, "other clients are served");
}

/// Before authentication (CVE-2022-34917): a thousand connections to a SASL listener
/// each start a frame just under the 512 KiB pre-authentication limit and send 8 KiB
/// of it, and two hundred more claim 10 MiB frames. The over-limit ones are closed at
/// once; the others are waited for, holding well under 128 KiB each; a client still
/// logs in among them.
#[tokio::test(flavor = "multi_thread")]
async fn frames_before_authentication_are_bounded_and_others_log_in() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let _alone = MEMORY_MEASURED.lock().await;
    let limit = raise_open_file_limit();
    let count = 1_000.min(limit.saturating_sub(512) / 2);
    let broker = TestBroker::start_secured(
        &[
            (
                "listeners",
                "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            ),
            ("sasl.enabled.mechanisms", "PLAIN"),
        ],
        ("alice", "alice-secret"),
    )
    .await;
    let sasl = broker.listener_addr("SASL_PLAINTEXT");
    let rss_before = resident_bytes();
    let mut pending = Vec::with_capacity(count);
    for _ in 0..count {
        let mut stream = tokio::net::TcpStream::connect(sasl).await.unwrap();
        let mut start = (500_u32 << 10).to_be_bytes().to_vec();
        start.extend_from_slice(&[0x5a; 8 << 10]);
        stream.write_all(&start).await.unwrap();
        pending.push(stream);
    }
    let mut oversized = Vec::with_capacity(200);
    for _ in 0..200 {
        let mut stream = tokio::net::TcpStream::connect(sasl).await.unwrap();
        stream
            .write_all(&(10_u32 << 20).to_be_bytes())
            .await
            .unwrap();
        oversized.push(stream);
    }
    for stream in &mut oversized {
        let mut byte = [0_u8; 1];
        let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut byte)).await;
        assert!(
            matches!(read, Ok(Ok(0) | Err(_))),
            "an oversized frame before authentication is closed"
        );
    }
    let mut client = RawClient::connect(sasl).await;
    assert_eq!(client.login_plain("alice", "alice-secret").await, 0);
    assert!(served(&broker).await);
    let grown = resident_bytes().saturating_sub(rss_before);
    assert!(
        grown < (count as u64) * (128 << 10),
        "{count} half-sent frames cost {} KiB each",
        (grown / count as u64) >> 10
    );
    let mut probe = [0_u8; 1];
    let still_open =
        tokio::time::timeout(Duration::from_millis(100), pending[0].peek(&mut probe)).await;
    assert!(still_open.is_err(), "a frame under the limit is waited for");
}
