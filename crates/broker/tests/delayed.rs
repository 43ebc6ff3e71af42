//! Delayed delivery through the broker: on a topic with `delivery.delay.enable`,
//! records due later are held (consumers do not see them) and appended to the same
//! partition when due, once, with `spool.delayed-from` and `spool.delayed-offset`;
//! bad due times are refused with `INVALID_RECORD`; pending records survive a
//! restart. Real clients drive the same in `compat/test_delayed.py`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use kafka_protocol::messages::ResponseKind;
use serde_json::Value;
use spool_testkit::{BatchBuilder, TestBroker, TestRecord, http, http_get, produce_request};

const INVALID_RECORD: i16 = 87;

fn record(value: &str, header: Option<(&str, String)>) -> TestRecord {
    let mut record = TestRecord::value(value.as_bytes().to_vec());
    record.key = Some(format!("k-{value}").into_bytes());
    if let Some((name, value)) = header {
        record
            .headers
            .push((name.to_owned(), Some(value.into_bytes())));
    }
    record
}

fn now_ms() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// The records a consumer sees (through the admin API, which skips what consumers
/// skip): (offset, value, headers).
async fn visible(admin: SocketAddr, topic: &str) -> Vec<(i64, String, Value)> {
    let page = http_get(
        admin,
        &format!("/api/topics/{topic}/partitions/0/messages?offset=0&limit=100"),
    )
    .await;
    assert_eq!(page.status, 200, "{}", page.body);
    let page: Value = serde_json::from_str(&page.body).unwrap();
    page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["offset"].as_i64().unwrap(),
                m["value"]["data"].as_str().unwrap().to_owned(),
                m["headers"].clone(),
            )
        })
        .collect()
}

async fn create_delayed_topic(admin: SocketAddr, topic: &str) {
    let body = format!(
        r#"{{"name":"{topic}","partitions":1,"configs":{{"delivery.delay.enable":"true","delivery.delay.max.ms":"60000"}}}}"#
    );
    let created = http(admin, "POST", "/api/topics", Some(&body)).await;
    assert_eq!(created.status, 201, "{}", created.body);
}

async fn produce(broker: &TestBroker, topic: &str, batch: Vec<u8>) -> i16 {
    let mut client = broker.client().await;
    let ResponseKind::Produce(response) = client.call(produce_request(topic, 0, batch), 9).await
    else {
        panic!("not a Produce response")
    };
    let partition = &response.responses[0].partition_responses[0];
    if partition.error_code != 0 {
        eprintln!("produce refused: {:?}", partition.error_message);
    }
    partition.error_code
}

