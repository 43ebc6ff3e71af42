//! Shared-storage mode end to end over raw requests: partition data in an object
//! store (in memory here, wrapped to fail on purpose; `compat/` runs real clients on
//! moto's S3 server), the catalogue in a metadata store outside the data directory.
//! A broker started on an empty data directory serves everything committed;
//! `acks=all` is answered after the commit; a failed PUT (or a lost answer) is a
//! retriable error that loses nothing and writes nothing twice; one object per flush
//! whatever the partition count.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ProduceRequest, RequestKind, ResponseKind};
use kafka_protocol::records::RecordBatchDecoder;
use object_store::memory::InMemory;
use spool_broker::{MetadataUrl, ObjectStorage};
use spool_objects::FaultyObjectStore;
use spool_testkit::{
    BatchBuilder, FetchAt, RawClient, TestBroker, http_get, produce_request, topic_name,
};

const KAFKA_STORAGE_ERROR: i16 = 56;

/// An object store kept across broker runs, and the metadata store's URL (outside
/// any data directory, so that one can be thrown away).
struct Cluster {
    objects: Arc<FaultyObjectStore>,
    metadata: MetadataUrl,
    _dir: tempfile::TempDir,
}

impl Cluster {
    fn new() -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        Cluster {
            objects: Arc::new(FaultyObjectStore::new(Arc::new(InMemory::new()))),
            metadata: MetadataUrl::Sqlite(dir.path().join("catalogue.db")),
            _dir: dir,
        }
    }

    /// A broker on a fresh, empty data directory.
    async fn broker(&self, settings: &[(&str, &str)]) -> TestBroker {
        let objects = ObjectStorage::new(self.objects.clone(), "spool".into());
        let data = tempfile::tempdir().unwrap();
        TestBroker::start_shared(data, objects, Some(self.metadata.clone()), settings).await
    }
}

/// Every record value of `topic`'s partition from `offset` to the high watermark,
/// fetched `max_bytes` at a time (so cold reads span several objects).
async fn values(client: &mut RawClient, topic: &str, partition: i32, max_bytes: i32) -> Vec<Bytes> {
    let mut offset = 0;
    let mut values = Vec::new();
    loop {
        let at = FetchAt {
            partition,
            offset,
            max_bytes,
        };
        let answer = client.fetch(12, topic, &[at], 0, 0, max_bytes).await;
        let answer = &answer[0];
        assert_eq!(answer.error_code, 0, "fetch at {offset}");
        let Some(mut records) = answer.records.clone() else {
            break;
        };
        if records.is_empty() {
            break;
        }
        for batch in RecordBatchDecoder::decode_all(&mut records).unwrap() {
            for record in batch.records {
                if record.offset >= offset {
                    let next = i64::try_from(values.len()).unwrap();
                    assert_eq!(record.offset, next, "offsets follow each other");
                    values.push(record.value.unwrap_or_default());
                }
            }
        }
        offset = i64::try_from(values.len()).unwrap();
        if offset >= answer.high_watermark {
            break;
        }
    }
    values
}

fn batch(tag: &str, n: usize) -> Vec<u8> {
    batch_at(tag, n, 1_000 + i64::try_from(n).unwrap())
}

