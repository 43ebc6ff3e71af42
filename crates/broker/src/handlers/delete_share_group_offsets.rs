//! DeleteShareGroupOffsets (key 92, KIP-932): forgets a group's share-partitions of
//! whole topics (the group then starts them again by `share.auto.offset.reset`);
//! only while the group has no members.

use std::sync::Arc;

use kafka_protocol::messages::delete_share_group_offsets_response::DeleteShareGroupOffsetsResponseTopic;
use kafka_protocol::messages::{
    ApiKey, DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;
use spool_security::acl::Operation;

use super::api::{ApiDecl, RequestContext};
use crate::errors::code;
use crate::share::SharePartitionId;
use crate::shared::Shared;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::DeleteShareGroupOffsets,
    min: 0,
    max: 0,
};

pub(crate) async fn handle(
    request: DeleteShareGroupOffsetsRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let group = request.group_id.0.to_string();
    let refused = |code: i16, message: String| {
        ResponseKind::DeleteShareGroupOffsets(
            DeleteShareGroupOffsetsResponse::default()
                .with_error_code(code)
                .with_error_message(Some(StrBytes::from_string(message))),
        )
    };
    if !context.access.group(Operation::Delete, &group) {
        return refused(
            code::GROUP_AUTHORIZATION_FAILED,
            format!("may not delete from group {group}"),
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
    let stored = match shared.metadata().share_partitions(Some(&group)).await {
        Ok(stored) => stored,
        Err(error) => return refused(code::COORDINATOR_NOT_AVAILABLE, error.to_string()),
    };
    let mut responses = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        let name = topic.topic_name.0.to_string();
        let known = shared.topics().get(&name);
        let mut answer = DeleteShareGroupOffsetsResponseTopic::default()
            .with_topic_name(topic.topic_name)
            .with_topic_id(known.as_ref().map(|t| t.record.id).unwrap_or_default());
        let outcome = match &known {
            _ if !context.access.topic(Operation::Read, &name) => Err((
                code::TOPIC_AUTHORIZATION_FAILED,
                format!("may not read topic {name}"),
            )),
            None => Err((code::UNKNOWN_TOPIC_OR_PARTITION, format!("no topic {name}"))),
            Some(t) => {
                let partitions: Vec<(uuid::Uuid, i32)> = stored
                    .iter()
                    .filter(|r| r.topic_id == t.record.id)
                    .map(|r| (r.topic_id, r.partition))
                    .collect();
                match shared
                    .metadata()
                    .delete_share_partitions(&group, Some(&partitions))
                    .await
                {
                    Ok(()) => {
                        for (topic_id, partition) in partitions {
                            let id = SharePartitionId {
                                group: group.clone(),
                                topic_id,
                                partition,
                            };
                            crate::share::held::forget_if_idle(shared, &id).await;
                        }
                        Ok(())
                    }
                    Err(error) => Err((code::COORDINATOR_NOT_AVAILABLE, error.to_string())),
                }
            }
        };
        if let Err((code, message)) = outcome {
            answer = answer
                .with_error_code(code)
                .with_error_message(Some(StrBytes::from_string(message)));
        }
        responses.push(answer);
    }
    ResponseKind::DeleteShareGroupOffsets(
        DeleteShareGroupOffsetsResponse::default().with_responses(responses),
    )
}
