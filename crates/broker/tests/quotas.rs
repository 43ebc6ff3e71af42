//! Client quotas through the broker, with a raw client: Describe/AlterClientQuotas
//! (KIP-546) with named and default entities, filters and refusals; and a producer
//! over its `producer_byte_rate` throttled to it, told so in `throttle_time_ms`, its
//! connection muted meanwhile (KIP-219); a fetch over its `consumer_byte_rate` answered
//! empty; a client held to its `request_percentage`. Real clients are in
//! `compat/test_quotas.py`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::float_cmp,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use std::time::{Duration, Instant};

use kafka_protocol::messages::{RequestKind, ResponseKind};
use spool_testkit::{BatchBuilder, TestBroker, produce_request};

const INVALID_REQUEST: i16 = 42;
const EXACT: i8 = 0;
const DEFAULT: i8 = 1;
const SPECIFIED: i8 = 2;

fn part(kind: &str, name: Option<&str>) -> (String, Option<String>) {
    (kind.to_owned(), name.map(str::to_owned))
}

#[tokio::test]
async fn quotas_are_set_described_by_filter_and_removed() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    let alice = [("user", Some("alice"))];
    let alice_app = [("user", Some("alice")), ("client-id", Some("app"))];
    let default_client = [("client-id", None)];
    assert_eq!(
        client
            .alter_quotas(&alice, &[("producer_byte_rate", Some(1024.0))])
            .await,
        0
    );
    assert_eq!(
        client
            .alter_quotas(
                &alice_app,
                &[
                    ("consumer_byte_rate", Some(2048.0)),
                    ("request_percentage", Some(50.0))
                ]
            )
            .await,
        0
    );
    assert_eq!(
        client
            .alter_quotas(&default_client, &[("producer_byte_rate", Some(512.0))])
            .await,
        0
    );
    // Refused: a key Spool does not enforce, a rate of 0, an unknown entity type.
    assert_eq!(
        client
            .alter_quotas(&alice, &[("controller_mutation_rate", Some(1.0))])
            .await,
        INVALID_REQUEST
    );
    assert_eq!(
        client
            .alter_quotas(&alice, &[("producer_byte_rate", Some(0.0))])
            .await,
        INVALID_REQUEST
    );
    assert_eq!(
        client
            .alter_quotas(
                &[("ip", Some("10.0.0.1"))],
                &[("producer_byte_rate", Some(1.0))]
            )
            .await,
        INVALID_REQUEST
    );

    // Every entity with a user named alice, strict or not.
    let (code, entries) = client
        .describe_quotas(&[("user", EXACT, Some("alice"))], false)
        .await;
    assert_eq!(code, 0);
    assert_eq!(
        entries,
        vec![
            (
                vec![part("user", Some("alice"))],
                vec![("producer_byte_rate".to_owned(), 1024.0)]
            ),
            (
                vec![part("user", Some("alice")), part("client-id", Some("app"))],
                vec![
                    ("consumer_byte_rate".to_owned(), 2048.0),
                    ("request_percentage".to_owned(), 50.0)
                ]
            ),
        ]
    );
    let (_, strict) = client
        .describe_quotas(&[("user", EXACT, Some("alice"))], true)
        .await;
    assert_eq!(strict.len(), 1);
    let (_, defaults) = client
        .describe_quotas(&[("client-id", DEFAULT, None)], false)
        .await;
    assert_eq!(
        defaults,
        vec![(
            vec![part("client-id", None)],
            vec![("producer_byte_rate".to_owned(), 512.0)]
        )]
    );
    let (_, any_client) = client
        .describe_quotas(&[("client-id", SPECIFIED, None)], false)
        .await;
    assert_eq!(any_client.len(), 2);
    let (_, everything) = client.describe_quotas(&[], false).await;
    assert_eq!(everything.len(), 3);

    assert_eq!(
        client
            .alter_quotas(&alice, &[("producer_byte_rate", None)])
            .await,
        0
    );
    let (_, left) = client
        .describe_quotas(&[("user", SPECIFIED, None)], false)
        .await;
    assert_eq!(left.len(), 1, "only alice's client app is left");
    let (code, _) = client
        .describe_quotas(&[("group", EXACT, Some("g"))], false)
        .await;
    assert_eq!(code, INVALID_REQUEST);
}