/// `n` records `<tag>-<i>` stamped `timestamp`.
fn batch_at(tag: &str, n: usize, timestamp: i64) -> Vec<u8> {
    let mut builder = BatchBuilder::new().timestamp(timestamp);
    for i in 0..n {
        builder = builder.record(spool_testkit::TestRecord::value(format!("{tag}-{i}")));
    }
    builder.build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_on_an_empty_data_dir_serves_everything_committed() {
    let cluster = Cluster::new();
    let broker = cluster.broker(&[("storage.flush.ms", "5")]).await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("orders", 2).await, 0);
    let mut expected: [Vec<String>; 2] = Default::default();
    for round in 0..20 {
        for partition in 0..2 {
            let tag = format!("p{partition}r{round}");
            let (error, base) = client.produce("orders", partition, batch(&tag, 5)).await;
            assert_eq!(error, 0);
            assert_eq!(base, round * 5);
            expected[usize::try_from(partition).unwrap()]
                .extend((0..5).map(|i| format!("{tag}-{i}")));
        }
    }
    let stats = broker.broker().unwrap().storage_stats().unwrap();
    assert!(stats.puts >= 1 && stats.commits >= 1, "{stats:?}");
    drop(client);
    // The data directory goes with the broker.
    drop(broker.stop().await);

    let broker = cluster.broker(&[]).await;
    let mut client = broker.client().await;
    for partition in 0..2 {
        let want = &expected[usize::try_from(partition).unwrap()];
        for max_bytes in [1 << 20, 300] {
            let got: Vec<String> = values(&mut client, "orders", partition, max_bytes)
                .await
                .into_iter()
                .map(|v| String::from_utf8(v.to_vec()).unwrap())
                .collect();
            assert_eq!(
                &got, want,
                "partition {partition}, {max_bytes} bytes a fetch"
            );
        }
        let latest = client.list_offset(7, "orders", partition, -1).await;
        assert_eq!(latest.offset, 100);
        let earliest = client.list_offset(7, "orders", partition, -2).await;
        assert_eq!(earliest.offset, 0);
        // Timestamps 1005 in every batch: the first record at or after it is the first.
        let by_time = client.list_offset(7, "orders", partition, 1_005).await;
        assert_eq!((by_time.error_code, by_time.offset), (0, 0));
        let beyond = client.list_offset(7, "orders", partition, 9_999).await;
        assert_eq!(beyond.offset, -1);
    }
    // Appends go on where the catalogue says the partition ends.
    assert_eq!(
        client.produce("orders", 0, batch("after", 2)).await,
        (0, 100)
    );
    let stats = broker.broker().unwrap().storage_stats().unwrap();
    assert!(stats.gets >= 2, "cold reads came from objects: {stats:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumers_of_the_same_cold_data_share_each_get() {
    let cluster = Cluster::new();
    let broker = cluster.broker(&[("storage.flush.ms", "5")]).await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("popular", 1).await, 0);
    let mut expected = Vec::new();
    for round in 0..12 {
        let tag = format!("r{round}");
        assert_eq!(client.produce("popular", 0, batch(&tag, 5)).await.0, 0);
        expected.extend((0..5).map(|i| format!("{tag}-{i}")));
    }
    drop(client);
    drop(broker.stop().await);
    let objects = wal_objects(&cluster).await;

    // A broker with a cold cache, and slow GETs: eight consumers read the same data
    // at once.
    let broker = cluster.broker(&[]).await;
    cluster
        .objects
        .delay_gets(std::time::Duration::from_millis(50));
    let before = cluster.objects.counts().gets;
    let mut readers = Vec::new();
    for _ in 0..8 {
        let mut client = broker.client().await;
        readers.push(tokio::spawn(async move {
            values(&mut client, "popular", 0, 1 << 20).await
        }));
    }
    for reader in readers {
        let got: Vec<String> = reader
            .await
            .unwrap()
            .into_iter()
            .map(|v| String::from_utf8(v.to_vec()).unwrap())
            .collect();
        assert_eq!(got, expected);
    }
    cluster.objects.heal();
    let gets = cluster.objects.counts().gets - before;
    // At most one GET per range (one per WAL object here), not one per consumer.
    assert!(
        gets <= u64::try_from(objects).unwrap(),
        "{gets} GETs for {objects} objects"
    );
    let stats = broker.broker().unwrap().storage_stats().unwrap();
    assert!(stats.cache_hits > stats.cache_misses, "{stats:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_put_is_a_retriable_error_that_writes_nothing() {
    let cluster = Cluster::new();
    let broker = cluster.broker(&[("storage.flush.ms", "5")]).await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("events", 1).await, 0);
    assert_eq!(client.produce("events", 0, batch("a", 3)).await, (0, 0));
    cluster.objects.fail_next_puts(1);
    let (error, _) = client.produce("events", 0, batch("lost", 3)).await;
    assert_eq!(error, KAFKA_STORAGE_ERROR);
    // The partition reopens from the catalogue: the refused batch is not there.
    assert_eq!(client.produce("events", 0, batch("b", 3)).await, (0, 3));
    let got: Vec<Bytes> = values(&mut client, "events", 0, 1 << 20).await;
    let got: Vec<&[u8]> = got.iter().map(|v| v.as_ref()).collect();
    assert_eq!(
        got,
        vec![&b"a-0"[..], b"a-1", b"a-2", b"b-0", b"b-1", b"b-2"]
    );
    drop(client);
    drop(broker.stop().await);
    let broker = cluster.broker(&[]).await;
    let mut client = broker.client().await;
    assert_eq!(values(&mut client, "events", 0, 1 << 20).await.len(), 6);
}

