//! DescribeGroups (key 15): state, protocol and members (with their metadata and
//! assignment) of each group; an unknown group is described as `Dead`, as in Kafka,
//! and one another broker of the cluster coordinates gets `NOT_COORDINATOR`.

use std::sync::Arc;

use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::{
    ApiKey, DescribeGroupsRequest, DescribeGroupsResponse, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;

use super::api::{ApiDecl, RequestContext};
use crate::errors::code;
use crate::shared::Shared;
use spool_security::acl::{Operation, ResourceType};

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::DescribeGroups,
    min: 0,
    max: 5,
};

pub(crate) async fn handle(
    request: DescribeGroupsRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let version = context.version;
    let access = &context.access;
    let groups = request
        .groups
        .into_iter()
        .map(|group_id| {
            let name = group_id.0.as_str();
            if !access.group(Operation::Describe, name) {
                return DescribedGroup::default()
                    .with_group_id(group_id)
                    .with_error_code(code::GROUP_AUTHORIZATION_FAILED);
            }
            let owned = shared.groups().owns(name);
            let described = shared.groups().describe(name, shared.topics());
            let mut group = DescribedGroup::default();
            if version >= 3 && request.include_authorized_operations {
                group =
                    group.with_authorized_operations(access.operations(ResourceType::Group, name));
            }
            let group = group.with_group_id(group_id);
            if !owned {
                // Another broker of the cluster coordinates it.
                return group.with_error_code(code::NOT_COORDINATOR);
            }
            let Some(described) = described else {
                return group.with_group_state(StrBytes::from_static_str("Dead"));
            };
            let members = described
                .members
                .into_iter()
                .map(|m| {
                    let member = DescribedGroupMember::default()
                        .with_member_id(StrBytes::from_string(m.member_id))
                        .with_client_id(StrBytes::from_string(m.client_id))
                        .with_client_host(StrBytes::from_string(m.client_host))
                        .with_member_metadata(m.metadata)
                        .with_member_assignment(m.assignment);
                    if version >= 4 {
                        member
                            .with_group_instance_id(m.group_instance_id.map(StrBytes::from_string))
                    } else {
                        member
                    }
                })
                .collect();
            group
                .with_group_state(StrBytes::from_static_str(described.state))
                .with_protocol_type(StrBytes::from_string(described.protocol_type))
                .with_protocol_data(StrBytes::from_string(described.protocol))
                .with_members(members)
        })
        .collect();
    ResponseKind::DescribeGroups(DescribeGroupsResponse::default().with_groups(groups))
}
