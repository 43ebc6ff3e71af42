//! Leader epochs end to end on one broker: each start takes ownership under a new
//! epoch, every stored batch carries the epoch it was written under, Metadata reports
//! it, Fetch / ListOffsets / OffsetForLeaderEpoch check the client's current epoch, and
//! OffsetForLeaderEpoch answers from the epoch history, across restarts.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::{
    BrokerId, FetchRequest, ListOffsetsRequest, MetadataRequest, OffsetForLeaderEpochRequest,
    RequestKind, ResponseKind,
};
use spool_testkit::{BatchBuilder, RawClient, TestBroker, topic_name};

const FENCED_LEADER_EPOCH: i16 = 74;
const UNKNOWN_LEADER_EPOCH: i16 = 75;

async fn metadata_epoch(client: &mut RawClient, topic: &str) -> i32 {
    let request = MetadataRequest::default().with_topics(Some(vec![
        MetadataRequestTopic::default().with_name(Some(topic_name(topic))),
    ]));
    let ResponseKind::Metadata(response) = client.call(RequestKind::Metadata(request), 9).await
    else {
        panic!("not a Metadata response")
    };
    response.topics[0].partitions[0].leader_epoch
}

/// Fetch v12 of partition 0 from `offset` with the client's current leader epoch:
/// (error code, the `partitionLeaderEpoch` of every batch returned).
async fn fetch_epochs(
    client: &mut RawClient,
    topic: &str,
    offset: i64,
    epoch: i32,
) -> (i16, Vec<i32>) {
    let request = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_bytes(1 << 20)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(topic_name(topic))
                .with_partitions(vec![
                    FetchPartition::default()
                        .with_partition(0)
                        .with_fetch_offset(offset)
                        .with_current_leader_epoch(epoch)
                        .with_partition_max_bytes(1 << 20),
                ]),
        ]);
    let ResponseKind::Fetch(response) = client.call(RequestKind::Fetch(request), 12).await else {
        panic!("not a Fetch response")
    };
    let partition = &response.responses[0].partitions[0];
    let mut epochs = Vec::new();
    let mut records = partition.records.clone().unwrap_or_default();
    while records.len() >= 61 {
        let length = i32::from_be_bytes(records[8..12].try_into().unwrap());
        epochs.push(i32::from_be_bytes(records[12..16].try_into().unwrap()));
        let _ = records.split_to(12 + usize::try_from(length).unwrap());
    }
    (partition.error_code, epochs)
}

async fn list_latest(client: &mut RawClient, topic: &str, epoch: i32) -> (i16, i64, i32) {
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![
            ListOffsetsTopic::default()
                .with_name(topic_name(topic))
                .with_partitions(vec![
                    ListOffsetsPartition::default()
                        .with_partition_index(0)
                        .with_current_leader_epoch(epoch)
                        .with_timestamp(-1),
                ]),
        ]);
    let ResponseKind::ListOffsets(response) =
        client.call(RequestKind::ListOffsets(request), 4).await
    else {
        panic!("not a ListOffsets response")
    };
    let partition = &response.topics[0].partitions[0];
    (
        partition.error_code,
        partition.offset,
        partition.leader_epoch,
    )
}

/// OffsetForLeaderEpoch v3 for partition 0: (error code, epoch, end offset).
async fn end_offset(
    client: &mut RawClient,
    topic: &str,
    current: i32,
    epoch: i32,
) -> (i16, i32, i64) {
    let request = OffsetForLeaderEpochRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![
            OffsetForLeaderTopic::default()
                .with_topic(topic_name(topic))
                .with_partitions(vec![
                    OffsetForLeaderPartition::default()
                        .with_partition(0)
                        .with_current_leader_epoch(current)
                        .with_leader_epoch(epoch),
                ]),
        ]);
    let ResponseKind::OffsetForLeaderEpoch(response) = client
        .call(RequestKind::OffsetForLeaderEpoch(request), 3)
        .await
    else {
        panic!("not an OffsetForLeaderEpoch response")
    };
    let partition = &response.topics[0].partitions[0];
    (
        partition.error_code,
        partition.leader_epoch,
        partition.end_offset,
    )
}

fn batch(values: usize) -> Vec<u8> {
    BatchBuilder::new().values(values, 10).build()
}

#[tokio::test]
async fn every_start_is_a_new_epoch_that_batches_carry_and_requests_are_checked_against() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("epochs", 1).await, 0);
    assert_eq!(client.produce("epochs", 0, batch(3)).await, (0, 0));
    assert_eq!(metadata_epoch(&mut client, "epochs").await, 0);

    let data = broker.stop().await;
    let broker = TestBroker::start_in(data).await;
    let mut client = broker.client().await;
    assert_eq!(
        metadata_epoch(&mut client, "epochs").await,
        1,
        "a restart takes ownership anew"
    );
    assert_eq!(client.produce("epochs", 0, batch(2)).await, (0, 3));

    let data = broker.stop().await;
    let broker = TestBroker::start_in(data).await;
    let mut client = broker.client().await;
    assert_eq!(metadata_epoch(&mut client, "epochs").await, 2);
    assert_eq!(client.produce("epochs", 0, batch(1)).await, (0, 5));

    assert_eq!(
        fetch_epochs(&mut client, "epochs", 0, 2).await,
        (0, vec![0, 1, 2]),
        "each batch carries the epoch it was written under"
    );
    assert_eq!(
        fetch_epochs(&mut client, "epochs", 0, -1).await.0,
        0,
        "no epoch: not checked"
    );
    assert_eq!(
        fetch_epochs(&mut client, "epochs", 0, 1).await.0,
        FENCED_LEADER_EPOCH
    );
    assert_eq!(
        fetch_epochs(&mut client, "epochs", 0, 3).await.0,
        UNKNOWN_LEADER_EPOCH
    );

    assert_eq!(list_latest(&mut client, "epochs", 2).await, (0, 6, 2));
    assert_eq!(
        list_latest(&mut client, "epochs", 0).await.0,
        FENCED_LEADER_EPOCH
    );
    assert_eq!(
        list_latest(&mut client, "epochs", 9).await.0,
        UNKNOWN_LEADER_EPOCH
    );

    assert_eq!(
        end_offset(&mut client, "epochs", 2, 0).await,
        (0, 0, 3),
        "epoch 0 ended at 3"
    );
    assert_eq!(end_offset(&mut client, "epochs", 2, 1).await, (0, 1, 5));
    assert_eq!(
        end_offset(&mut client, "epochs", 2, 2).await,
        (0, 2, 6),
        "the latest: the log end"
    );
    assert_eq!(
        end_offset(&mut client, "epochs", -1, 7).await,
        (0, -1, -1),
        "newer than any"
    );
    assert_eq!(
        end_offset(&mut client, "epochs", 1, 1).await.0,
        FENCED_LEADER_EPOCH
    );
    assert_eq!(
        end_offset(&mut client, "nope", -1, 1).await.0,
        3,
        "unknown topic"
    );
    drop(broker);
}
