//! Produce over raw requests: per-partition error codes for bad batches, and a broker
//! that keeps serving afterwards.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bytes::Bytes;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    CreateTopicsRequest, ProduceRequest, RequestKind, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use spool_testkit::{BatchBuilder, RawClient, TestBroker};

fn name(topic: &'static str) -> TopicName {
    TopicName(StrBytes::from_static_str(topic))
}

async fn create_topic(client: &mut RawClient, topic: &'static str, partitions: i32) {
    let request = CreateTopicsRequest::default()
        .with_timeout_ms(5000)
        .with_topics(vec![
            CreatableTopic::default()
                .with_name(name(topic))
                .with_num_partitions(partitions)
                .with_replication_factor(1),
        ]);
    let ResponseKind::CreateTopics(response) =
        client.call(RequestKind::CreateTopics(request), 7).await
    else {
        panic!("not a CreateTopics response")
    };
    assert_eq!(response.topics[0].error_code, 0);
}

/// Produces `records` to partition 0 of `topic` with acks=all; returns (error, base offset).
async fn produce(
    client: &mut RawClient,
    topic: &'static str,
    partition: i32,
    records: Vec<u8>,
) -> (i16, i64) {
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(name(topic))
                .with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(partition)
                        .with_records(Some(Bytes::from(records))),
                ]),
        ]);
    let ResponseKind::Produce(response) = client.call(RequestKind::Produce(request), 9).await
    else {
        panic!("not a Produce response")
    };
    let partition = &response.responses[0].partition_responses[0];
    (partition.error_code, partition.base_offset)
}

#[tokio::test]
async fn bad_batches_get_their_error_code_and_the_broker_keeps_serving() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    create_topic(&mut client, "events", 2).await;

    let good = BatchBuilder::new().timestamp(1000).values(3, 20).build();
    assert_eq!(
        produce(&mut client, "events", 0, good.clone()).await,
        (0, 0)
    );

    let mut flipped = good.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0x40;
    assert_eq!(
        produce(&mut client, "events", 0, flipped).await.0,
        2,
        "CORRUPT_MESSAGE"
    );

    let mut truncated = good.clone();
    truncated.truncate(good.len() - 10);
    assert_eq!(
        produce(&mut client, "events", 0, truncated).await.0,
        2,
        "CORRUPT_MESSAGE"
    );

    let mut old_magic = good.clone();
    old_magic[16] = 1;
    assert_eq!(
        produce(&mut client, "events", 0, old_magic).await.0,
        43,
        "UNSUPPORTED_FOR_MESSAGE_FORMAT"
    );

    assert_eq!(
        produce(&mut client, "events", 7, good.clone()).await.0,
        3,
        "UNKNOWN_TOPIC_OR_PARTITION"
    );
    assert_eq!(produce(&mut client, "nowhere", 0, good.clone()).await.0, 3);

    let too_big = BatchBuilder::new().values(1, 1_100_000).build();
    assert_eq!(
        produce(&mut client, "events", 0, too_big).await.0,
        10,
        "MESSAGE_TOO_LARGE"
    );

    // Nothing bad was written: the next good batch lands right after the first.
    assert_eq!(produce(&mut client, "events", 0, good).await, (0, 3));
}

#[tokio::test]
async fn pipelined_produce_requests_to_one_partition_append_in_request_order() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    create_topic(&mut client, "ordered", 1).await;
    let mut sent = Vec::new();
    for i in 0..40u8 {
        let batch = BatchBuilder::new().values(1, usize::from(i) + 1).build();
        let request = ProduceRequest::default()
            .with_acks(-1)
            .with_timeout_ms(5000)
            .with_topic_data(vec![
                TopicProduceData::default()
                    .with_name(name("ordered"))
                    .with_partition_data(vec![
                        PartitionProduceData::default()
                            .with_index(0)
                            .with_records(Some(Bytes::from(batch))),
                    ]),
            ]);
        sent.push(client.send(&RequestKind::Produce(request), 9).await);
    }
    for (i, correlation) in sent.into_iter().enumerate() {
        let frame = client.read_frame().await.expect("a response");
        assert_eq!(spool_testkit::correlation_of(&frame), correlation);
        let mut body = frame.slice(4..);
        // Response header v1 (flexible): tagged fields byte, then the body.
        let _ = bytes::Buf::get_u8(&mut body);
        let response = <kafka_protocol::messages::ProduceResponse as kafka_protocol::protocol::Decodable>::decode(&mut body, 9).unwrap();
        let base = response.responses[0].partition_responses[0].base_offset;
        assert_eq!(
            base,
            i64::try_from(i).unwrap(),
            "request {i} appended in order"
        );
    }
}
