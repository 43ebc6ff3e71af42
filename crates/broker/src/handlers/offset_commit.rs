//! OffsetCommit (key 8): a group's consumed positions, stored in the metadata store
//! before the answer. Partitions that do not exist get `UNKNOWN_TOPIC_OR_PARTITION`;
//! a refusal of the member (generation, membership) applies to every partition.

use std::sync::Arc;

use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{ApiKey, OffsetCommitRequest, OffsetCommitResponse, ResponseKind};
use spool_coordinator::{CommitOffset, CommitRequest};

use super::api::{ApiDecl, RequestContext};
use crate::errors::{code, group_error_code, group_result_code};
use crate::shared::Shared;
use spool_security::acl::Operation;

/// v9 is the new (KIP-848) consumer protocol's; not implemented.
pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::OffsetCommit,
    // Below v2: Kafka 3.9's versions, converted (spool_protocol::legacy).
    min: 0,
    max: 9,
};

pub(crate) async fn handle(
    request: OffsetCommitRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let access = &context.access;
    let shared = Arc::clone(shared);
    let group_denied = !access.group(Operation::Read, request.group_id.0.as_str());
    // Per partition in request order, why it is refused (`None`: committed).
    let mut refused = Vec::new();
    let mut offsets = Vec::new();
    for topic in &request.topics {
        let exists = shared.topics().get(topic.name.0.as_str());
        let topic_denied = !access.topic(Operation::Read, topic.name.0.as_str());
        for partition in &topic.partitions {
            let found = exists
                .as_ref()
                .filter(|t| t.has_partition(partition.partition_index));
            let refusal = if group_denied {
                Some(code::GROUP_AUTHORIZATION_FAILED)
            } else if topic_denied {
                Some(code::TOPIC_AUTHORIZATION_FAILED)
            } else {
                found.is_none().then_some(code::UNKNOWN_TOPIC_OR_PARTITION)
            };
            refused.push(refusal);
            if let (Some(found), None) = (found, refusal) {
                offsets.push(CommitOffset {
                    topic: topic.name.0.to_string(),
                    topic_id: found.record.id,
                    partition: partition.partition_index,
                    offset: partition.committed_offset,
                    leader_epoch: partition.committed_leader_epoch,
                    metadata: partition
                        .committed_metadata
                        .as_ref()
                        .map(ToString::to_string),
                });
            }
        }
    }
    let commit = CommitRequest {
        group_id: request.group_id.0.to_string(),
        generation: request.generation_id_or_member_epoch,
        member_id: request.member_id.to_string(),
        group_instance_id: request.group_instance_id.as_ref().map(ToString::to_string),
        offsets,
        api_version: context.version,
    };
    let outcome = if commit.offsets.is_empty() && group_denied {
        Ok(Vec::new())
    } else {
        shared.groups().commit(commit).await
    };
    let mut results = match &outcome {
        Ok(results) => results.iter().map(|r| group_result_code(*r)).collect(),
        Err(_) => Vec::new(),
    }
    .into_iter();
    let mut refused = refused.into_iter();
    let topics = request
        .topics
        .into_iter()
        .map(|topic| {
            let partitions = topic
                .partitions
                .iter()
                .map(|partition| {
                    let error = match (&outcome, refused.next()) {
                        (_, Some(Some(refusal))) => refusal,
                        (_, None) => code::UNKNOWN_TOPIC_OR_PARTITION,
                        (Err(error), Some(None)) => group_error_code(*error),
                        (Ok(_), Some(None)) => results.next().unwrap_or(code::NONE),
                    };
                    OffsetCommitResponsePartition::default()
                        .with_partition_index(partition.partition_index)
                        .with_error_code(error)
                })
                .collect();
            OffsetCommitResponseTopic::default()
                .with_name(topic.name)
                .with_partitions(partitions)
        })
        .collect();
    ResponseKind::OffsetCommit(OffsetCommitResponse::default().with_topics(topics))
}