/// The answer of an acks=all Produce v9 of `records` to partition 0: error code and
/// message.
async fn produce_answer(client: &mut RawClient, topic: &str, records: Vec<u8>) -> (i16, String) {
    let ResponseKind::Produce(response) = client.call(produce_request(topic, 0, records), 9).await
    else {
        panic!("not a Produce response")
    };
    let partition = &response.responses[0].partition_responses[0];
    let message = partition
        .error_message
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default();
    (partition.error_code, message)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_object_store_makes_the_broker_unready_and_produce_says_why() {
    let cluster = Cluster::new();
    let broker = cluster.broker(&[("storage.flush.ms", "5")]).await;
    let admin = broker.admin_addr().unwrap();
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("events", 1).await, 0);
    assert_eq!(client.produce("events", 0, batch("a", 3)).await, (0, 0));
    assert_eq!(http_get(admin, "/health/ready").await.status, 200);

    cluster.objects.fail_next_puts(u64::MAX);
    cluster.objects.fail_next_gets(u64::MAX);
    let (error, message) = produce_answer(&mut client, "events", batch("lost", 3)).await;
    assert_eq!(error, KAFKA_STORAGE_ERROR, "retriable: {message}");
    assert!(
        message.contains("object storage") && message.contains("injected PUT failure"),
        "the answer says why: {message}"
    );
    let ready = http_get(admin, "/health/ready").await;
    assert_eq!(ready.status, 503, "{ready:?}");
    assert!(
        ready.body.contains("object_storage") && ready.body.contains("injected"),
        "{ready:?}"
    );

    cluster.objects.heal();
    let (error, message) = produce_answer(&mut client, "events", batch("b", 3)).await;
    assert_eq!(error, 0, "{message}");
    let ready = http_get(admin, "/health/ready").await;
    assert_eq!(
        ready.status, 200,
        "ready again once a write succeeded: {ready:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotent_retry_after_a_lost_put_answer_is_written_once() {
    let cluster = Cluster::new();
    let broker = cluster.broker(&[("storage.flush.ms", "5")]).await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("payments", 1).await, 0);
    let first = BatchBuilder::new().producer(42, 0, 0).values(2, 10).build();
    assert_eq!(client.produce("payments", 0, first).await, (0, 0));
    // The object is written but the broker hears it failed: nothing is committed.
    cluster.objects.lose_next_put_answers(1);
    let second = BatchBuilder::new().producer(42, 0, 2).values(2, 10).build();
    assert_eq!(
        client.produce("payments", 0, second.clone()).await.0,
        KAFKA_STORAGE_ERROR
    );
    assert_eq!(client.produce("payments", 0, second.clone()).await, (0, 2));
    // A retry of a committed batch is recognised from the committed producer state,
    // also by a broker that never saw it.
    drop(client);
    drop(broker.stop().await);
    let broker = cluster.broker(&[]).await;
    let mut client = broker.client().await;
    assert_eq!(client.produce("payments", 0, second).await, (0, 2));
    assert_eq!(values(&mut client, "payments", 0, 1 << 20).await.len(), 4);
    let third = BatchBuilder::new().producer(42, 0, 4).values(1, 10).build();
    assert_eq!(client.produce("payments", 0, third).await, (0, 4));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_object_carries_a_flush_of_every_partition() {
    let cluster = Cluster::new();
    // A long flush interval: everything below goes out in one flush.
    let broker = cluster.broker(&[("storage.flush.ms", "2000")]).await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("wide", 200).await, 0);
    let produce = |round: usize| {
        let data = (0..200)
            .map(|index| {
                PartitionProduceData::default()
                    .with_index(index)
                    .with_records(Some(Bytes::from(batch(&format!("p{index}-{round}"), 2))))
            })
            .collect();
        RequestKind::Produce(
            ProduceRequest::default()
                .with_acks(-1)
                .with_timeout_ms(10_000)
                .with_topic_data(vec![
                    TopicProduceData::default()
                        .with_name(topic_name("wide"))
                        .with_partition_data(data),
                ]),
        )
    };
    // The first write to each partition opens its tail from the catalogue, a store
    // read each: on a busy machine, 200 of them can outlast the flush interval. The
    // second request appends to open tails only.
    let ResponseKind::Produce(_) = client.call(produce(0), 9).await else {
        panic!("not a Produce response")
    };
    let puts_before = cluster.objects.counts().puts;
    let ResponseKind::Produce(response) = client.call(produce(1), 9).await else {
        panic!("not a Produce response")
    };
    let answers = &response.responses[0].partition_responses;
    assert_eq!(answers.len(), 200);
    assert!(
        answers
            .iter()
            .all(|a| a.error_code == 0 && a.base_offset == 2)
    );
    assert_eq!(
        cluster.objects.counts().puts - puts_before,
        1,
        "one PUT for 200 partitions"
    );
}

