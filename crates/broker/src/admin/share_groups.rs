//! The REST API's share groups (KIP-932): listed with the consumer groups (type
//! `share`), and described with their members and, per partition, the start offset,
//! the records in flight by state and the lag (`crate::share::describe`).

use std::sync::Arc;

use spool_admin::{ApiError, GroupDetail, GroupMember, GroupSummary, SharePartitionDetail};

use super::kafka_error;
use crate::errors::code;
use crate::share::describe;
use crate::shared::Shared;

pub(super) async fn list(shared: &Arc<Shared>) -> Result<Vec<GroupSummary>, ApiError> {
    let ids = describe::group_ids(shared)
        .await
        .map_err(|error| kafka_error(code::COORDINATOR_NOT_AVAILABLE, error.to_string()))?;
    let mut out = Vec::new();
    for id in ids.into_iter().filter(|id| shared.groups().owns(id)) {
        if let Some(detail) = describe(shared, &id).await? {
            out.push(GroupSummary {
                lag: detail.share_partitions.iter().filter_map(|p| p.lag).sum(),
                members: detail.members.len(),
                group: detail.group,
                group_type: detail.group_type,
                state: detail.state,
                protocol_type: detail.protocol_type,
            });
        }
    }
    Ok(out)
}

/// The share group `id`, if it is one.
pub(super) async fn describe(
    shared: &Arc<Shared>,
    id: &str,
) -> Result<Option<GroupDetail>, ApiError> {
    let view = describe::describe(shared, id)
        .await
        .map_err(|error| kafka_error(code::COORDINATOR_NOT_AVAILABLE, error.to_string()))?;
    let Some(view) = view else {
        return Ok(None);
    };
    let topics = shared.topics();
    let members = view
        .members
        .into_iter()
        .map(|(member_id, member)| GroupMember {
            member_id,
            instance_id: None,
            client_id: member.client_id,
            client_host: member.client_host,
            assignment: member
                .assignment
                .iter()
                .filter_map(|(topic, partitions)| {
                    let topic = topics.by_id(*topic)?;
                    Some((
                        topic.record.name.as_str().to_owned(),
                        partitions.iter().copied().collect(),
                    ))
                })
                .collect(),
        })
        .collect();
    let share_partitions = view
        .partitions
        .into_iter()
        .map(|p| SharePartitionDetail {
            topic: p.topic,
            partition: p.partition,
            start_offset: p.start_offset,
            acquired: p.counts.acquired,
            available: p.counts.available,
            acknowledged: p.counts.acknowledged,
            archived: p.counts.archived,
            lag: p.lag,
        })
        .collect();
    Ok(Some(GroupDetail {
        group: view.group,
        group_type: "share".to_owned(),
        state: view.state.to_owned(),
        protocol_type: "share".to_owned(),
        protocol: "simple".to_owned(),
        members,
        offsets: Vec::new(),
        share_partitions,
    }))
}
