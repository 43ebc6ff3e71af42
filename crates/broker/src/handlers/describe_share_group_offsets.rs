//! DescribeShareGroupOffsets (key 90, KIP-932): each share-partition's start offset
//! (every record before it is done with) and the leader epoch its state was written
//! at; null topics ask for every partition the group reads. v0 (v1's lag is in the
//! REST API and `spool group describe`).

use std::sync::Arc;

use kafka_protocol::messages::describe_share_group_offsets_response::{
    DescribeShareGroupOffsetsResponseGroup, DescribeShareGroupOffsetsResponsePartition,
    DescribeShareGroupOffsetsResponseTopic,
};
use kafka_protocol::messages::{
    ApiKey, DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse, ResponseKind,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;
use spool_security::acl::Operation;

use super::api::{ApiDecl, RequestContext};
use crate::errors::code;
use crate::share::describe;
use crate::shared::Shared;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::DescribeShareGroupOffsets,
    min: 0,
    max: 0,
};

pub(crate) async fn handle(
    request: DescribeShareGroupOffsetsRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let mut groups = Vec::with_capacity(request.groups.len());
    for wanted in request.groups {
        let name = wanted.group_id.0.to_string();
        let group =
            DescribeShareGroupOffsetsResponseGroup::default().with_group_id(wanted.group_id);
        let refused = |code: i16, message: String| {
            group
                .clone()
                .with_error_code(code)
                .with_error_message(Some(StrBytes::from_string(message)))
        };
        if !context.access.group(Operation::Describe, &name) {
            groups.push(refused(
                code::GROUP_AUTHORIZATION_FAILED,
                format!("may not describe group {name}"),
            ));
            continue;
        }
        if !shared.groups().owns(&name) {
            groups.push(refused(
                code::NOT_COORDINATOR,
                format!("this broker does not coordinate group {name}"),
            ));
            continue;
        }
        let view = match describe::describe(shared, &name).await {
            Ok(Some(view)) => view,
            Ok(None) => {
                groups.push(refused(
                    code::GROUP_ID_NOT_FOUND,
                    format!("group {name} is not a share group"),
                ));
                continue;
            }
            Err(error) => {
                groups.push(refused(code::COORDINATOR_NOT_AVAILABLE, error.to_string()));
                continue;
            }
        };
        let mut topics: Vec<DescribeShareGroupOffsetsResponseTopic> = Vec::new();
        let named: Vec<(String, Option<Vec<i32>>)> = match wanted.topics {
            Some(topics) => topics
                .into_iter()
                .map(|t| (t.topic_name.0.to_string(), Some(t.partitions)))
                .collect(),
            None => {
                let mut names: Vec<String> =
                    view.partitions.iter().map(|p| p.topic.clone()).collect();
                names.dedup();
                names.into_iter().map(|n| (n, None)).collect()
            }
        };
        for (topic_name, partitions) in named {
            if !context.access.topic(Operation::Describe, &topic_name) {
                continue;
            }
            let known: Vec<_> = view
                .partitions
                .iter()
                .filter(|p| p.topic == topic_name)
                .collect();
            let topic_id = known
                .first()
                .map(|p| p.topic_id)
                .or_else(|| shared.topics().get(&topic_name).map(|t| t.record.id))
                .unwrap_or_default();
            let indexes: Vec<i32> =
                partitions.unwrap_or_else(|| known.iter().map(|p| p.partition).collect());
            let answers = indexes
                .into_iter()
                .map(|index| {
                    let answer = DescribeShareGroupOffsetsResponsePartition::default()
                        .with_partition_index(index);
                    match known.iter().find(|p| p.partition == index) {
                        Some(p) => answer
                            .with_start_offset(p.start_offset)
                            .with_leader_epoch(p.state_epoch),
                        // Never read by the group: no start offset yet.
                        None => answer.with_start_offset(-1).with_leader_epoch(-1),
                    }
                })
                .collect();
            topics.push(
                DescribeShareGroupOffsetsResponseTopic::default()
                    .with_topic_name(TopicName(StrBytes::from_string(topic_name)))
                    .with_topic_id(topic_id)
                    .with_partitions(answers),
            );
        }
        groups.push(group.with_topics(topics));
    }
    ResponseKind::DescribeShareGroupOffsets(
        DescribeShareGroupOffsetsResponse::default().with_groups(groups),
    )
}
