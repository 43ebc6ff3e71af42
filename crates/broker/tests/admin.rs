//! The HTTP admin listener: health through its states (starting, ready, lease lost,
//! ready again), `/metrics` counting what clients do, and every REST endpoint,
//! bad input included, answered with JSON. Real clients drive the same endpoints in
//! `compat/test_admin.py`; the console is tested in a browser there too.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::{GroupId, OffsetCommitRequest, RequestKind, ResponseKind};
use kafka_protocol::protocol::StrBytes;
use object_store::memory::InMemory;
use serde_json::Value;
use spool_admin::AdminServer;
use spool_broker::{MetadataStore, MetadataUrl, ObjectStorage};
use spool_metadata::FaultyMetadata;
use spool_testkit::{
    BatchBuilder, FetchAt, HttpResponse, TestBroker, TestRecord, fetch_request, http, http_get,
    produce_request, topic_name,
};

fn json(response: &HttpResponse) -> Value {
    serde_json::from_str(&response.body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", response.body))
}

/// Asserts a JSON error with `status` and Kafka's error name `error`.
fn assert_error(response: &HttpResponse, status: u16, error: &str) {
    assert_eq!(response.status, status, "{}", response.body);
    let body = json(response);
    assert_eq!(body["error"], error, "{body}");
    assert!(
        !body["message"].as_str().unwrap().is_empty(),
        "an error says what went wrong: {body}"
    );
}

/// The value of the series `name{labels}` (labels as written, in order), if any.
fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics.lines().find_map(|line| {
        let (name, value) = line.rsplit_once(' ')?;
        (name == series).then(|| value.parse().unwrap())
    })
}

async fn metrics(admin: SocketAddr) -> String {
    let response = http_get(admin, "/metrics").await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert!(
        response
            .content_type
            .starts_with("application/openmetrics-text")
    );
    assert!(response.body.ends_with("# EOF\n"), "a complete exposition");
    response.body
}

