//! Transactions over raw requests, for what the client suites cannot reach: the
//! coordinator's error codes by version, DescribeTransactions and ListTransactions,
//! read_committed Fetch and ListOffsets at the last stable offset, DeleteRecords held
//! by an open transaction, offsets pending until commit (`UNSTABLE_OFFSET_COMMIT`),
//! the timeout abort, and transactions across a broker restart.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::{
    BrokerId, DeleteRecordsRequest, GroupId, ListOffsetsRequest, ListTransactionsRequest,
    OffsetFetchRequest, RequestKind, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;
use spool_testkit::{BatchBuilder, RawClient, TestBroker, TxnProducer, topic_name};

const TRANSACTIONAL: i16 = 1 << 4;
const NONE: i16 = 0;
const OFFSET_OUT_OF_RANGE: i16 = 1;
const INVALID_PRODUCER_EPOCH: i16 = 47;
const INVALID_TXN_STATE: i16 = 48;
const INVALID_PRODUCER_ID_MAPPING: i16 = 49;
const INVALID_TRANSACTION_TIMEOUT: i16 = 50;
const UNSTABLE_OFFSET_COMMIT: i16 = 88;
const PRODUCER_FENCED: i16 = 90;
const TRANSACTIONAL_ID_NOT_FOUND: i16 = 105;

/// A transactional batch of `records` from `producer`, at `sequence`.
fn txn_batch(producer: &TxnProducer, sequence: i32, records: usize) -> Vec<u8> {
    BatchBuilder::new()
        .producer(producer.producer_id, producer.epoch, sequence)
        .attributes(TRANSACTIONAL)
        .values(records, 10)
        .build()
}

/// ListOffsets (v5) latest of partition 0, read_committed or not.
async fn latest(client: &mut RawClient, topic: &str, read_committed: bool) -> i64 {
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_isolation_level(i8::from(read_committed))
        .with_topics(vec![
            ListOffsetsTopic::default()
                .with_name(topic_name(topic))
                .with_partitions(vec![
                    ListOffsetsPartition::default()
                        .with_partition_index(0)
                        .with_timestamp(-1),
                ]),
        ]);
    let ResponseKind::ListOffsets(response) =
        client.call(RequestKind::ListOffsets(request), 5).await
    else {
        panic!("not a ListOffsets response")
    };
    response.topics[0].partitions[0].offset
}

/// OffsetFetch (v7) of partition 0 of `topic` for `group`: (offset, error code).
async fn offset_fetch(
    client: &mut RawClient,
    group: &str,
    topic: &str,
    require_stable: bool,
) -> (i64, i16) {
    let request = OffsetFetchRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_owned())))
        .with_require_stable(require_stable)
        .with_topics(Some(vec![
            OffsetFetchRequestTopic::default()
                .with_name(topic_name(topic))
                .with_partition_indexes(vec![0]),
        ]));
    let ResponseKind::OffsetFetch(response) =
        client.call(RequestKind::OffsetFetch(request), 7).await
    else {
        panic!("not an OffsetFetch response")
    };
    let partition = &response.topics[0].partitions[0];
    (partition.committed_offset, partition.error_code)
}

