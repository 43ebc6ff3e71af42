//! AddPartitionsToTxn (key 24): partitions join the producer's transaction before it
//! writes to them. The client versions only (v0–v3); v4+ is KIP-890's batched,
//! broker-to-broker form, which Spool's coordinators do not need (markers travel
//! through the metadata store).
//!
//! A partition of no known topic fails with `UNKNOWN_TOPIC_OR_PARTITION`, and then the
//! others with `OPERATION_NOT_ATTEMPTED`, as Kafka answers; a coordinator error
//! applies to every partition.

use std::sync::Arc;

use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, ApiKey, ResponseKind,
};

use super::api::{ApiDecl, RequestContext};
use crate::errors::{code, knows_producer_fenced, txn_result_code};
use crate::shared::Shared;
use spool_security::acl::Operation;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::AddPartitionsToTxn,
    min: 0,
    max: 3,
};

pub(crate) async fn handle(
    request: AddPartitionsToTxnRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let version = context.version;
    let access = &context.access;
    let shared = Arc::clone(shared);
    let transactional_id = request.v3_and_below_transactional_id.0.as_str();
    let txn_denied = !access.transactional_id(Operation::Write, transactional_id);
    let topic_denied = |name: &str| !access.topic(Operation::Write, name);
    let mut partitions = Vec::new();
    // A partition refused makes the whole request not attempted.
    let mut unknown = txn_denied;
    for topic in &request.v3_and_below_topics {
        unknown |= topic_denied(topic.name.0.as_str());
        let known = shared.topics().get(topic.name.0.as_str());
        for index in &topic.partitions {
            match known
                .as_ref()
                .filter(|t| t.has_partition(*index) && t.takes_writes())
            {
                Some(known) => partitions.push((known.record.id, *index)),
                None => unknown = true,
            }
        }
    }
    let outcome = if unknown {
        None
    } else {
        Some(
            shared
                .transactions()
                .add_partitions(
                    transactional_id,
                    request.v3_and_below_producer_id.0,
                    request.v3_and_below_producer_epoch,
                    &partitions,
                )
                .await,
        )
    };
    let results = request
        .v3_and_below_topics
        .into_iter()
        .map(|topic| {
            let known = shared.topics().get(topic.name.0.as_str());
            let denied = topic_denied(topic.name.0.as_str());
            let results = topic
                .partitions
                .iter()
                .map(|index| {
                    let exists = known.as_ref().is_some_and(|t| t.has_partition(*index));
                    let read_only = known.as_ref().is_some_and(|t| !t.takes_writes());
                    let error = match &outcome {
                        Some(result) => txn_result_code(
                            *result,
                            knows_producer_fenced(ApiKey::AddPartitionsToTxn, version),
                        ),
                        None if txn_denied => code::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                        None if denied => code::TOPIC_AUTHORIZATION_FAILED,
                        // A view or a mirror is read-only, as produce says too.
                        None if read_only => code::INVALID_TOPIC_EXCEPTION,
                        None if exists => code::OPERATION_NOT_ATTEMPTED,
                        None => code::UNKNOWN_TOPIC_OR_PARTITION,
                    };
                    AddPartitionsToTxnPartitionResult::default()
                        .with_partition_index(*index)
                        .with_partition_error_code(error)
                })
                .collect();
            AddPartitionsToTxnTopicResult::default()
                .with_name(topic.name)
                .with_results_by_partition(results)
        })
        .collect();
    ResponseKind::AddPartitionsToTxn(
        AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(results),
    )
}
