//! Produce over raw requests: per-partition error codes for bad batches, and a broker
//! that keeps serving afterwards.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use spool_testkit::{BatchBuilder, TestBroker, produce_request};

#[tokio::test]
async fn bad_batches_get_their_error_code_and_the_broker_keeps_serving() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("events", 2).await, 0);

    let good = BatchBuilder::new().timestamp(1000).values(3, 20).build();
    assert_eq!(client.produce("events", 0, good.clone()).await, (0, 0));

    let mut flipped = good.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0x40;
    assert_eq!(
        client.produce("events", 0, flipped).await.0,
        2,
        "CORRUPT_MESSAGE"
    );

    let mut truncated = good.clone();
    truncated.truncate(good.len() - 10);
    assert_eq!(
        client.produce("events", 0, truncated).await.0,
        2,
        "CORRUPT_MESSAGE"
    );

    let mut old_magic = good.clone();
    old_magic[16] = 1;
    assert_eq!(
        client.produce("events", 0, old_magic).await.0,
        43,
        "UNSUPPORTED_FOR_MESSAGE_FORMAT"
    );

    assert_eq!(
        client.produce("events", 7, good.clone()).await.0,
        3,
        "UNKNOWN_TOPIC_OR_PARTITION"
    );
    assert_eq!(client.produce("nowhere", 0, good.clone()).await.0, 3);
    for illegal in ["bad name", "..", &"x".repeat(250)] {
        assert_eq!(
            client.produce(illegal, 0, good.clone()).await.0,
            17,
            "INVALID_TOPIC_EXCEPTION for {illegal:?}"
        );
        assert_eq!(client.create_topic(illegal, 1).await, 17);
    }

    let too_big = BatchBuilder::new().values(1, 1_100_000).build();
    assert_eq!(
        client.produce("events", 0, too_big).await.0,
        10,
        "MESSAGE_TOO_LARGE"
    );

    // Nothing bad was written: the next good batch lands right after the first.
    assert_eq!(client.produce("events", 0, good).await, (0, 3));
}

#[tokio::test]
async fn pipelined_produce_requests_to_one_partition_append_in_request_order() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("ordered", 1).await, 0);
    let mut sent = Vec::new();
    for i in 0..40u8 {
        let batch = BatchBuilder::new().values(1, usize::from(i) + 1).build();
        let request = produce_request("ordered", 0, batch);
        sent.push(client.send(&request, 9).await);
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

async fn init_producer_id(
    client: &mut spool_testkit::RawClient,
    version: i16,
    current: Option<(i64, i16)>,
    transactional: Option<&str>,
) -> (i16, i64, i16) {
    use kafka_protocol::messages::{
        InitProducerIdRequest, ProducerId, RequestKind, ResponseKind, TransactionalId,
    };
    use kafka_protocol::protocol::StrBytes;
    let mut request = InitProducerIdRequest::default()
        .with_transaction_timeout_ms(60_000)
        .with_transactional_id(
            transactional.map(|t| TransactionalId(StrBytes::from_string(t.to_owned()))),
        );
    if let Some((id, epoch)) = current {
        request = request
            .with_producer_id(ProducerId(id))
            .with_producer_epoch(epoch);
    }
    let ResponseKind::InitProducerId(response) = client
        .call(RequestKind::InitProducerId(request), version)
        .await
    else {
        panic!("not an InitProducerId response")
    };
    (
        response.error_code,
        response.producer_id.0,
        response.producer_epoch,
    )
}

#[tokio::test]
async fn idempotent_producers_get_ids_and_their_retries_are_not_written_twice() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("idem", 1).await, 0);
    let (error, id, epoch) = init_producer_id(&mut client, 4, None, None).await;
    assert_eq!((error, epoch), (0, 0));
    let (_, other, _) = init_producer_id(&mut client, 1, None, None).await;
    assert_ne!(other, id, "every producer its own id");
    assert_eq!(
        init_producer_id(&mut client, 4, Some((id, 0)), None).await,
        (0, id, 1),
        "a known producer asking again gets the next epoch"
    );
    let (error, transactional, epoch) = init_producer_id(&mut client, 4, None, Some("tx")).await;
    assert_eq!(
        (error, epoch),
        (0, 0),
        "a transactional producer starts at epoch 0"
    );
    assert!(transactional != id && transactional != other);
    assert_eq!(
        init_producer_id(&mut client, 4, None, Some("tx")).await,
        (0, transactional, 1),
        "the same transactional id again: the next epoch fences the first"
    );

    let batch = |sequence: i32, epoch: i16| {
        BatchBuilder::new()
            .producer(id, epoch, sequence)
            .values(2, 10)
            .build()
    };
    assert_eq!(client.produce("idem", 0, batch(0, 1)).await, (0, 0));
    assert_eq!(client.produce("idem", 0, batch(2, 1)).await, (0, 2));
    assert_eq!(
        client.produce("idem", 0, batch(0, 1)).await,
        (0, 0),
        "retry: original offset"
    );
    assert_eq!(
        client.produce("idem", 0, batch(7, 1)).await.0,
        45,
        "OUT_OF_ORDER_SEQUENCE_NUMBER"
    );
    assert_eq!(
        client.produce("idem", 0, batch(4, 0)).await.0,
        47,
        "INVALID_PRODUCER_EPOCH"
    );
    let stranger = BatchBuilder::new()
        .producer(other, 0, 30)
        .values(1, 10)
        .build();
    assert_eq!(
        client.produce("idem", 0, stranger).await.0,
        59,
        "UNKNOWN_PRODUCER_ID"
    );
    assert_eq!(client.produce("idem", 0, batch(4, 1)).await, (0, 4));
}

