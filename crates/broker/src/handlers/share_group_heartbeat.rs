//! ShareGroupHeartbeat (key 76, KIP-932): a share consumer joins its share group
//! (epoch 0, with the member id it made), keeps its membership, learns its
//! assignment, or leaves (−1). Answered at once by the group's coordinator (see
//! `spool_share::group`).

use std::sync::Arc;

use kafka_protocol::messages::share_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{
    ApiKey, ResponseKind, ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse,
};
use kafka_protocol::protocol::StrBytes;
use spool_security::acl::Operation;
use spool_share::{ShareError, ShareHeartbeat};

use super::api::{ApiDecl, RequestContext};
use crate::errors::{code, share_error_code};
use crate::share::held::settings_of;
use crate::shared::Shared;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::ShareGroupHeartbeat,
    min: 1,
    max: 1,
};

pub(crate) async fn handle(
    request: ShareGroupHeartbeatRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let group_id = request.group_id.0.to_string();
    if group_id.is_empty() {
        return refused(
            code::INVALID_REQUEST,
            "a share group needs a group id".to_owned(),
        );
    }
    if !shared.groups().owns(&group_id) {
        return refused(
            code::NOT_COORDINATOR,
            format!("this broker does not coordinate group {group_id}"),
        );
    }
    let names = request
        .subscribed_topic_names
        .as_deref()
        .unwrap_or_default();
    if let Some(hidden) = names
        .iter()
        .find(|name| !context.access.topic(Operation::Describe, name.as_str()))
    {
        return refused(
            code::TOPIC_AUTHORIZATION_FAILED,
            format!(
                "{} may not describe topic {}",
                context.access.principal(),
                hidden.as_str()
            ),
        );
    }
    if shared.groups().member_count(&group_id) > 0 {
        let error = ShareError::NotShareGroup(group_id);
        return refused(share_error_code(&error), error.to_string());
    }
    let settings = settings_of(shared, &group_id);
    let heartbeat = ShareHeartbeat {
        group_id,
        member_id: request.member_id.to_string(),
        member_epoch: request.member_epoch,
        rack_id: request.rack_id.map(|rack| rack.to_string()),
        subscribed_topic_names: request
            .subscribed_topic_names
            .map(|names| names.into_iter().map(|name| name.0.to_string()).collect()),
        client_id: context.client_id.clone(),
        client_host: context.client_host.clone(),
    };
    let max_size = shared.current_config().share_groups.max_size;
    let answered = shared.share().groups().heartbeat(
        heartbeat,
        shared.topics(),
        &settings,
        max_size,
        shared.clock().instant(),
    );
    let answer = match answered {
        Ok(answer) => answer,
        Err(error) => return refused(share_error_code(&error), error.to_string()),
    };
    let assignment = answer.assignment.map(|assignment| {
        Assignment::default().with_topic_partitions(
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
    ResponseKind::ShareGroupHeartbeat(
        ShareGroupHeartbeatResponse::default()
            .with_member_id(Some(StrBytes::from_string(answer.member_id)))
            .with_member_epoch(answer.member_epoch)
            .with_heartbeat_interval_ms(
                i32::try_from(answer.heartbeat_interval.as_millis()).unwrap_or(i32::MAX),
            )
            .with_assignment(assignment),
    )
}

fn refused(error_code: i16, message: String) -> ResponseKind {
    ResponseKind::ShareGroupHeartbeat(
        ShareGroupHeartbeatResponse::default()
            .with_error_code(error_code)
            .with_error_message(Some(StrBytes::from_string(message))),
    )
}
