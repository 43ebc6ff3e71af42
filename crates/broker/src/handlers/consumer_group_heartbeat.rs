//! ConsumerGroupHeartbeat (key 68, KIP-848): a member of a consumer-protocol group
//! joins, keeps its session, learns its assignment and says what it released, or
//! leaves; answered at once (see `spool_coordinator::consumer`). v1 members choose
//! their own member id; v0 members joining are given one.

use std::collections::BTreeSet;
use std::sync::Arc;

use kafka_protocol::messages::consumer_group_heartbeat_response::{
    Assignment as WireAssignment, TopicPartitions,
};
use kafka_protocol::messages::{
    ApiKey, ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;
use spool_coordinator::consumer::{Assignment, HeartbeatRequest, TopicInfo, Topics};
use spool_security::acl::Operation;
use spool_security::authorizer::Access;

use super::api::{ApiDecl, RequestContext};
use crate::errors::{code, group_error_code};
use crate::shared::Shared;
use crate::topics::TopicTable;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::ConsumerGroupHeartbeat,
    min: 0,
    max: 1,
};

pub(crate) async fn handle(
    request: ConsumerGroupHeartbeatRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    // Topics named in the subscription must be visible to the member (Kafka 4.0+).
    let names = request
        .subscribed_topic_names
        .as_deref()
        .unwrap_or_default();
    if names
        .iter()
        .any(|name| !context.access.topic(Operation::Describe, name.as_str()))
    {
        return refused(code::TOPIC_AUTHORIZATION_FAILED, None);
    }
    if shared.share().has_members(&request.group_id) {
        return refused(
            code::GROUP_ID_NOT_FOUND,
            Some(format!(
                "group {} is a share group",
                request.group_id.0.as_str()
            )),
        );
    }
    let visible = Described {
        topics: shared.topics(),
        access: &context.access,
    };
    let heartbeat = HeartbeatRequest {
        group_id: request.group_id.0.to_string(),
        member_id: request.member_id.to_string(),
        member_epoch: request.member_epoch,
        instance_id: request.instance_id.map(|id| id.to_string()),
        rack_id: request.rack_id.map(|id| id.to_string()),
        rebalance_timeout_ms: request.rebalance_timeout_ms,
        subscribed_topic_names: request
            .subscribed_topic_names
            .map(|names| names.into_iter().map(|name| name.0.to_string()).collect()),
        subscribed_topic_regex: request.subscribed_topic_regex.map(|r| r.to_string()),
        server_assignor: request.server_assignor.map(|a| a.to_string()),
        owned: request.topic_partitions.map(|owned| {
            let mut assignment = Assignment::new();
            for topic in owned {
                let partitions: &mut BTreeSet<i32> = assignment.entry(topic.topic_id).or_default();
                partitions.extend(topic.partitions);
            }
            assignment
        }),
        client_id: context.client_id.clone(),
        client_host: context.client_host.clone(),
    };
    let asked = (
        heartbeat.group_id.clone(),
        heartbeat.member_id.clone(),
        heartbeat.member_epoch,
        heartbeat
            .owned
            .as_ref()
            .map(spool_coordinator::consumer::assignor::partition_count),
    );
    let outcome = shared
        .groups()
        .consumer_heartbeat(heartbeat, context.version, &visible)
        .await;
    let answer = match outcome {
        Ok(answer) => answer,
        Err(error) => {
            if let spool_coordinator::GroupError::InvalidRequest(why) = error {
                let (group, member, epoch, owned) = &asked;
                tracing::info!(
                    group,
                    member,
                    epoch,
                    ?owned,
                    why,
                    "refused an invalid ConsumerGroupHeartbeat"
                );
            }
            return refused(group_error_code(error), Some(error.to_string()));
        }
    };
    let assignment = answer.assignment.map(|assignment| {
        WireAssignment::default().with_topic_partitions(
            assignment
                .into_iter()
                .map(|(topic, partitions)| {
                    TopicPartitions::default()
                        .with_topic_id(topic)
                        .with_partitions(partitions.into_iter().collect())
                })
                .collect(),
        )
    });
    ResponseKind::ConsumerGroupHeartbeat(
        ConsumerGroupHeartbeatResponse::default()
            .with_member_id(Some(StrBytes::from_string(answer.member_id)))
            .with_member_epoch(answer.member_epoch)
            .with_heartbeat_interval_ms(
                i32::try_from(answer.heartbeat_interval.as_millis()).unwrap_or(i32::MAX),
            )
            .with_assignment(assignment),
    )
}

fn refused(error_code: i16, message: Option<String>) -> ResponseKind {
    ResponseKind::ConsumerGroupHeartbeat(
        ConsumerGroupHeartbeatResponse::default()
            .with_error_code(error_code)
            .with_error_message(message.map(StrBytes::from_string)),
    )
}

/// The topics as the member may see them: a regular expression matches only those it
/// may DESCRIBE, as Kafka filters them (with the rights of the member whose heartbeat
/// matched the expression again: the group's members usually share a principal).
/// Named topics are checked before (`TOPIC_AUTHORIZATION_FAILED`).
struct Described<'a> {
    topics: &'a TopicTable,
    access: &'a Access,
}

impl Topics for Described<'_> {
    fn by_name(&self, name: &str) -> Option<TopicInfo> {
        self.topics.by_name(name)
    }

    fn names(&self) -> Vec<String> {
        let mut names = self.topics.names();
        names.retain(|name| self.access.topic(Operation::Describe, name));
        names
    }

    fn name_of(&self, id: uuid::Uuid) -> Option<String> {
        self.topics.name_of(id)
    }

    fn version(&self) -> u64 {
        self.topics.version()
    }
}
