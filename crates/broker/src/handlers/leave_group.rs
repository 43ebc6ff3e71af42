//! LeaveGroup (key 13): members leave at once (the group rebalances without waiting
//! for their sessions to end). v3+ names several members, by id or instance id.

use std::sync::Arc;

use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::{ApiKey, LeaveGroupRequest, LeaveGroupResponse, ResponseKind};

use super::api::{ApiDecl, RequestContext};
use crate::errors::group_result_code;
use crate::shared::Shared;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::LeaveGroup,
    min: 0,
    max: 5,
};

pub(crate) async fn handle(
    request: LeaveGroupRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let version = context.version;
    let leaving: Vec<(String, Option<String>)> = if version >= 3 {
        request
            .members
            .iter()
            .map(|m| {
                (
                    m.member_id.to_string(),
                    m.group_instance_id.as_ref().map(ToString::to_string),
                )
            })
            .collect()
    } else {
        vec![(request.member_id.to_string(), None)]
    };
    let results = shared
        .groups()
        .leave(request.group_id.0.as_str(), &leaving)
        .await;
    let response = if version >= 3 {
        LeaveGroupResponse::default().with_members(
            request
                .members
                .into_iter()
                .zip(results)
                .map(|(member, result)| {
                    MemberResponse::default()
                        .with_member_id(member.member_id)
                        .with_group_instance_id(member.group_instance_id)
                        .with_error_code(group_result_code(result))
                })
                .collect(),
        )
    } else {
        LeaveGroupResponse::default()
            .with_error_code(results.into_iter().next().map_or(0, group_result_code))
    };
    ResponseKind::LeaveGroup(response)
}