/// Objects under the storage prefix's `wal/`.
async fn wal_objects(cluster: &Cluster) -> usize {
    wal_names(cluster).await.len()
}

/// The names of the objects under the storage prefix's `wal/`.
async fn wal_names(cluster: &Cluster) -> Vec<String> {
    use futures::TryStreamExt;
    use object_store::ObjectStore;
    let prefix = object_store::path::Path::from("spool/wal");
    let listed: Vec<_> = cluster
        .objects
        .list(Some(&prefix))
        .try_collect()
        .await
        .unwrap();
    listed.into_iter().map(|m| m.location.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_moves_the_log_start_and_unreferenced_objects_are_deleted() {
    let cluster = Cluster::new();
    let broker = cluster
        .broker(&[
            ("storage.flush.ms", "1"),
            ("log.retention.check.interval.ms", "50"),
            ("storage.gc.grace.ms", "0"),
            ("log.retention.bytes", "1000"),
            ("storage.orphan.age.ms", "1000"),
        ])
        .await;
    let mut client = broker.client().await;
    // An object no commit made visible: deleted once a second old
    // (`storage.orphan.age.ms`, by the store's clock).
    {
        use object_store::ObjectStoreExt;
        let path = object_store::path::Path::from("spool/wal/0000000001000-orphan");
        cluster
            .objects
            .put(&path, Bytes::from_static(b"x").into())
            .await
            .unwrap();
    }
    assert_eq!(client.create_topic("short", 1).await, 0);
    for round in 0..20 {
        // About 300 bytes a batch, each in an object of its own (acks=all waits).
        let values = BatchBuilder::new().values(4, 60).build();
        assert_eq!(client.produce("short", 0, values).await, (0, round * 4));
    }
    // Counted as written, not as listed: retention may have taken some already.
    let puts = broker.broker().unwrap().storage_stats().unwrap().puts;
    assert!(puts >= 20, "{puts} objects written");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let earliest = client.list_offset(7, "short", 0, -2).await.offset;
        let names = wal_names(&cluster).await;
        let objects = names.len();
        // 1,000 bytes keep the last three or four batches; the orphan goes.
        let orphan_gone = !names.iter().any(|name| name.contains("orphan"));
        if earliest >= 64 && objects <= 4 && orphan_gone {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "retention did not run: earliest {earliest}, {objects} objects"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let earliest = client.list_offset(7, "short", 0, -2).await.offset;
    let below = FetchAt {
        partition: 0,
        offset: earliest - 1,
        max_bytes: 1 << 20,
    };
    assert_eq!(
        client.fetch(12, "short", &[below], 0, 0, 1 << 20).await[0].error_code,
        1
    );
    let stats = broker.broker().unwrap().storage_stats().unwrap();
    assert!(stats.deletes >= 16, "{stats:?}");
    let left = {
        use futures::TryStreamExt;
        use object_store::ObjectStore;
        let listed: Vec<_> = cluster
            .objects
            .list(Some(&"spool/wal".into()))
            .try_collect()
            .await
            .unwrap();
        listed
            .into_iter()
            .map(|m| m.location.to_string())
            .collect::<Vec<_>>()
    };
    assert!(!left.iter().any(|name| name.contains("orphan")), "{left:?}");
    // What is left reads back, from a broker that never saw it.
    drop(client);
    drop(broker.stop().await);
    let broker = cluster.broker(&[]).await;
    let mut client = broker.client().await;
    let at = FetchAt {
        partition: 0,
        offset: earliest,
        max_bytes: 1 << 20,
    };
    let answer = client.fetch(12, "short", &[at], 0, 0, 1 << 20).await;
    assert_eq!(answer[0].error_code, 0);
    assert_eq!(answer[0].log_start_offset, earliest);
    let mut records = answer[0].records.clone().unwrap();
    let batches = RecordBatchDecoder::decode_all(&mut records).unwrap();
    assert_eq!(
        batches.iter().map(|b| b.records.len()).sum::<usize>(),
        usize::try_from(80 - earliest).unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_ranges_are_compacted_into_a_segment_object_and_read_back() {
    use spool_metadata::PartitionKey;
    let cluster = Cluster::new();
    let broker = cluster
        .broker(&[
            ("storage.flush.ms", "1"),
            ("log.retention.check.interval.ms", "50"),
            ("storage.gc.grace.ms", "0"),
            ("storage.compaction.min.ranges", "4"),
            ("storage.compaction.block.bytes", "2048"),
        ])
        .await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("compacted", 1).await, 0);
    let mut expected = Vec::new();
    // Recent timestamps: retention (7 days by default) keeps them.
    let now = spool_model::Timestamp::now().0;
    for round in 0..30 {
        let tag = format!("r{round}");
        let records = batch_at(&tag, 3, now + round);
        assert_eq!(
            client.produce("compacted", 0, records).await,
            (0, round * 3)
        );
        expected.extend((0..3).map(|i| format!("{tag}-{i}")));
    }
    let catalogue = spool_metadata::open(&cluster.metadata).await.unwrap();
    let topic_id = catalogue
        .topics()
        .await
        .unwrap()
        .into_iter()
        .find(|t| t.name.as_str() == "compacted")
        .unwrap()
        .id;
    let key = PartitionKey {
        topic_id,
        partition: 0,
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let ranges = catalogue
            .ranges_from(key, 0, i64::MAX, 1_000)
            .await
            .unwrap();
        let in_segments = ranges
            .iter()
            .filter(|r| r.object.starts_with("seg/"))
            .count();
        // Blocks of about 2 KiB hold ten or so batches of ~200 bytes.
        if ranges.len() <= 6 && in_segments >= 2 && wal_objects(&cluster).await <= 3 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not compacted: {} ranges, {in_segments} in segments, {} WAL objects",
            ranges.len(),
            wal_objects(&cluster).await
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    drop(client);
    drop(broker.stop().await);
    let broker = cluster.broker(&[]).await;
    let mut client = broker.client().await;
    for max_bytes in [1 << 20, 250] {
        let got: Vec<String> = values(&mut client, "compacted", 0, max_bytes)
            .await
            .into_iter()
            .map(|v| String::from_utf8(v.to_vec()).unwrap())
            .collect();
        assert_eq!(got, expected, "{max_bytes} bytes a fetch");
    }
    let by_time = client.list_offset(7, "compacted", 0, now + 17).await;
    assert_eq!((by_time.error_code, by_time.offset), (0, 51));
    assert_eq!(
        client.produce("compacted", 0, batch("after", 1)).await,
        (0, 90)
    );
}

/// Every record of `topic`'s partition from the log start to the high watermark, as
/// (offset, key, value), skipping the gaps compaction leaves.
async fn keyed_records(
    client: &mut RawClient,
    topic: &str,
) -> Vec<(i64, Option<String>, Option<String>)> {
    let text = |bytes: Option<Bytes>| bytes.map(|b| String::from_utf8(b.to_vec()).unwrap());
    let mut offset = 0;
    let mut out = Vec::new();
    loop {
        let at = FetchAt {
            partition: 0,
            offset,
            max_bytes: 1 << 20,
        };
        let answer = &client.fetch(12, topic, &[at], 0, 0, 1 << 20).await[0];
        assert_eq!(answer.error_code, 0, "fetch at {offset}");
        let mut records = answer.records.clone().unwrap_or_default();
        let mut next = offset;
        for batch in RecordBatchDecoder::decode_all(&mut records).unwrap() {
            for record in batch.records {
                if record.offset >= offset {
                    out.push((record.offset, text(record.key), text(record.value)));
                    next = record.offset + 1;
                }
            }
        }
        if next == offset || next >= answer.high_watermark {
            return out;
        }
        offset = next;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compacted_topic_is_cleaned_in_object_storage() {
    use spool_testkit::TestRecord;
    let cluster = Cluster::new();
    let settings = [
        ("storage.flush.ms", "1"),
        ("log.cleaner.backoff.ms", "50"),
        ("log.retention.check.interval.ms", "50"),
        ("storage.gc.grace.ms", "0"),
        ("storage.compaction.block.bytes", "1024"),
    ];
    let broker = cluster.broker(&settings).await;
    let mut client = broker.client().await;
    let configs = [
        ("cleanup.policy", "compact"),
        ("min.cleanable.dirty.ratio", "0.01"),
    ];
    assert_eq!(client.create_topic_with("table", 1, &configs).await, 0);
    let keyed = |key: String, value: Option<String>| TestRecord {
        key: Some(key.into_bytes()),
        value: value.map(String::into_bytes),
        ..TestRecord::default()
    };
    let mut latest = std::collections::BTreeMap::new();
    for round in 0..20 {
        let mut builder = BatchBuilder::new().timestamp(spool_model::Timestamp::now().0);
        for k in 0..5 {
            let value = (!(k == 4 && round == 19)).then(|| format!("k{k}-r{round}"));
            latest.insert(format!("k{k}"), value.clone());
            builder = builder.record(keyed(format!("k{k}"), value));
        }
        assert_eq!(
            client.produce("table", 0, builder.build()).await,
            (0, round * 5)
        );
    }
    // The last range (the "active segment") is never cleaned.
    let last = BatchBuilder::new()
        .timestamp(spool_model::Timestamp::now().0)
        .record(keyed("k0".to_owned(), Some("last".to_owned())))
        .build();
    assert_eq!(client.produce("table", 0, last).await, (0, 100));
    latest.insert("k0".to_owned(), Some("last".to_owned()));

    let check = |records: &[(i64, Option<String>, Option<String>)], when: &str| {
        let offsets: Vec<i64> = records.iter().map(|r| r.0).collect();
        assert!(
            offsets.windows(2).all(|w| w[0] < w[1]),
            "{when}: offsets increase"
        );
        assert_eq!(
            offsets.last(),
            Some(&100),
            "{when}: the last record keeps its offset"
        );
        let mut seen = std::collections::BTreeMap::new();
        for (_, key, value) in records {
            seen.insert(key.clone().unwrap(), value.clone());
        }
        assert_eq!(seen, latest, "{when}: each key reads as its latest value");
    };
    // Read through the broker that wrote the tail: reads below the cleaned offset go
    // to object storage.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let records = loop {
        let records = keyed_records(&mut client, "table").await;
        let wal_objects = wal_names(&cluster).await.len();
        // What stays: the last range's object (and one of a flush racing it).
        if records.len() <= 10 && wal_objects <= 2 {
            break records;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not cleaned: {} records, {wal_objects} WAL objects",
            records.len()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    check(&records, "the writer");
    drop(client);
    drop(broker.stop().await);

    let broker = cluster.broker(&settings).await;
    let mut client = broker.client().await;
    check(
        &keyed_records(&mut client, "table").await,
        "a broker on an empty data dir",
    );
    // Appends go on after the cleaned part, and a later pass cleans them too.
    for round in 0..3 {
        let batch = BatchBuilder::new()
            .timestamp(spool_model::Timestamp::now().0)
            .record(keyed("k1".to_owned(), Some(format!("again-{round}"))))
            .build();
        assert_eq!(client.produce("table", 0, batch).await, (0, 101 + round));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let records = keyed_records(&mut client, "table").await;
        let k1: Vec<i64> = records
            .iter()
            .filter(|r| r.1.as_deref() == Some("k1"))
            .map(|r| r.0)
            .collect();
        // 102 is the latest k1 of the dirty part, 103 the last range's.
        if k1 == [102, 103] {
            assert!(records.iter().any(|r| r.0 == 100), "k0's latest stays");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not cleaned again: k1 at {k1:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