async fn until(what: &str, limit: Duration, mut done: impl AsyncFnMut() -> bool) {
    let started = Instant::now();
    while !done().await {
        assert!(started.elapsed() < limit, "never: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_held_record_is_delivered_once_when_due_and_not_before() {
    let broker = TestBroker::start().await;
    let admin = broker.admin_addr().unwrap();
    create_delayed_topic(admin, "later").await;
    let due = now_ms() + 5_000;
    let batch = BatchBuilder::new()
        .timestamp(now_ms())
        .record(record("now", None))
        .record(record("held", Some(("spool.deliver-at", due.to_string()))))
        .record(record("past", Some(("spool.delay-ms", "0".to_owned()))))
        .build();
    assert_eq!(produce(&broker, "later", batch).await, 0);
    let seen = visible(admin, "later").await;
    let values: Vec<&str> = seen.iter().map(|(_, v, _)| v.as_str()).collect();
    assert_eq!(
        values,
        vec!["now", "past"],
        "the held record is not seen early"
    );
    // Visible as pending: the REST API (from the store) and /metrics (from the rounds).
    until("the hold is noted", Duration::from_secs(5), async || {
        let topic: Value =
            serde_json::from_str(&http_get(admin, "/api/topics/later").await.body).unwrap();
        topic["partitions"][0]["delayed"] == serde_json::json!({"pending": 1, "next_due_ms": due})
    })
    .await;
    // The rounds count the pending holds at most once a second (`COUNT_EVERY`).
    until(
        "the hold is counted in /metrics",
        Duration::from_secs(5),
        async || {
            let metrics = http_get(admin, "/metrics").await.body;
            metrics.contains(r#"spool_partition_delayed_records{topic="later",partition="0"} 1"#)
        },
    )
    .await;

    until(
        "the held record is delivered",
        Duration::from_secs(10),
        async || visible(admin, "later").await.len() == 3,
    )
    .await;
    assert!(now_ms() >= due, "delivered before its time");
    let seen = visible(admin, "later").await;
    let (offset, value, headers) = &seen[2];
    assert_eq!(value, "held");
    assert!(*offset > 3, "appended after its hold: {offset}");
    let header = |name: &str| {
        headers
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["key"] == name)
            .map(|h| h["value"]["data"].as_str().unwrap().to_owned())
    };
    assert_eq!(header("spool.deliver-at"), Some(due.to_string()));
    assert!(header("spool.delayed-from").is_some());
    assert_eq!(
        header("spool.delayed-offset"),
        Some("3".to_owned()),
        "{headers}"
    );
    // Once: later rounds deliver nothing more.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(visible(admin, "later").await.len(), 3);
    let topic: Value =
        serde_json::from_str(&http_get(admin, "/api/topics/later").await.body).unwrap();
    assert_eq!(topic["partitions"][0]["delayed"]["pending"], 0);
    broker.stop().await;
}

#[tokio::test]
async fn bad_due_times_are_refused_and_other_topics_ignore_the_headers() {
    let broker = TestBroker::start().await;
    let admin = broker.admin_addr().unwrap();
    create_delayed_topic(admin, "later").await;
    for (header, value) in [
        ("spool.delay-ms", "soon".to_owned()),
        ("spool.deliver-at", (now_ms() + 3_600_000).to_string()),
    ] {
        let batch = BatchBuilder::new()
            .timestamp(now_ms())
            .record(record("x", Some((header, value))))
            .build();
        assert_eq!(produce(&broker, "later", batch).await, INVALID_RECORD);
    }
    assert!(visible(admin, "later").await.is_empty(), "nothing written");
    // Retention shorter than the delay would remove the hold before it is due.
    let short = http(
        admin,
        "POST",
        "/api/topics",
        Some(
            r#"{"name":"short","configs":{"delivery.delay.enable":"true","retention.ms":"20000"}}"#,
        ),
    )
    .await;
    assert_eq!(short.status, 201, "{}", short.body);
    let beyond_retention = BatchBuilder::new()
        .timestamp(now_ms())
        .record(record("x", Some(("spool.delay-ms", "30000".to_owned()))))
        .build();
    assert_eq!(
        produce(&broker, "short", beyond_retention).await,
        INVALID_RECORD
    );
    let plain = http(admin, "POST", "/api/topics", Some(r#"{"name":"plain"}"#)).await;
    assert_eq!(plain.status, 201);
    let batch = BatchBuilder::new()
        .timestamp(now_ms())
        .record(record("x", Some(("spool.delay-ms", "60000".to_owned()))))
        .build();
    assert_eq!(produce(&broker, "plain", batch).await, 0);
    assert_eq!(
        visible(admin, "plain").await.len(),
        1,
        "held only where enabled"
    );
    broker.stop().await;
}

#[tokio::test]
async fn pending_records_survive_a_restart_and_are_delivered_once() {
    let broker = TestBroker::start().await;
    let admin = broker.admin_addr().unwrap();
    create_delayed_topic(admin, "later").await;
    let due = now_ms() + 1_000;
    let mut builder = BatchBuilder::new().timestamp(now_ms()).producer(5, 0, 0);
    for i in 0..3 {
        builder = builder.record(record(
            &format!("held-{i}"),
            Some(("spool.deliver-at", (due + i).to_string())),
        ));
    }
    assert_eq!(produce(&broker, "later", builder.build()).await, 0);
    let data = broker.stop().await;
    let broker = TestBroker::start_in(data).await;
    let admin = broker.admin_addr().unwrap();
    assert!(visible(admin, "later").await.len() < 3 || now_ms() >= due);
    until(
        "delivered after the restart",
        Duration::from_secs(10),
        async || visible(admin, "later").await.len() == 3,
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let values: Vec<String> = visible(admin, "later")
        .await
        .into_iter()
        .map(|(_, v, _)| v)
        .collect();
    assert_eq!(
        values,
        vec!["held-0", "held-1", "held-2"],
        "each once, in due order"
    );
    broker.stop().await;
}

#[tokio::test]
async fn a_delivery_cut_short_before_its_rows_went_is_not_made_twice() {
    let broker = TestBroker::start().await;
    let admin = broker.admin_addr().unwrap();
    create_delayed_topic(admin, "later").await;
    let due = now_ms() + 300;
    let mut builder = BatchBuilder::new().timestamp(now_ms());
    for i in 0..3 {
        builder = builder.record(record(
            &format!("held-{i}"),
            Some(("spool.deliver-at", due.to_string())),
        ));
    }
    assert_eq!(produce(&broker, "later", builder.build()).await, 0);
    until("delivered", Duration::from_secs(10), async || {
        visible(admin, "later").await.len() == 3
    })
    .await;
    let topic: Value =
        serde_json::from_str(&http_get(admin, "/api/topics/later").await.body).unwrap();
    let topic_id: uuid::Uuid = topic["id"].as_str().unwrap().parse().unwrap();
    until("the rows went", Duration::from_secs(5), async || {
        let topic: Value =
            serde_json::from_str(&http_get(admin, "/api/topics/later").await.body).unwrap();
        topic["partitions"][0]["delayed"]["pending"] == 0
    })
    .await;
    let data = broker.stop().await;

    // As if the broker had died after the delivery was durable and before its rows
    // were deleted: the holds (offsets 0-2) are pending again, with the intent the
    // delivery set (the log ended at 3).
    let url = spool_metadata::MetadataUrl::in_data_dir(data.path());
    let store = spool_metadata::open(&url).await.unwrap();
    let key = spool_metadata::PartitionKey {
        topic_id,
        partition: 0,
    };
    store
        .note_holds(key, &[(0, due), (1, due), (2, due)], 3)
        .await
        .unwrap();
    store.begin_delivery(key, &[0, 1, 2], 3).await.unwrap();
    drop(store);

    let broker = TestBroker::start_in(data).await;
    let admin = broker.admin_addr().unwrap();
    until(
        "the rows are found delivered",
        Duration::from_secs(10),
        async || {
            let topic: Value =
                serde_json::from_str(&http_get(admin, "/api/topics/later").await.body).unwrap();
            topic["partitions"][0]["delayed"]["pending"] == 0
        },
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        visible(admin, "later").await.len(),
        3,
        "the delivery found in the log is not made again"
    );
    broker.stop().await;
}
