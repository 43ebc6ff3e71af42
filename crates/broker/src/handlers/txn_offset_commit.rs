//! TxnOffsetCommit (key 28): offsets committed in the producer's transaction, sent to
//! the group's coordinator. They are stored pending and become the group's committed
//! offsets when the transaction commits (dropped when it aborts); until then an
//! OffsetFetch that requires stable offsets is answered `UNSTABLE_OFFSET_COMMIT`.
//! From v3 the producer names the consumer's member and generation (KIP-447), which
//! are checked as OffsetCommit checks them. v4 differs from v3 only in allowing
//! `TRANSACTION_ABORTABLE`; v5 is KIP-890's transactions v2, not built.

use std::sync::Arc;

use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{
    ApiKey, ResponseKind, TxnOffsetCommitRequest, TxnOffsetCommitResponse,
};
use spool_metadata::CommittedOffset;

use super::api::{ApiDecl, RequestContext};
use crate::errors::{code, group_error_code, knows_producer_fenced, txn_error_code};
use crate::shared::Shared;
use spool_security::acl::Operation;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::TxnOffsetCommit,
    min: 0,
    max: 4,
};

pub(crate) async fn handle(
    request: TxnOffsetCommitRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let version = context.version;
    let access = &context.access;
    let shared = Arc::clone(shared);
    let group = request.group_id.0.to_string();
    let refused = if !access.transactional_id(Operation::Write, &request.transactional_id) {
        Some(code::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    } else if !access.group(Operation::Read, &group) {
        Some(code::GROUP_AUTHORIZATION_FAILED)
    } else {
        None
    };
    let topic_denied = |name: &str| !access.topic(Operation::Read, name);
    let commit_ms = shared.clock().now_ms();
    let mut offsets = Vec::new();
    let mut too_large = false;
    for topic in &request.topics {
        if topic_denied(topic.name.0.as_str()) {
            continue;
        }
        let known = shared.topics().get(topic.name.0.as_str());
        for partition in &topic.partitions {
            let Some(known) = known
                .as_ref()
                .filter(|t| t.has_partition(partition.partition_index))
            else {
                continue;
            };
            let metadata = partition
                .committed_metadata
                .as_ref()
                .map(ToString::to_string);
            too_large |= metadata
                .as_ref()
                .is_some_and(|m| m.len() > shared.groups().config().offset_metadata_max_bytes);
            offsets.push(CommittedOffset {
                group: group.clone(),
                topic: topic.name.0.to_string(),
                topic_id: known.record.id,
                partition: partition.partition_index,
                offset: partition.committed_offset,
                leader_epoch: partition.committed_leader_epoch,
                metadata,
                commit_ms,
            });
        }
    }
    let checked = shared
        .groups()
        .check_transactional_commit(
            &group,
            request.member_id.as_str(),
            request.group_instance_id.as_ref().map(|id| id.as_str()),
            request.generation_id,
        )
        .await
        .map_err(group_error_code);
    let outcome = match (refused, checked) {
        (Some(refusal), _) => Err(refusal),
        (None, Err(error)) => Err(error),
        (None, Ok(())) if too_large => Err(code::OFFSET_METADATA_TOO_LARGE),
        (None, Ok(())) if offsets.is_empty() => Ok(()),
        (None, Ok(())) => shared
            .transactions()
            .commit_offsets(
                request.transactional_id.0.as_str(),
                request.producer_id.0,
                request.producer_epoch,
                &offsets,
            )
            .await
            .map_err(|error| {
                txn_error_code(
                    error,
                    knows_producer_fenced(ApiKey::TxnOffsetCommit, version),
                )
            }),
    };
    let topics = request
        .topics
        .into_iter()
        .map(|topic| {
            let known = shared.topics().get(topic.name.0.as_str());
            let denied = refused.is_none() && topic_denied(topic.name.0.as_str());
            let partitions = topic
                .partitions
                .iter()
                .map(|partition| {
                    let exists = known
                        .as_ref()
                        .is_some_and(|t| t.has_partition(partition.partition_index));
                    let error = match &outcome {
                        _ if denied => code::TOPIC_AUTHORIZATION_FAILED,
                        Err(error) if refused.is_some() => *error,
                        _ if !exists => code::UNKNOWN_TOPIC_OR_PARTITION,
                        Ok(()) => code::NONE,
                        Err(error) => *error,
                    };
                    TxnOffsetCommitResponsePartition::default()
                        .with_partition_index(partition.partition_index)
                        .with_error_code(error)
                })
                .collect();
            TxnOffsetCommitResponseTopic::default()
                .with_name(topic.name)
                .with_partitions(partitions)
        })
        .collect();
    ResponseKind::TxnOffsetCommit(TxnOffsetCommitResponse::default().with_topics(topics))
}