#[tokio::test]
async fn a_committed_transaction_is_described_listed_and_read_committed_after_its_marker() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("t", 2).await, 0);
    let (error, producer) = client.init_transactional("tx-a", 60_000).await;
    assert_eq!((error, producer.epoch), (NONE, 0));
    assert_eq!(
        client
            .add_partitions_to_txn(3, &producer, "t", &[0, 1])
            .await,
        vec![NONE, NONE]
    );
    let (error, base) = client.produce("t", 0, txn_batch(&producer, 0, 3)).await;
    assert_eq!((error, base), (NONE, 0));

    let open = client.fetch_isolated("t", 0, 0, true).await;
    assert_eq!((open.high_watermark, open.last_stable_offset), (3, 0));
    assert!(
        open.records.unwrap_or_default().is_empty(),
        "read_committed sees nothing open"
    );
    let uncommitted = client.fetch_isolated("t", 0, 0, false).await;
    assert!(!uncommitted.records.unwrap_or_default().is_empty());
    assert_eq!(latest(&mut client, "t", true).await, 0);
    assert_eq!(latest(&mut client, "t", false).await, 3);

    let described = client.describe_transaction("tx-a").await;
    assert_eq!(described.error_code, NONE);
    assert_eq!(described.transaction_state.as_str(), "Ongoing");
    assert_eq!(described.producer_id.0, producer.producer_id);
    assert_eq!(described.topics[0].partitions, vec![0, 1]);
    assert!(described.transaction_start_time_ms > 0);
    let unknown = client.describe_transaction("nobody").await;
    assert_eq!(unknown.error_code, TRANSACTIONAL_ID_NOT_FOUND);

    let request = ListTransactionsRequest::default().with_state_filters(vec![
        StrBytes::from_static_str("Ongoing"),
        StrBytes::from_static_str("Bogus"),
    ]);
    let ResponseKind::ListTransactions(listed) =
        client.call(RequestKind::ListTransactions(request), 1).await
    else {
        panic!("not a ListTransactions response")
    };
    assert_eq!(listed.transaction_states.len(), 1);
    assert_eq!(
        listed.transaction_states[0].transactional_id.0.as_str(),
        "tx-a"
    );
    assert_eq!(
        listed.unknown_state_filters,
        vec![StrBytes::from_static_str("Bogus")]
    );

    // DeleteRecords may not pass the open transaction's first offset.
    let request = DeleteRecordsRequest::default().with_topics(vec![
        DeleteRecordsTopic::default()
            .with_name(topic_name("t"))
            .with_partitions(vec![
                DeleteRecordsPartition::default()
                    .with_partition_index(0)
                    .with_offset(2),
            ]),
    ]);
    let ResponseKind::DeleteRecords(deleted) =
        client.call(RequestKind::DeleteRecords(request), 2).await
    else {
        panic!("not a DeleteRecords response")
    };
    assert_eq!(
        deleted.topics[0].partitions[0].error_code,
        OFFSET_OUT_OF_RANGE
    );

    assert_eq!(client.end_txn(3, &producer, true).await, NONE);
    let committed = client.fetch_isolated("t", 0, 0, true).await;
    assert_eq!(
        (committed.high_watermark, committed.last_stable_offset),
        (4, 4),
        "data and marker"
    );
    assert!(!committed.records.unwrap_or_default().is_empty());
    assert!(
        committed
            .aborted_transactions
            .unwrap_or_default()
            .is_empty()
    );
    assert_eq!(latest(&mut client, "t", true).await, 4);
    assert_eq!(
        client
            .describe_transaction("tx-a")
            .await
            .transaction_state
            .as_str(),
        "CompleteCommit"
    );
    assert_eq!(
        client.end_txn(3, &producer, true).await,
        NONE,
        "a retried commit"
    );
    assert_eq!(client.end_txn(3, &producer, false).await, INVALID_TXN_STATE);
}

#[tokio::test]
async fn an_aborted_transaction_is_listed_in_read_committed_fetches() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("t", 1).await, 0);
    let (_, producer) = client.init_transactional("tx-b", 60_000).await;
    client.add_partitions_to_txn(3, &producer, "t", &[0]).await;
    client.produce("t", 0, txn_batch(&producer, 0, 2)).await;
    assert_eq!(client.end_txn(3, &producer, false).await, NONE);
    let read = client.fetch_isolated("t", 0, 0, true).await;
    assert_eq!(read.last_stable_offset, 3);
    let aborted = read.aborted_transactions.unwrap_or_default();
    assert_eq!(aborted.len(), 1);
    assert_eq!(
        (aborted[0].producer_id.0, aborted[0].first_offset),
        (producer.producer_id, 0)
    );
    assert!(
        client
            .fetch_isolated("t", 0, 0, false)
            .await
            .aborted_transactions
            .unwrap_or_default()
            .is_empty(),
        "read_uncommitted lists none"
    );
}

#[tokio::test]
async fn fenced_producers_get_the_code_their_version_knows() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("t", 1).await, 0);
    let (_, old) = client.init_transactional("tx-c", 60_000).await;
    let (_, new) = client.init_transactional("tx-c", 60_000).await;
    assert_eq!((new.producer_id, new.epoch), (old.producer_id, 1));
    assert_eq!(
        client.add_partitions_to_txn(1, &old, "t", &[0]).await,
        vec![INVALID_PRODUCER_EPOCH]
    );
    assert_eq!(
        client.add_partitions_to_txn(2, &old, "t", &[0]).await,
        vec![PRODUCER_FENCED]
    );
    assert_eq!(client.end_txn(3, &old, true).await, PRODUCER_FENCED);
    let stranger = TxnProducer {
        producer_id: old.producer_id + 1000,
        ..new.clone()
    };
    assert_eq!(
        client.end_txn(3, &stranger, true).await,
        INVALID_PRODUCER_ID_MAPPING
    );
    assert_eq!(
        client.end_txn(3, &new, true).await,
        INVALID_TXN_STATE,
        "nothing begun"
    );
    let (error, _) = client.init_transactional("tx-d", 900_001).await;
    assert_eq!(error, INVALID_TRANSACTION_TIMEOUT);
    assert_eq!(
        client.add_partitions_to_txn(3, &new, "missing", &[0]).await,
        vec![3],
        "UNKNOWN_TOPIC_OR_PARTITION"
    );
}

