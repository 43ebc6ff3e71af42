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
