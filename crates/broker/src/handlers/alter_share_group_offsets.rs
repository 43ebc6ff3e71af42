//! AlterShareGroupOffsets (key 91, KIP-932): moves the start offset of share-partitions
//! of a group without members; what was in flight is forgotten (the records from the
//! new start on are delivered as if never delivered). The state is written to the
//! store at the epoch it had; the partition's leader reads it back when a member next
//! opens a share session with it (`held::forget_if_idle`).

use std::sync::Arc;

use kafka_protocol::messages::alter_share_group_offsets_response::{
    AlterShareGroupOffsetsResponsePartition, AlterShareGroupOffsetsResponseTopic,
};
use kafka_protocol::messages::{
    AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse, ApiKey, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;
use spool_metadata::SharePartitionRecord;
use spool_security::acl::Operation;
use spool_share::SharePartition;

use super::api::{ApiDecl, RequestContext};
use crate::errors::code;
use crate::share::SharePartitionId;
use crate::shared::Shared;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::AlterShareGroupOffsets,
    min: 0,
    max: 0,
};

pub(crate) async fn handle(
    request: AlterShareGroupOffsetsRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let group = request.group_id.0.to_string();
    let refused = |code: i16, message: String| {
        ResponseKind::AlterShareGroupOffsets(
            AlterShareGroupOffsetsResponse::default()
                .with_error_code(code)
                .with_error_message(Some(StrBytes::from_string(message))),
        )
    };
    if !context.access.group(Operation::Read, &group) {
        return refused(
            code::GROUP_AUTHORIZATION_FAILED,
            format!("may not alter group {group}"),
        );
    }
    if !shared.groups().owns(&group) {
        return refused(
            code::NOT_COORDINATOR,
            format!("this broker does not coordinate group {group}"),
        );
    }
    if shared.share().has_members(&group) {
        return refused(
            code::NON_EMPTY_GROUP,
            format!("share group {group} has members: stop them first"),
        );
    }
    if shared.groups().member_count(&group) > 0 {
        return refused(
            code::GROUP_ID_NOT_FOUND,
            format!("group {group} is not a share group"),
        );
    }
    let stored = match shared.metadata().share_partitions(Some(&group)).await {
        Ok(stored) => stored,
        Err(error) => return refused(code::COORDINATOR_NOT_AVAILABLE, error.to_string()),
    };
    let mut responses = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        let name = topic.topic_name.0.to_string();
        let known = shared.topics().get(&name);
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for wanted in topic.partitions {
            let answer = AlterShareGroupOffsetsResponsePartition::default()
                .with_partition_index(wanted.partition_index);
            let outcome = match &known {
                _ if !context.access.topic(Operation::Read, &name) => Err((
                    code::TOPIC_AUTHORIZATION_FAILED,
                    format!("may not read topic {name}"),
                )),
                None => Err((code::UNKNOWN_TOPIC_OR_PARTITION, format!("no topic {name}"))),
                Some(t) if !(0..t.record.partitions).contains(&wanted.partition_index) => Err((
                    code::UNKNOWN_TOPIC_OR_PARTITION,
                    format!("topic {name} has no partition {}", wanted.partition_index),
                )),
                _ if wanted.start_offset < 0 => Err((
                    code::INVALID_REQUEST,
                    "a start offset is at least 0".to_owned(),
                )),
                Some(t) => {
                    let epoch = stored
                        .iter()
                        .find(|r| {
                            r.topic_id == t.record.id && r.partition == wanted.partition_index
                        })
                        .map_or(0, |r| r.state_epoch);
                    let record = SharePartitionRecord {
                        group: group.clone(),
                        topic_id: t.record.id,
                        partition: wanted.partition_index,
                        state_epoch: epoch,
                        start_offset: wanted.start_offset,
                        state: SharePartition::new(wanted.start_offset).stored().to_text(),
                    };
                    match shared.metadata().save_share_partition(&record, &[]).await {
                        Ok(()) => {
                            let id = SharePartitionId {
                                group: group.clone(),
                                topic_id: t.record.id,
                                partition: wanted.partition_index,
                            };
                            crate::share::held::forget_if_idle(shared, &id).await;
                            tracing::info!(
                                group,
                                topic = name,
                                partition = wanted.partition_index,
                                start = wanted.start_offset,
                                "share group start offset moved"
                            );
                            Ok(())
                        }
                        Err(error) => Err((code::COORDINATOR_NOT_AVAILABLE, error.to_string())),
                    }
                }
            };
            partitions.push(match outcome {
                Ok(()) => answer,
                Err((code, message)) => answer
                    .with_error_code(code)
                    .with_error_message(Some(StrBytes::from_string(message))),
            });
        }
        responses.push(
            AlterShareGroupOffsetsResponseTopic::default()
                .with_topic_name(topic.topic_name)
                .with_topic_id(known.map(|t| t.record.id).unwrap_or_default())
                .with_partitions(partitions),
        );
    }
    ResponseKind::AlterShareGroupOffsets(
        AlterShareGroupOffsetsResponse::default().with_responses(responses),
    )
}
