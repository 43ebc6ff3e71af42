//! ShareGroupDescribe (key 77, KIP-932): a share group's state, epoch and members
//! with their subscriptions and assignments. A group with no members here and no
//! stored share-partitions, or a consumer group, is `GROUP_ID_NOT_FOUND`.

use std::sync::Arc;

use kafka_protocol::messages::share_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use kafka_protocol::messages::{
    ApiKey, GroupId, ResponseKind, ShareGroupDescribeRequest, ShareGroupDescribeResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use spool_security::acl::{Operation, ResourceType};

use super::api::{ApiDecl, RequestContext};
use crate::errors::code;
use crate::share::describe;
use crate::shared::Shared;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::ShareGroupDescribe,
    min: 1,
    max: 1,
};

pub(crate) async fn handle(
    request: ShareGroupDescribeRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let mut groups = Vec::with_capacity(request.group_ids.len());
    for group_id in request.group_ids {
        groups.push(
            describe_one(
                group_id,
                request.include_authorized_operations,
                context,
                shared,
            )
            .await,
        );
    }
    ResponseKind::ShareGroupDescribe(ShareGroupDescribeResponse::default().with_groups(groups))
}

async fn describe_one(
    group_id: GroupId,
    include_authorized_operations: bool,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> DescribedGroup {
    let name = group_id.0.to_string();
    let group = DescribedGroup::default().with_group_id(group_id);
    let refused = |code: i16, message: String| {
        group
            .clone()
            .with_error_code(code)
            .with_error_message(Some(StrBytes::from_string(message)))
    };
    if !context.access.group(Operation::Describe, &name) {
        return refused(
            code::GROUP_AUTHORIZATION_FAILED,
            format!("may not describe group {name}"),
        );
    }
    if !shared.groups().owns(&name) {
        return refused(
            code::NOT_COORDINATOR,
            format!("this broker does not coordinate group {name}"),
        );
    }
    let view = match describe::describe(shared, &name).await {
        Ok(Some(view)) => view,
        Ok(None) => {
            return refused(
                code::GROUP_ID_NOT_FOUND,
                format!("group {name} is not a share group"),
            );
        }
        Err(error) => return refused(code::COORDINATOR_NOT_AVAILABLE, error.to_string()),
    };
    let topics = shared.topics();
    let members = view
        .members
        .into_iter()
        .map(|(member_id, member)| {
            let assignment = Assignment::default().with_topic_partitions(
                member
                    .assignment
                    .iter()
                    .filter_map(|(id, partitions)| {
                        let topic = topics.by_id(*id)?;
                        Some(
                            TopicPartitions::default()
                                .with_topic_id(*id)
                                .with_topic_name(TopicName(StrBytes::from_string(
                                    topic.record.name.as_str().to_owned(),
                                )))
                                .with_partitions(partitions.iter().copied().collect()),
                        )
                    })
                    .collect(),
            );
            Member::default()
                .with_member_id(StrBytes::from_string(member_id))
                .with_rack_id(member.rack_id.map(StrBytes::from_string))
                .with_member_epoch(member.epoch)
                .with_client_id(StrBytes::from_string(member.client_id))
                .with_client_host(StrBytes::from_string(member.client_host))
                .with_subscribed_topic_names(
                    member
                        .subscribed
                        .into_iter()
                        .map(|n| TopicName(StrBytes::from_string(n)))
                        .collect(),
                )
                .with_assignment(assignment)
        })
        .collect();
    let mut group = group
        .with_group_state(StrBytes::from_static_str(view.state))
        .with_group_epoch(view.epoch)
        .with_assignment_epoch(view.epoch)
        .with_assignor_name(StrBytes::from_static_str("simple"))
        .with_members(members);
    if include_authorized_operations {
        group =
            group.with_authorized_operations(context.access.operations(ResourceType::Group, &name));
    }
    group
}