#[tokio::test]
async fn offsets_committed_in_a_transaction_are_pending_until_it_commits() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("in", 1).await, 0);
    let (_, producer) = client.init_transactional("tx-e", 60_000).await;
    assert_eq!(
        client.txn_offset_commit(&producer, "g", "in", 7).await,
        INVALID_TXN_STATE,
        "the group was not added"
    );
    assert_eq!(client.add_offsets_to_txn(&producer, "g").await, NONE);
    assert_eq!(
        client.txn_offset_commit(&producer, "g", "in", 7).await,
        NONE
    );
    assert_eq!(
        offset_fetch(&mut client, "g", "in", true).await,
        (-1, UNSTABLE_OFFSET_COMMIT)
    );
    assert_eq!(
        offset_fetch(&mut client, "g", "in", false).await,
        (-1, NONE)
    );
    assert_eq!(client.end_txn(3, &producer, true).await, NONE);
    assert_eq!(offset_fetch(&mut client, "g", "in", true).await, (7, NONE));

    // An aborted transaction's offsets are dropped.
    assert_eq!(client.add_offsets_to_txn(&producer, "g").await, NONE);
    assert_eq!(
        client.txn_offset_commit(&producer, "g", "in", 9).await,
        NONE
    );
    assert_eq!(client.end_txn(3, &producer, false).await, NONE);
    assert_eq!(offset_fetch(&mut client, "g", "in", true).await, (7, NONE));
}

#[tokio::test]
async fn a_transaction_past_its_timeout_is_aborted_and_its_producer_fenced() {
    let broker = TestBroker::start_with(&[(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        "50",
    )])
    .await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("t", 1).await, 0);
    let (_, producer) = client.init_transactional("tx-f", 300).await;
    client.add_partitions_to_txn(3, &producer, "t", &[0]).await;
    assert_eq!(
        client.produce("t", 0, txn_batch(&producer, 0, 2)).await.0,
        NONE
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let state = client.describe_transaction("tx-f").await;
        if state.transaction_state.as_str() == "CompleteAbort" {
            assert_eq!(
                state.producer_epoch,
                producer.epoch + 1,
                "the abort fenced it"
            );
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never aborted: {state:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let read = client.fetch_isolated("t", 0, 0, true).await;
    assert_eq!(read.last_stable_offset, 3);
    assert_eq!(read.aborted_transactions.unwrap_or_default().len(), 1);
    assert_eq!(
        client.produce("t", 0, txn_batch(&producer, 2, 1)).await.0,
        INVALID_PRODUCER_EPOCH,
        "the partition refuses the old epoch"
    );
    assert_eq!(client.end_txn(3, &producer, true).await, PRODUCER_FENCED);
}

#[tokio::test]
async fn transactions_open_and_decided_survive_a_restart() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("t", 1).await, 0);
    let (_, aborting) = client.init_transactional("tx-g", 60_000).await;
    client.add_partitions_to_txn(3, &aborting, "t", &[0]).await;
    client.produce("t", 0, txn_batch(&aborting, 0, 2)).await;
    assert_eq!(client.end_txn(3, &aborting, false).await, NONE);
    let (_, open) = client.init_transactional("tx-h", 60_000).await;
    client.add_partitions_to_txn(3, &open, "t", &[0]).await;
    assert_eq!(
        client.produce("t", 0, txn_batch(&open, 0, 1)).await,
        (NONE, 3)
    );
    drop(client);
    let data = broker.stop().await;

    let broker = TestBroker::start_in(data).await;
    let mut client = broker.client().await;
    let read = client.fetch_isolated("t", 0, 0, true).await;
    assert_eq!(
        (read.high_watermark, read.last_stable_offset),
        (4, 3),
        "the open transaction still holds readers"
    );
    assert_eq!(read.aborted_transactions.unwrap_or_default().len(), 1);
    assert_eq!(client.end_txn(3, &open, true).await, NONE);
    let read = client.fetch_isolated("t", 0, 0, true).await;
    assert_eq!(read.last_stable_offset, 5);
    assert_eq!(
        client
            .describe_transaction("tx-h")
            .await
            .transaction_state
            .as_str(),
        "CompleteCommit"
    );
}

#[tokio::test]
async fn an_idle_transactional_id_expires() {
    let broker = TestBroker::start_with(&[
        (
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            "50",
        ),
        ("transactional.id.expiration.ms", "200"),
    ])
    .await;
    let mut client = broker.client().await;
    let (error, _) = client.init_transactional("tx-i", 60_000).await;
    assert_eq!(error, NONE);
    assert_eq!(client.describe_transaction("tx-i").await.error_code, NONE);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while client.describe_transaction("tx-i").await.error_code != TRANSACTIONAL_ID_NOT_FOUND {
        assert!(std::time::Instant::now() < deadline, "never expired");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let (error, fresh) = client.init_transactional("tx-i", 60_000).await;
    assert_eq!(
        (error, fresh.epoch),
        (NONE, 0),
        "a new producer id from epoch 0"
    );
}
