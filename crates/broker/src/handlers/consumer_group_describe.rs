//! ConsumerGroupDescribe (key 69, KIP-848): a consumer-protocol group's state, epochs,
//! assignor and members, each with its assignment and its target. A classic group
//! (or none) is `GROUP_ID_NOT_FOUND`, as in Kafka.

use std::sync::Arc;

use kafka_protocol::messages::consumer_group_describe_response::{
    Assignment as WireAssignment, DescribedGroup, Member, TopicPartitions,
};
use kafka_protocol::messages::{
    ApiKey, ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, GroupId, ResponseKind,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;
use spool_coordinator::consumer::Assignment;
use spool_security::acl::{Operation, ResourceType};

use super::api::{ApiDecl, RequestContext};
use crate::errors::{code, group_error_code};
use crate::shared::Shared;
use crate::topics::TopicTable;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::ConsumerGroupDescribe,
    min: 0,
    max: 1,
};

/// KIP-1099: a member of the classic protocol, and one of the consumer protocol
/// (ConsumerGroupDescribe v1).
const CLASSIC_MEMBER: i8 = 0;
const CONSUMER_MEMBER: i8 = 1;

pub(crate) async fn handle(
    request: ConsumerGroupDescribeRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let mut groups = Vec::with_capacity(request.group_ids.len());
    for group_id in request.group_ids {
        groups.push(
            describe(
                group_id,
                request.include_authorized_operations,
                context,
                shared,
            )
            .await,
        );
    }
    ResponseKind::ConsumerGroupDescribe(
        ConsumerGroupDescribeResponse::default().with_groups(groups),
    )
}

/// One group's answer.
async fn describe(
    group_id: GroupId,
    include_authorized_operations: bool,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> DescribedGroup {
    let access = &context.access;
    let name = group_id.0.to_string();
    let group = DescribedGroup::default().with_group_id(group_id);
    if !access.group(Operation::Describe, &name) {
        return group.with_error_code(code::GROUP_AUTHORIZATION_FAILED);
    }
    let described = match shared.groups().consumer_describe(&name).await {
        Ok(described) => described,
        Err(error) => {
            return group
                .with_error_code(group_error_code(error))
                .with_error_message(Some(StrBytes::from_string(format!(
                    "group {name}: {error}"
                ))));
        }
    };
    let topics = shared.topics();
    let members = described
        .members
        .into_iter()
        .map(|m| {
            let member = Member::default()
                .with_member_id(StrBytes::from_string(m.member_id))
                .with_instance_id(m.instance_id.map(StrBytes::from_string))
                .with_rack_id(m.rack_id.map(StrBytes::from_string))
                .with_member_epoch(m.member_epoch)
                .with_client_id(StrBytes::from_string(m.client_id))
                .with_client_host(StrBytes::from_string(m.client_host))
                .with_subscribed_topic_names(
                    m.subscribed_topic_names
                        .into_iter()
                        .map(|n| TopicName(StrBytes::from_string(n)))
                        .collect(),
                )
                .with_subscribed_topic_regex(
                    (!m.subscribed_topic_regex.is_empty())
                        .then(|| StrBytes::from_string(m.subscribed_topic_regex)),
                )
                .with_assignment(wire_assignment(&m.assignment, topics))
                .with_target_assignment(wire_assignment(&m.target_assignment, topics));
            if context.version >= 1 {
                member.with_member_type(if m.classic {
                    CLASSIC_MEMBER
                } else {
                    CONSUMER_MEMBER
                })
            } else {
                member
            }
        })
        .collect();
    let mut group = group
        .with_group_state(StrBytes::from_static_str(described.state.name()))
        .with_group_epoch(described.group_epoch)
        .with_assignment_epoch(described.assignment_epoch)
        .with_assignor_name(StrBytes::from_static_str(described.assignor))
        .with_members(members);
    if include_authorized_operations {
        group = group.with_authorized_operations(access.operations(ResourceType::Group, &name));
    }
    group
}

/// An assignment with its topics' names; topics deleted since are left out.
fn wire_assignment(assignment: &Assignment, topics: &TopicTable) -> WireAssignment {
    WireAssignment::default().with_topic_partitions(
        assignment
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
    )
}