#[tokio::test]
async fn a_producer_over_its_byte_rate_is_throttled_to_it() {
    const RATE: f64 = 200_000.0;
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("t", 1).await, 0);
    // The raw client's id is "spool-test"; ANONYMOUS has no quota of its own.
    assert_eq!(
        client
            .alter_quotas(
                &[("client-id", Some("spool-test"))],
                &[("producer_byte_rate", Some(RATE))]
            )
            .await,
        0
    );
    let batch = BatchBuilder::new().values(20, 1000).build();
    let size = batch.len() as f64;
    // A second's worth passes at once (the burst); what follows is paced.
    let burst = (RATE / size).ceil() as usize;
    let mut throttled = 0;
    let mut paced_bytes = 0.0;
    let mut paced_from = None;
    for sent in 0..(burst + 40) {
        let request = produce_request("t", 0, batch.clone());
        let ResponseKind::Produce(response) = client.call(request, 9).await else {
            panic!("not a Produce response")
        };
        assert_eq!(response.responses[0].partition_responses[0].error_code, 0);
        if response.throttle_time_ms > 0 {
            throttled += 1;
        }
        if sent + 1 == burst {
            paced_from = Some(Instant::now());
        } else if sent + 1 > burst {
            paced_bytes += size;
        }
    }
    let elapsed = paced_from.unwrap().elapsed();
    let measured = paced_bytes / elapsed.as_secs_f64();
    assert!(
        throttled >= 30,
        "throttle_time_ms was reported {throttled} times"
    );
    assert!(
        (measured - RATE).abs() < RATE * 0.2,
        "measured {measured:.0} B/s against a quota of {RATE} B/s over {elapsed:?}"
    );

    // Muted, not refused: a request sent right after a throttled answer waits.
    let started = Instant::now();
    let ResponseKind::Produce(response) =
        client.call(produce_request("t", 0, batch.clone()), 9).await
    else {
        panic!("not a Produce response")
    };
    let throttle = Duration::from_millis(u64::try_from(response.throttle_time_ms).unwrap());
    let ResponseKind::Metadata(_) = client
        .call(
            RequestKind::Metadata(kafka_protocol::messages::MetadataRequest::default()),
            12,
        )
        .await
    else {
        panic!("not a Metadata response")
    };
    assert!(started.elapsed() >= throttle, "the connection was muted");
}

