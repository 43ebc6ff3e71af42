//! Typed shortcuts for the transaction requests, as a transactional producer sends
//! them: each returns the error code (and what else the answer carries), at the
//! version given.
#![allow(clippy::panic)]

use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::describe_transactions_response::TransactionState;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, BrokerId, DescribeTransactionsRequest,
    EndTxnRequest, FetchRequest, GroupId, InitProducerIdRequest, ProducerId, RequestKind,
    ResponseKind, TransactionalId, TxnOffsetCommitRequest,
};
use kafka_protocol::protocol::StrBytes;

use crate::{RawClient, topic_name};

fn id(transactional_id: &str) -> TransactionalId {
    TransactionalId(StrBytes::from_string(transactional_id.to_owned()))
}

/// A producer's identity in a transaction: its transactional id, producer id, epoch.
#[derive(Debug, Clone)]
pub struct TxnProducer {
    pub transactional_id: String,
    pub producer_id: i64,
    pub epoch: i16,
}

impl RawClient {
    /// InitProducerId (v4) for `transactional_id` with `timeout_ms`: the error code
    /// and the producer.
    pub async fn init_transactional(
        &mut self,
        transactional_id: &str,
        timeout_ms: i32,
    ) -> (i16, TxnProducer) {
        let request = InitProducerIdRequest::default()
            .with_transactional_id(Some(id(transactional_id)))
            .with_transaction_timeout_ms(timeout_ms)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1);
        let ResponseKind::InitProducerId(response) =
            self.call(RequestKind::InitProducerId(request), 4).await
        else {
            panic!("not an InitProducerId response")
        };
        (
            response.error_code,
            TxnProducer {
                transactional_id: transactional_id.to_owned(),
                producer_id: response.producer_id.0,
                epoch: response.producer_epoch,
            },
        )
    }

    /// AddPartitionsToTxn at `version` (≤ 3) of `partitions` of `topic`: each
    /// partition's error code.
    pub async fn add_partitions_to_txn(
        &mut self,
        version: i16,
        producer: &TxnProducer,
        topic: &str,
        partitions: &[i32],
    ) -> Vec<i16> {
        let request = AddPartitionsToTxnRequest::default()
            .with_v3_and_below_transactional_id(id(&producer.transactional_id))
            .with_v3_and_below_producer_id(ProducerId(producer.producer_id))
            .with_v3_and_below_producer_epoch(producer.epoch)
            .with_v3_and_below_topics(vec![
                AddPartitionsToTxnTopic::default()
                    .with_name(topic_name(topic))
                    .with_partitions(partitions.to_vec()),
            ]);
        let ResponseKind::AddPartitionsToTxn(response) = self
            .call(RequestKind::AddPartitionsToTxn(request), version)
            .await
        else {
            panic!("not an AddPartitionsToTxn response")
        };
        response
            .results_by_topic_v3_and_below
            .into_iter()
            .flat_map(|t| t.results_by_partition)
            .map(|p| p.partition_error_code)
            .collect()
    }

    /// AddOffsetsToTxn (v3) of `group`: the error code.
    pub async fn add_offsets_to_txn(&mut self, producer: &TxnProducer, group: &str) -> i16 {
        let request = AddOffsetsToTxnRequest::default()
            .with_transactional_id(id(&producer.transactional_id))
            .with_producer_id(ProducerId(producer.producer_id))
            .with_producer_epoch(producer.epoch)
            .with_group_id(GroupId(StrBytes::from_string(group.to_owned())));
        let ResponseKind::AddOffsetsToTxn(response) =
            self.call(RequestKind::AddOffsetsToTxn(request), 3).await
        else {
            panic!("not an AddOffsetsToTxn response")
        };
        response.error_code
    }

    /// EndTxn at `version`: the error code.
    pub async fn end_txn(&mut self, version: i16, producer: &TxnProducer, commit: bool) -> i16 {
        let request = EndTxnRequest::default()
            .with_transactional_id(id(&producer.transactional_id))
            .with_producer_id(ProducerId(producer.producer_id))
            .with_producer_epoch(producer.epoch)
            .with_committed(commit);
        let ResponseKind::EndTxn(response) = self.call(RequestKind::EndTxn(request), version).await
        else {
            panic!("not an EndTxn response")
        };
        response.error_code
    }

    /// TxnOffsetCommit (v3, outside any group membership) of `offset` for partition 0
    /// of `topic`: the partition's error code.
    pub async fn txn_offset_commit(
        &mut self,
        producer: &TxnProducer,
        group: &str,
        topic: &str,
        offset: i64,
    ) -> i16 {
        let request = TxnOffsetCommitRequest::default()
            .with_transactional_id(id(&producer.transactional_id))
            .with_group_id(GroupId(StrBytes::from_string(group.to_owned())))
            .with_producer_id(ProducerId(producer.producer_id))
            .with_producer_epoch(producer.epoch)
            .with_generation_id(-1)
            .with_topics(vec![
                TxnOffsetCommitRequestTopic::default()
                    .with_name(topic_name(topic))
                    .with_partitions(vec![
                        TxnOffsetCommitRequestPartition::default()
                            .with_partition_index(0)
                            .with_committed_offset(offset),
                    ]),
            ]);
        let ResponseKind::TxnOffsetCommit(response) =
            self.call(RequestKind::TxnOffsetCommit(request), 3).await
        else {
            panic!("not a TxnOffsetCommit response")
        };
        response.topics[0].partitions[0].error_code
    }

    /// DescribeTransactions of one id.
    pub async fn describe_transaction(&mut self, transactional_id: &str) -> TransactionState {
        let request = DescribeTransactionsRequest::default()
            .with_transactional_ids(vec![id(transactional_id)]);
        let ResponseKind::DescribeTransactions(response) = self
            .call(RequestKind::DescribeTransactions(request), 0)
            .await
        else {
            panic!("not a DescribeTransactions response")
        };
        response
            .transaction_states
            .into_iter()
            .next()
            .unwrap_or_else(|| panic!("no state in the answer"))
    }

    /// Fetch (v11) of one partition from `offset`, read_committed or not.
    pub async fn fetch_isolated(
        &mut self,
        topic: &str,
        partition: i32,
        offset: i64,
        read_committed: bool,
    ) -> PartitionData {
        let request = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(0)
            .with_max_bytes(1 << 20)
            .with_isolation_level(i8::from(read_committed))
            .with_topics(vec![
                FetchTopic::default()
                    .with_topic(topic_name(topic))
                    .with_partitions(vec![
                        FetchPartition::default()
                            .with_partition(partition)
                            .with_fetch_offset(offset)
                            .with_partition_max_bytes(1 << 20),
                    ]),
            ]);
        let ResponseKind::Fetch(response) = self.call(RequestKind::Fetch(request), 11).await else {
            panic!("not a Fetch response")
        };
        response
            .responses
            .into_iter()
            .flat_map(|t| t.partitions)
            .next()
            .unwrap_or_else(|| panic!("no partition in the answer"))
    }
}