#[tokio::test]
async fn a_compacted_topic_refuses_records_without_a_key_and_names_them() {
    use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
    use kafka_protocol::messages::{CreateTopicsRequest, RequestKind, ResponseKind};
    use kafka_protocol::protocol::StrBytes;
    use spool_testkit::TestRecord;

    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    let create = CreateTopicsRequest::default()
        .with_timeout_ms(5000)
        .with_topics(vec![
            CreatableTopic::default()
                .with_name(spool_testkit::topic_name("table"))
                .with_num_partitions(1)
                .with_replication_factor(1)
                .with_configs(vec![
                    CreatableTopicConfig::default()
                        .with_name(StrBytes::from_static_str("cleanup.policy"))
                        .with_value(Some(StrBytes::from_static_str("compact"))),
                ]),
        ]);
    let ResponseKind::CreateTopics(created) =
        client.call(RequestKind::CreateTopics(create), 7).await
    else {
        panic!("not a CreateTopics response")
    };
    assert_eq!(created.topics[0].error_code, 0);

    let keyed = |key: Option<&[u8]>| TestRecord {
        key: key.map(<[u8]>::to_vec),
        ..TestRecord::value(b"v".to_vec())
    };
    let mixed = BatchBuilder::new()
        .record(keyed(Some(b"a")))
        .record(keyed(None))
        .record(keyed(Some(b"b")))
        .record(keyed(None))
        .build();
    for version in [7, 8, 9] {
        let ResponseKind::Produce(response) = client
            .call(produce_request("table", 0, mixed.clone()), version)
            .await
        else {
            panic!("not a Produce response")
        };
        let partition = &response.responses[0].partition_responses[0];
        assert_eq!(partition.error_code, 87, "INVALID_RECORD");
        if version >= 8 {
            let indexes: Vec<i32> = partition
                .record_errors
                .iter()
                .map(|e| e.batch_index)
                .collect();
            assert_eq!(indexes, vec![1, 3]);
            assert!(
                partition
                    .error_message
                    .as_deref()
                    .unwrap()
                    .contains("without key")
            );
        }
    }
    // Nothing was written; keyed batches go in.
    let good = BatchBuilder::new().record(keyed(Some(b"a"))).build();
    assert_eq!(client.produce("table", 0, good).await, (0, 0));
}