/// As Kafka: a fetch from a consumer already over its `consumer_byte_rate` (here a
/// second connection with the same client id, while the first is muted) is answered
/// at once, empty, with the time it is throttled; once the debt is paid, records come
/// again.
#[tokio::test]
async fn a_fetch_over_the_consumer_byte_rate_gets_an_empty_answer() {
    const RATE: f64 = 20_000.0;
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("t", 1).await, 0);
    let batch = BatchBuilder::new().values(50, 1000).build();
    for _ in 0..2 {
        let ResponseKind::Produce(_) = client.call(produce_request("t", 0, batch.clone()), 9).await
        else {
            panic!("not a Produce response")
        };
    }
    assert_eq!(
        client
            .alter_quotas(
                &[("client-id", Some("spool-test"))],
                &[("consumer_byte_rate", Some(RATE))]
            )
            .await,
        0
    );
    let fetch = |max_bytes: i32| {
        spool_testkit::fetch_request(
            "t",
            &[spool_testkit::FetchAt {
                partition: 0,
                offset: 0,
                max_bytes,
            }],
            1,
            100,
            max_bytes,
        )
    };
    // About 5 seconds' worth at once: answered with its records, and throttled.
    let ResponseKind::Fetch(first) = client.call(fetch(200_000), 12).await else {
        panic!("not a Fetch response")
    };
    let records = first.responses[0].partitions[0]
        .records
        .as_ref()
        .map_or(0, |r| r.len());
    assert!(records as f64 > 3.0 * RATE, "{records} bytes");
    assert!(first.throttle_time_ms > 2000, "{}", first.throttle_time_ms);

    // Another connection of the same client while it owes: nothing read, at once.
    let mut other = broker.client().await;
    let started = Instant::now();
    let ResponseKind::Fetch(second) = other.call(fetch(200_000), 12).await else {
        panic!("not a Fetch response")
    };
    assert!(started.elapsed() < Duration::from_secs(1));
    assert!(second.responses.is_empty(), "an empty answer");
    assert!(
        second.throttle_time_ms > 1000,
        "{}",
        second.throttle_time_ms
    );

    // Once the debt is paid, records again.
    tokio::time::sleep(Duration::from_millis(
        u64::try_from(second.throttle_time_ms).unwrap() + 100,
    ))
    .await;
    let mut third_client = broker.client().await;
    let ResponseKind::Fetch(third) = third_client.call(fetch(10_000), 12).await else {
        panic!("not a Fetch response")
    };
    let records = third.responses[0].partitions[0]
        .records
        .as_ref()
        .map_or(0, |r| r.len());
    assert!(records > 0, "records after the throttle");
}

/// The handler time the broker has spent on Metadata requests, from `/metrics`.
async fn metadata_seconds(broker: &TestBroker) -> f64 {
    let body = spool_testkit::http_get(broker.admin_addr().unwrap(), "/metrics")
        .await
        .body;
    body.lines()
        .find_map(|line| {
            line.strip_prefix(r#"spool_request_duration_seconds_sum{api="Metadata"} "#)
        })
        .map_or(0.0, |value| value.parse().unwrap())
}

/// `request_percentage`: a client sending Metadata requests for hundreds of topics
/// back to back is held to its share of one core's handler time, measured by the
/// broker's own latency histogram after the first second's burst, within 20%, and
/// told so in `throttle_time_ms`.
#[tokio::test(flavor = "multi_thread")]
async fn a_client_over_its_request_percentage_is_held_to_it() {
    const PERCENT: f64 = 5.0;
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    for i in 0..300 {
        assert_eq!(client.create_topic(&format!("share-{i:03}"), 1).await, 0);
    }
    assert_eq!(
        client
            .alter_quotas(
                &[("client-id", Some("spool-test"))],
                &[("request_percentage", Some(PERCENT))]
            )
            .await,
        0
    );
    let all_topics = || {
        RequestKind::Metadata(
            kafka_protocol::messages::MetadataRequest::default().with_topics(None),
        )
    };
    // Spend the burst: until the first throttled answer.
    let mut throttled = 0;
    loop {
        let ResponseKind::Metadata(response) = client.call(all_topics(), 12).await else {
            panic!("not a Metadata response")
        };
        if response.throttle_time_ms > 0 {
            throttled += 1;
            break;
        }
    }
    let busy_before = metadata_seconds(&broker).await;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(5) {
        let ResponseKind::Metadata(response) = client.call(all_topics(), 12).await else {
            panic!("not a Metadata response")
        };
        if response.throttle_time_ms > 0 {
            throttled += 1;
        }
    }
    let busy = metadata_seconds(&broker).await - busy_before;
    let share = busy / started.elapsed().as_secs_f64() * 100.0;
    assert!(
        throttled > 5,
        "throttle_time_ms was reported {throttled} times"
    );
    assert!(
        (share - PERCENT).abs() < PERCENT * 0.2,
        "{share:.2}% of a core against a quota of {PERCENT}% ({busy:.3} s busy)"
    );
}
