//! ListGroups (key 16): every group with its state and protocol type; v4+ filters by
//! state, v5+ by group type (`classic`, `consumer` or `share`).

use std::sync::Arc;

use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{
    ApiKey, GroupId, ListGroupsRequest, ListGroupsResponse, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;

use super::api::{ApiDecl, RequestContext};
use crate::shared::Shared;
use spool_coordinator::{GroupListing, GroupType};
use spool_security::acl::Operation;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::ListGroups,
    min: 0,
    max: 5,
};

pub(crate) async fn handle(
    request: ListGroupsRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let request = &request;
    let version = context.version;
    let access = &context.access;
    // DESCRIBE on the cluster shows every group; else those the principal may
    // describe, and never an error.
    let all = access.cluster(Operation::Describe);
    let state_wanted = |state: &str| {
        request.states_filter.is_empty()
            || request
                .states_filter
                .iter()
                .any(|s| s.as_str().eq_ignore_ascii_case(state))
    };
    let type_wanted = |group_type: &str| {
        request.types_filter.is_empty()
            || request
                .types_filter
                .iter()
                .any(|t| t.as_str().eq_ignore_ascii_case(group_type))
    };
    let mut listed = shared.groups().list();
    if type_wanted("share") {
        listed.extend(share_groups(shared).await);
    }
    let groups = listed
        .into_iter()
        .filter(|g| type_wanted(g.group_type.name()) && state_wanted(g.state))
        .filter(|g| all || access.group(Operation::Describe, &g.group_id))
        .map(|g| {
            let mut listed = ListedGroup::default()
                .with_group_id(GroupId(StrBytes::from_string(g.group_id)))
                .with_protocol_type(StrBytes::from_string(g.protocol_type));
            if version >= 4 {
                listed = listed.with_group_state(StrBytes::from_static_str(g.state));
            }
            if version >= 5 {
                listed = listed.with_group_type(StrBytes::from_static_str(g.group_type.name()));
            }
            listed
        })
        .collect();
    ResponseKind::ListGroups(ListGroupsResponse::default().with_groups(groups))
}

/// The share groups this broker coordinates (a store that cannot be read leaves out
/// those without members here).
async fn share_groups(shared: &Arc<Shared>) -> Vec<GroupListing> {
    let ids = match crate::share::describe::group_ids(shared).await {
        Ok(ids) => ids,
        Err(error) => {
            tracing::warn!(%error, "listing share groups: the store cannot be read");
            shared.share().groups().group_ids().into_iter().collect()
        }
    };
    ids.into_iter()
        .filter(|id| shared.groups().owns(id))
        .map(|id| {
            let state = if shared.share().has_members(&id) {
                "Stable"
            } else {
                "Empty"
            };
            GroupListing {
                group_id: id,
                state,
                protocol_type: "share".to_owned(),
                group_type: GroupType::Share,
            }
        })
        .collect()
}
