//! librdkafka, through the `rdkafka` crate, against a broker on a free port: topics
//! administered, records produced with every codec and read back byte for byte,
//! offsets looked up, and the size limit enforced.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::time::Duration;

use rdkafka::admin::{
    AdminClient, AdminOptions, AlterConfig, NewPartitions, NewTopic, ResourceSpecifier,
    TopicReplication,
};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, Headers, Message, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};
use spool_testkit::TestBroker;

const TIMEOUT: Duration = Duration::from_secs(10);

fn config(broker: &TestBroker) -> ClientConfig {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", broker.addr().to_string());
    config
}

fn admin(broker: &TestBroker) -> AdminClient<DefaultClientContext> {
    config(broker).create().unwrap()
}

async fn create_topic(broker: &TestBroker, name: &str, partitions: i32, configs: &[(&str, &str)]) {
    let mut topic = NewTopic::new(name, partitions, TopicReplication::Fixed(1));
    for (key, value) in configs {
        topic = topic.set(key, value);
    }
    let results = admin(broker)
        .create_topics([&topic], &AdminOptions::new())
        .await
        .unwrap();
    assert!(results[0].is_ok(), "{results:?}");
}

/// A consumer reading partitions by assignment from the beginning. librdkafka wants a
/// group id for that, but assignment joins no group and nothing is committed.
fn reader(broker: &TestBroker, topic: &str, partitions: i32) -> BaseConsumer {
    let consumer: BaseConsumer = config(broker)
        .set("group.id", "unused")
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .create()
        .unwrap();
    let mut assignment = TopicPartitionList::new();
    for partition in 0..partitions {
        assignment
            .add_partition_offset(topic, partition, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&assignment).unwrap();
    consumer
}

/// (partition, offset, key, value, headers) of what `consumer` reads, `count` records.
type Read = (
    i32,
    i64,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Vec<(String, Option<Vec<u8>>)>,
);

fn read(consumer: &BaseConsumer, count: usize) -> Vec<Read> {
    let mut out = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while out.len() < count {
        assert!(
            std::time::Instant::now() < deadline,
            "read {} of {count}",
            out.len()
        );
        let Some(message) = consumer.poll(Duration::from_millis(200)) else {
            continue;
        };
        let message = message.unwrap();
        let headers = message
            .headers()
            .map(|headers| {
                headers
                    .iter()
                    .map(|h| (h.key.to_owned(), h.value.map(<[u8]>::to_vec)))
                    .collect()
            })
            .unwrap_or_default();
        out.push((
            message.partition(),
            message.offset(),
            message.key().map(<[u8]>::to_vec),
            message.payload().map(<[u8]>::to_vec),
            headers,
        ));
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn every_codec_round_trips_keys_headers_and_null_values() {
    let broker = TestBroker::start().await;
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let topic = format!("codec-{codec}");
        create_topic(&broker, &topic, 3, &[]).await;
        let producer: FutureProducer = config(&broker)
            .set("compression.type", codec)
            .set("acks", "all")
            .set("linger.ms", "5")
            .create()
            .unwrap();
        let mut sent = Vec::new();
        for i in 0..300u32 {
            let key = format!("key-{}", i % 7).into_bytes();
            let value =
                (i % 10 != 0).then(|| format!("value {i} {}", "x".repeat(i as usize)).into_bytes());
            let headers = OwnedHeaders::new().insert(Header {
                key: "n",
                value: Some(&i.to_be_bytes()),
            });
            let mut record = FutureRecord::<Vec<u8>, Vec<u8>>::to(&topic)
                .key(&key)
                .partition(i32::try_from(i % 3).unwrap())
                .headers(headers);
            if let Some(value) = &value {
                record = record.payload(value);
            }
            let delivered = producer.send(record, TIMEOUT).await.unwrap();
            sent.push((delivered.partition, delivered.offset, Some(key), value, i));
        }
        let consumer = reader(&broker, &topic, 3);
        let mut got = read(&consumer, sent.len());
        got.sort_by_key(|r| (r.0, r.1));
        sent.sort_by_key(|s| (s.0, s.1));
        for (got, sent) in got.iter().zip(&sent) {
            assert_eq!((got.0, got.1), (sent.0, sent.1), "{codec}");
            assert_eq!(got.2, sent.2, "{codec}: key");
            assert_eq!(got.3, sent.3, "{codec}: value (None is a null value)");
            assert_eq!(
                got.4,
                vec![("n".to_owned(), Some(sent.4.to_be_bytes().to_vec()))]
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn large_messages_pass_and_too_large_ones_are_refused() {
    let broker = TestBroker::start().await;
    create_topic(&broker, "large", 1, &[("max.message.bytes", "2000000")]).await;
    let producer: FutureProducer = config(&broker)
        .set("message.max.bytes", "10000000")
        .create()
        .unwrap();
    let big = vec![42u8; 1 << 20];
    producer
        .send(FutureRecord::<(), _>::to("large").payload(&big), TIMEOUT)
        .await
        .unwrap();
    let too_big = vec![1u8; 3 << 20];
    let refused = producer
        .send(
            FutureRecord::<(), _>::to("large").payload(&too_big),
            TIMEOUT,
        )
        .await
        .unwrap_err();
    assert_eq!(
        refused.0,
        KafkaError::MessageProduction(RDKafkaErrorCode::MessageSizeTooLarge)
    );
    let consumer = reader(&broker, "large", 1);
    let got = read(&consumer, 1);
    assert_eq!(got[0].3.as_deref(), Some(&big[..]));
}

#[tokio::test(flavor = "multi_thread")]
async fn watermarks_and_offsets_for_times() {
    let broker = TestBroker::start().await;
    create_topic(&broker, "times", 1, &[]).await;
    let producer: FutureProducer = config(&broker).create().unwrap();
    let base = 1_700_000_000_000i64;
    for i in 0..10 {
        producer
            .send(
                FutureRecord::<(), _>::to("times")
                    .payload("v")
                    .timestamp(base + i * 1000),
                TIMEOUT,
            )
            .await
            .unwrap();
    }
    let consumer = reader(&broker, "times", 1);
    assert_eq!(
        consumer.fetch_watermarks("times", 0, TIMEOUT).unwrap(),
        (0, 10)
    );
    let mut wanted = TopicPartitionList::new();
    wanted
        .add_partition_offset("times", 0, Offset::Offset(base + 4500))
        .unwrap();
    let found = consumer.offsets_for_times(wanted, TIMEOUT).unwrap();
    assert_eq!(found.elements()[0].offset(), Offset::Offset(5));
    let mut wanted = TopicPartitionList::new();
    wanted
        .add_partition_offset("times", 0, Offset::Offset(base + 10_000))
        .unwrap();
    let found = consumer.offsets_for_times(wanted, TIMEOUT).unwrap();
    assert_eq!(found.elements()[0].offset(), Offset::End, "none that new");
}

#[tokio::test(flavor = "multi_thread")]
async fn topics_are_administered() {
    let broker = TestBroker::start().await;
    let admin = admin(&broker);
    let options = AdminOptions::new();
    create_topic(&broker, "admin", 2, &[("retention.ms", "3600000")]).await;

    let duplicate = NewTopic::new("admin", 1, TopicReplication::Fixed(1));
    let results = admin.create_topics([&duplicate], &options).await.unwrap();
    assert_eq!(
        results[0].as_ref().unwrap_err().1,
        RDKafkaErrorCode::TopicAlreadyExists
    );

    let configs = admin
        .describe_configs([&ResourceSpecifier::Topic("admin")], &options)
        .await
        .unwrap();
    let resource = configs[0].as_ref().unwrap();
    let entries: HashMap<_, _> = resource
        .entries
        .iter()
        .map(|e| (e.name.clone(), e.value.clone()))
        .collect();
    assert_eq!(entries["retention.ms"].as_deref(), Some("3600000"));

    let change = AlterConfig::new(ResourceSpecifier::Topic("admin")).set("retention.ms", "1000");
    let results = admin.alter_configs([&change], &options).await.unwrap();
    assert!(results[0].is_ok(), "{results:?}");

    let grow = NewPartitions::new("admin", 4);
    let results = admin.create_partitions([&grow], &options).await.unwrap();
    assert!(results[0].is_ok(), "{results:?}");
    let consumer: BaseConsumer = config(&broker).create().unwrap();
    let metadata = consumer.fetch_metadata(Some("admin"), TIMEOUT).unwrap();
    assert_eq!(metadata.topics()[0].partitions().len(), 4);

    let results = admin.delete_topics(&["admin"], &options).await.unwrap();
    assert!(results[0].is_ok(), "{results:?}");
    let results = admin.delete_topics(&["admin"], &options).await.unwrap();
    assert_eq!(
        results[0].as_ref().unwrap_err().1,
        RDKafkaErrorCode::UnknownTopicOrPartition
    );
}

/// An offset past the end gets `OFFSET_OUT_OF_RANGE` for that partition only; the
/// consumer resets it (`auto.offset.reset=earliest`) while the other partition's
/// records arrive in the same responses.
#[tokio::test(flavor = "multi_thread")]
async fn an_offset_out_of_range_resets_and_other_partitions_keep_flowing() {
    let broker = TestBroker::start().await;
    create_topic(&broker, "reset", 2, &[]).await;
    let producer: FutureProducer = config(&broker).create().unwrap();
    for i in 0..10 {
        let record = FutureRecord::<(), _>::to("reset")
            .payload("v")
            .partition(i % 2);
        producer.send(record, TIMEOUT).await.unwrap();
    }
    let consumer: BaseConsumer = config(&broker)
        .set("group.id", "unused")
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .create()
        .unwrap();
    let mut assignment = TopicPartitionList::new();
    assignment
        .add_partition_offset("reset", 0, Offset::Offset(1000))
        .unwrap();
    assignment
        .add_partition_offset("reset", 1, Offset::Beginning)
        .unwrap();
    consumer.assign(&assignment).unwrap();
    let mut got = read(&consumer, 10);
    got.sort_by_key(|r| (r.0, r.1));
    let positions: Vec<_> = got.iter().map(|r| (r.0, r.1)).collect();
    let expected: Vec<_> = (0..2).flat_map(|p| (0..5).map(move |o| (p, o))).collect();
    assert_eq!(positions, expected);
}

/// `enable.idempotence=true`: librdkafka needs InitProducerId to start, then sends
/// sequenced batches; every record arrives once, in order.
#[tokio::test(flavor = "multi_thread")]
async fn an_idempotent_producer_writes_every_record_once_in_order() {
    let broker = TestBroker::start().await;
    create_topic(&broker, "idempotent", 1, &[]).await;
    let producer: FutureProducer = config(&broker)
        .set("enable.idempotence", "true")
        .set("linger.ms", "1")
        .create()
        .unwrap();
    // Queued all at once, so that many batches are in flight with their sequences.
    let values: Vec<String> = (0..1000).map(|i| format!("v{i}")).collect();
    let deliveries: Vec<_> = values
        .iter()
        .map(|value| {
            producer
                .send_result(FutureRecord::<(), _>::to("idempotent").payload(value))
                .map_err(|(error, _)| error)
                .unwrap()
        })
        .collect();
    for delivery in deliveries {
        delivery.await.unwrap().unwrap();
    }
    let consumer = reader(&broker, "idempotent", 1);
    let got: Vec<String> = read(&consumer, 1000)
        .into_iter()
        .map(|r| String::from_utf8(r.3.unwrap()).unwrap())
        .collect();
    assert_eq!(got, values);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_consumer_sized_to_its_fetch_budget_reads_large_batches_of_many_partitions() {
    let broker = TestBroker::start().await;
    create_topic(&broker, "wide", 4, &[]).await;
    let producer: FutureProducer = config(&broker).create().unwrap();
    let value = vec![7u8; 900 << 10];
    for i in 0..12 {
        producer
            .send(
                FutureRecord::<(), _>::to("wide")
                    .payload(&value)
                    .partition(i % 4),
                TIMEOUT,
            )
            .await
            .unwrap();
    }
    // librdkafka refuses a response larger than receive.message.max.bytes and drops
    // the connection; sized just above fetch.max.bytes, it reads only if the broker
    // keeps every response within the budget but for one batch.
    let consumer: BaseConsumer = config(&broker)
        .set("group.id", "unused")
        .set("enable.auto.commit", "false")
        .set("fetch.max.bytes", "1048576")
        .set("max.partition.fetch.bytes", "1048576")
        .set("receive.message.max.bytes", "1049088")
        .create()
        .unwrap();
    let mut assignment = TopicPartitionList::new();
    for partition in 0..4 {
        assignment
            .add_partition_offset("wide", partition, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&assignment).unwrap();
    let got = read(&consumer, 12);
    assert!(got.iter().all(|r| r.3.as_deref() == Some(&value[..])));
}