async fn wait_for(what: &str, mut done: impl AsyncFnMut() -> bool) {
    let started = Instant::now();
    while !done().await {
        assert!(started.elapsed() < Duration::from_secs(15), "never: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_starting_broker_is_live_but_not_ready() {
    let server = AdminServer::start(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let admin = server.local_addr();
    let live = http_get(admin, "/health/live").await;
    assert_eq!(
        (live.status, json(&live)["status"].clone()),
        (200, "live".into())
    );
    let ready = http_get(admin, "/health/ready").await;
    assert_eq!(ready.status, 503);
    assert_eq!(json(&ready)["checks"]["started"], "starting");
    assert_error(
        &http_get(admin, "/metrics").await,
        503,
        "BROKER_NOT_AVAILABLE",
    );
    assert_error(
        &http_get(admin, "/api/topics").await,
        503,
        "BROKER_NOT_AVAILABLE",
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_running_broker_is_ready_and_says_what_it_checked() {
    let broker = TestBroker::start().await;
    let admin = broker.admin_addr().unwrap();
    let ready = http_get(admin, "/health/ready").await;
    assert_eq!(ready.status, 200, "{}", ready.body);
    let body = json(&ready);
    assert_eq!(body["status"], "ready");
    assert_eq!(body["checks"]["metadata_store"], "ok");
    assert_error(&http_get(admin, "/no/such/page").await, 404, "NOT_FOUND");
    broker.stop().await;
}

#[tokio::test]
async fn a_broker_that_loses_its_lease_is_not_ready_until_it_renews() {
    let dir = tempfile::tempdir().unwrap();
    let url = MetadataUrl::Sqlite(dir.path().join("catalogue.db"));
    let store: Arc<dyn MetadataStore> = spool_metadata::open(&url).await.unwrap();
    let metadata = Arc::new(FaultyMetadata::new(store));
    let objects = ObjectStorage::new(Arc::new(InMemory::new()), "spool".into());
    let broker = TestBroker::start_shared_on(
        tempfile::tempdir().unwrap(),
        objects,
        metadata.clone(),
        &[("cluster.lease.ms", "600"), ("cluster.heartbeat.ms", "50")],
    )
    .await;
    let admin = broker.admin_addr().unwrap();
    let lease_held = async || sample(&metrics(admin).await, "spool_cluster_lease_held");
    wait_for("ready", async || {
        http_get(admin, "/health/ready").await.status == 200
    })
    .await;
    assert_eq!(lease_held().await, Some(1.0));
    metadata.set_down(true);
    wait_for("not ready", async || {
        let ready = http_get(admin, "/health/ready").await;
        ready.status == 503
            && json(&ready)["checks"]["cluster_lease"]
                .as_str()
                .unwrap()
                .starts_with("lost")
    })
    .await;
    assert_eq!(lease_held().await, Some(0.0));
    metadata.set_down(false);
    wait_for("ready again", async || {
        http_get(admin, "/health/ready").await.status == 200
    })
    .await;
    broker.stop().await;
}

#[tokio::test]
async fn metrics_count_what_clients_do() {
    let broker = TestBroker::start_with(&[("auto.create.topics.enable", "false")]).await;
    let admin = broker.admin_addr().unwrap();
    let created = http(
        admin,
        "POST",
        "/api/topics",
        Some(r#"{"name":"counted","partitions":2}"#),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let mut client = broker.client().await;
    let batch = BatchBuilder::new().values(5, 100).build();
    let batch_len = batch.len();
    for _ in 0..3 {
        client
            .call(produce_request("counted", 1, batch.clone()), 9)
            .await;
    }
    client
        .call(produce_request("missing", 0, batch.clone()), 9)
        .await;
    let at = FetchAt {
        partition: 1,
        offset: 0,
        max_bytes: 1 << 20,
    };
    client
        .call(fetch_request("counted", &[at], 1, 100, 1 << 20), 11)
        .await;
    let text = metrics(admin).await;
    let value =
        |series: &str| sample(&text, series).unwrap_or_else(|| panic!("no {series}:\n{text}"));
    assert_eq!(
        value(r#"spool_requests_total{api="Produce",version="9"}"#),
        4.0
    );
    assert_eq!(
        value(r#"spool_requests_total{api="Fetch",version="11"}"#),
        1.0
    );
    assert_eq!(
        value(r#"spool_request_errors_total{api="Produce",error="UNKNOWN_TOPIC_OR_PARTITION"}"#),
        1.0
    );
    assert_eq!(
        value(r#"spool_topic_records_in_total{topic="counted"}"#),
        15.0
    );
    assert_eq!(
        value(r#"spool_topic_bytes_in_total{topic="counted"}"#),
        (3 * batch_len) as f64
    );
    assert_eq!(
        value(r#"spool_topic_bytes_out_total{topic="counted"}"#),
        (3 * batch_len) as f64
    );
    assert_eq!(
        value(r#"spool_request_duration_seconds_count{api="Produce"}"#),
        4.0
    );
    assert_eq!(
        value(r#"spool_partition_high_watermark{topic="counted",partition="1"}"#),
        15.0
    );
    assert_eq!(
        value(r#"spool_partition_segments{topic="counted",partition="1"}"#),
        1.0
    );
    assert_eq!(value("spool_connections_open"), 1.0);
    assert!(value("spool_storage_fsync_seconds_count") >= 1.0);
    assert_eq!(value("spool_request_bytes_in_flight"), 0.0);
    drop(client);
    wait_for("the connection counted closed", async || {
        sample(&metrics(admin).await, "spool_connections_open") == Some(0.0)
    })
    .await;
    broker.stop().await;
}

#[tokio::test]
async fn metrics_can_be_turned_off() {
    let broker = TestBroker::start_with(&[("metrics.enable", "false")]).await;
    let admin = broker.admin_addr().unwrap();
    assert_error(&http_get(admin, "/metrics").await, 404, "NOT_FOUND");
    assert_eq!(http_get(admin, "/health/ready").await.status, 200);
    broker.stop().await;
}

#[tokio::test]
async fn per_partition_series_stop_beyond_their_limit() {
    let broker = TestBroker::start_with(&[("metrics.partition.series.limit", "3")]).await;
    let admin = broker.admin_addr().unwrap();
    http(
        admin,
        "POST",
        "/api/topics",
        Some(r#"{"name":"wide","partitions":3}"#),
    )
    .await;
    let mut client = broker.client().await;
    let batch = BatchBuilder::new().values(1, 10).build();
    client.call(produce_request("wide", 2, batch), 9).await;
    let text = metrics(admin).await;
    let high_watermark = r#"spool_partition_high_watermark{topic="wide",partition="2"}"#;
    assert_eq!(sample(&text, high_watermark), Some(1.0));
    // A fourth open partition passes the limit.
    http(
        admin,
        "POST",
        "/api/topics",
        Some(r#"{"name":"more","partitions":1}"#),
    )
    .await;
    let text = metrics(admin).await;
    assert!(!text.contains("spool_partition_high_watermark{"), "{text}");
    assert_eq!(
        sample(&text, r#"spool_topic_records_in_total{topic="wide"}"#),
        Some(1.0)
    );
    broker.stop().await;
}

async fn commit(broker: &TestBroker, group: &str, topic: &str, partition: i32, offset: i64) {
    let request = OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_owned())))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![
            OffsetCommitRequestTopic::default()
                .with_name(topic_name(topic))
                .with_partitions(vec![
                    OffsetCommitRequestPartition::default()
                        .with_partition_index(partition)
                        .with_committed_offset(offset),
                ]),
        ]);
    let mut client = broker.client().await;
    let ResponseKind::OffsetCommit(response) =
        client.call(RequestKind::OffsetCommit(request), 8).await
    else {
        panic!("not an OffsetCommit response")
    };
    assert_eq!(response.topics[0].partitions[0].error_code, 0);
}

#[tokio::test]
async fn topics_can_be_created_described_changed_and_deleted() {
    let broker = TestBroker::start_with(&[("num.partitions", "2")]).await;
    let admin = broker.admin_addr().unwrap();
    let created = http(
        admin,
        "POST",
        "/api/topics",
        Some(r#"{"name":"orders","configs":{"retention.ms":"60000"}}"#),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let topic = json(&created);
    assert_eq!(
        topic["partitions"].as_array().unwrap().len(),
        2,
        "num.partitions"
    );
    let retention = |topic: &Value| {
        topic["configs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "retention.ms")
            .cloned()
            .unwrap()
    };
    assert_eq!(retention(&topic)["value"], "60000");
    assert_eq!(retention(&topic)["source"], "topic");

    assert_error(
        &http(admin, "POST", "/api/topics", Some(r#"{"name":"orders"}"#)).await,
        409,
        "TOPIC_ALREADY_EXISTS",
    );
    assert_error(
        &http(
            admin,
            "POST",
            "/api/topics",
            Some(r#"{"name":"bad name!"}"#),
        )
        .await,
        400,
        "INVALID_TOPIC_EXCEPTION",
    );
    assert_error(
        &http(
            admin,
            "POST",
            "/api/topics",
            Some(r#"{"name":"x","partitions":0}"#),
        )
        .await,
        400,
        "INVALID_PARTITIONS",
    );
    assert_error(
        &http(
            admin,
            "POST",
            "/api/topics",
            Some(r#"{"name":"x","configs":{"retention.ms":"soon"}}"#),
        )
        .await,
        400,
        "INVALID_CONFIG",
    );
    assert_error(
        &http(admin, "POST", "/api/topics", Some("{not json")).await,
        400,
        "INVALID_REQUEST",
    );

    let listed = json(&http_get(admin, "/api/topics").await);
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "orders")
    );
    let partitions = json(&http_get(admin, "/api/topics/orders/partitions").await);
    assert_eq!(partitions[1]["high_watermark"], 0);
    assert_eq!(partitions[1]["leader"], 1);

    let changed = http(
        admin,
        "PATCH",
        "/api/topics/orders/configs",
        Some(r#"{"retention.ms":null,"cleanup.policy":"compact"}"#),
    )
    .await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    let configs = json(&http_get(admin, "/api/topics/orders/configs").await);
    let config = |name: &str| {
        configs
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(config("cleanup.policy")["value"], "compact");
    assert_eq!(config("retention.ms")["source"], "default");
    assert_error(
        &http(
            admin,
            "PATCH",
            "/api/topics/orders/configs",
            Some(r#"{"segment.bytes":"tiny"}"#),
        )
        .await,
        400,
        "INVALID_CONFIG",
    );
    assert_error(
        &http(admin, "PATCH", "/api/topics/ghost/configs", Some("{}")).await,
        404,
        "UNKNOWN_TOPIC_OR_PARTITION",
    );

    let deleted = http(admin, "DELETE", "/api/topics/orders", None).await;
    assert_eq!(deleted.status, 204, "{}", deleted.body);
    assert_error(
        &http_get(admin, "/api/topics/orders").await,
        404,
        "UNKNOWN_TOPIC_OR_PARTITION",
    );
    assert_error(
        &http(admin, "DELETE", "/api/topics/orders", None).await,
        404,
        "UNKNOWN_TOPIC_OR_PARTITION",
    );
    let cluster = json(&http_get(admin, "/api/cluster").await);
    assert_eq!(cluster["mode"], "embedded");
    assert_eq!(cluster["brokers"][0]["port"], broker.addr().port());
    assert_eq!(
        cluster["controller"], cluster["node_id"],
        "the one broker is its own controller, as Metadata says: {cluster}"
    );
    broker.stop().await;
}

#[tokio::test]
async fn messages_are_browsed_by_offset_time_or_newest() {
    let broker = TestBroker::start().await;
    let admin = broker.admin_addr().unwrap();
    http(
        admin,
        "POST",
        "/api/topics",
        Some(r#"{"name":"events","partitions":1}"#),
    )
    .await;
    let mut client = broker.client().await;
    for (base, time) in [(0, 1_000), (3, 2_000)] {
        let mut builder = BatchBuilder::new().timestamp(time);
        for i in 0..3 {
            let mut record = TestRecord::value(format!("value-{}", base + i).into_bytes());
            record.key = Some(format!("key-{}", base + i).into_bytes());
            record.headers = vec![("trace".to_owned(), Some(vec![0xff, 0x00]))];
            builder = builder.record(record);
        }
        client
            .call(produce_request("events", 0, builder.build()), 9)
            .await;
    }
    let page = json(
        &http_get(
            admin,
            "/api/topics/events/partitions/0/messages?offset=1&limit=2",
        )
        .await,
    );
    let messages = page["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["offset"], 1);
    assert_eq!(messages[0]["key"]["data"], "key-1");
    assert_eq!(
        messages[0]["value"],
        serde_json::json!({"encoding": "utf8", "data": "value-1"})
    );
    assert_eq!(messages[0]["headers"][0]["key"], "trace");
    assert_eq!(
        messages[0]["headers"][0]["value"],
        serde_json::json!({"encoding": "base64", "data": "/wA="})
    );
    assert_eq!(page["next_offset"], 3);
    assert_eq!(page["high_watermark"], 6);

    let by_time = json(
        &http_get(
            admin,
            "/api/topics/events/partitions/0/messages?timestamp=2000&limit=1",
        )
        .await,
    );
    assert_eq!(by_time["messages"][0]["offset"], 3);
    let newest = json(&http_get(admin, "/api/topics/events/partitions/0/messages?limit=2").await);
    let offsets: Vec<i64> = newest["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["offset"].as_i64().unwrap())
        .collect();
    assert_eq!(offsets, vec![4, 5]);
    let base64 = json(
        &http_get(
            admin,
            "/api/topics/events/partitions/0/messages?offset=0&limit=1&encoding=base64",
        )
        .await,
    );
    assert_eq!(
        base64["messages"][0]["key"],
        serde_json::json!({"encoding": "base64", "data": "a2V5LTA="})
    );
    let at_end = json(&http_get(admin, "/api/topics/events/partitions/0/messages?offset=6").await);
    assert_eq!(at_end["messages"].as_array().unwrap().len(), 0);

    let path = |query: &str| format!("/api/topics/events/partitions/0/messages?{query}");
    assert_error(
        &http_get(admin, &path("offset=7")).await,
        400,
        "OFFSET_OUT_OF_RANGE",
    );
    assert_error(
        &http_get(admin, &path("offset=-1")).await,
        400,
        "OFFSET_OUT_OF_RANGE",
    );
    assert_error(
        &http_get(admin, &path("offset=abc")).await,
        400,
        "INVALID_REQUEST",
    );
    assert_error(
        &http_get(admin, &path("limit=0")).await,
        400,
        "INVALID_REQUEST",
    );
    assert_error(
        &http_get(admin, &path("limit=1000000")).await,
        400,
        "INVALID_REQUEST",
    );
    assert_error(
        &http_get(admin, &path("offset=1&timestamp=5")).await,
        400,
        "INVALID_REQUEST",
    );
    assert_error(
        &http_get(admin, &path("encoding=rot13")).await,
        400,
        "INVALID_REQUEST",
    );
    assert_error(
        &http_get(admin, "/api/topics/events/partitions/9/messages").await,
        404,
        "UNKNOWN_TOPIC_OR_PARTITION",
    );
    assert_error(
        &http_get(admin, "/api/topics/events/partitions/x/messages").await,
        400,
        "INVALID_REQUEST",
    );
    assert_error(
        &http_get(admin, "/api/topics/ghost/partitions/0/messages").await,
        404,
        "UNKNOWN_TOPIC_OR_PARTITION",
    );
    broker.stop().await;
}

#[tokio::test]
async fn groups_show_their_committed_offsets_and_lag() {
    let broker = TestBroker::start().await;
    let admin = broker.admin_addr().unwrap();
    http(
        admin,
        "POST",
        "/api/topics",
        Some(r#"{"name":"jobs","partitions":1}"#),
    )
    .await;
    let mut client = broker.client().await;
    client
        .call(
            produce_request("jobs", 0, BatchBuilder::new().values(10, 10).build()),
            9,
        )
        .await;
    commit(&broker, "workers", "jobs", 0, 4).await;
    let groups = json(&http_get(admin, "/api/groups").await);
    let workers = groups
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["group"] == "workers")
        .cloned()
        .unwrap();
    assert_eq!(workers["lag"], 6);
    assert_eq!(workers["state"], "Empty");
    let detail = json(&http_get(admin, "/api/groups/workers").await);
    assert_eq!(detail["offsets"][0]["committed"], 4);
    assert_eq!(detail["offsets"][0]["lag"], 6);
    assert_eq!(detail["offsets"][0]["high_watermark"], 10);
    assert_error(
        &http_get(admin, "/api/groups/nobody").await,
        404,
        "GROUP_ID_NOT_FOUND",
    );
    let text = metrics(admin).await;
    assert_eq!(
        sample(
            &text,
            r#"spool_group_lag{group="workers",topic="jobs",partition="0"}"#
        ),
        Some(6.0)
    );
    assert_eq!(
        sample(&text, r#"spool_group_state{group="workers",state="Empty"}"#),
        Some(1.0)
    );
    broker.stop().await;
}
