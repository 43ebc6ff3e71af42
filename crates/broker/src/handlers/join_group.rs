//! JoinGroup (key 11): a member joins or rejoins; the answer comes when the rebalance
//! completes (see `spool_coordinator::group`). v4+ hands a new member its id first
//! (`MEMBER_ID_REQUIRED`); v5+ carries `group.instance.id` (static membership).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::{ApiKey, JoinGroupRequest, JoinGroupResponse, ResponseKind};
use kafka_protocol::protocol::StrBytes;
use spool_coordinator::JoinRequest;

use super::api::{ApiDecl, RequestContext};
use crate::errors::group_error_code;
use crate::shared::Shared;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::JoinGroup,
    min: 0,
    max: 9,
};

pub(crate) async fn handle(
    request: JoinGroupRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let version = context.version;
    let shared = Arc::clone(shared);
    let session_timeout = millis(request.session_timeout_ms);
    let join = JoinRequest {
        group_id: request.group_id.0.to_string(),
        member_id: request.member_id.to_string(),
        group_instance_id: request.group_instance_id.map(|id| id.to_string()),
        client_id: context.client_id.clone(),
        client_host: context.client_host.clone(),
        session_timeout,
        // v0 has no rebalance timeout: the session timeout serves.
        rebalance_timeout: if version >= 1 {
            millis(request.rebalance_timeout_ms)
        } else {
            session_timeout
        },
        protocol_type: request.protocol_type.to_string(),
        protocols: request
            .protocols
            .into_iter()
            // Copied: a slice would keep the whole request buffer alive while the
            // member is in the group.
            .map(|p| (p.name.to_string(), Bytes::copy_from_slice(&p.metadata)))
            .collect(),
        require_known_member_id: version >= 4,
    };
    let answer = if shared.share().has_members(&join.group_id) {
        // The id is a share group's.
        spool_coordinator::JoinResponse::failed(
            spool_coordinator::GroupError::InconsistentGroupProtocol,
            &join.member_id,
        )
    } else {
        shared.groups().join(join, shared.topics()).await
    };
    let members = answer
        .members
        .into_iter()
        .map(|m| {
            let member = JoinGroupResponseMember::default()
                .with_member_id(StrBytes::from_string(m.member_id))
                .with_metadata(m.metadata);
            if version >= 5 {
                member.with_group_instance_id(m.group_instance_id.map(StrBytes::from_string))
            } else {
                member
            }
        })
        .collect();
    let protocol_name = answer.protocol_name.map(StrBytes::from_string);
    let mut response = JoinGroupResponse::default()
        .with_error_code(answer.error.map_or(0, group_error_code))
        .with_generation_id(answer.generation)
        .with_leader(StrBytes::from_string(answer.leader))
        .with_member_id(StrBytes::from_string(answer.member_id))
        .with_members(members);
    if version >= 9 {
        response = response.with_skip_assignment(answer.skip_assignment);
    }
    if version >= 7 {
        response = response
            .with_protocol_type(answer.protocol_type.map(StrBytes::from_string))
            .with_protocol_name(protocol_name);
    } else {
        // Not nullable before v7.
        response = response.with_protocol_name(Some(protocol_name.unwrap_or_default()));
    }
    ResponseKind::JoinGroup(response)
}

/// A timeout in ms from the wire; negative ones become zero (and are refused).
pub(super) fn millis(ms: i32) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}
