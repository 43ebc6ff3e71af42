//! DeleteGroups (key 42): a group without members goes, with its committed offsets
//! (a share group with its share-partitions' states).

use std::sync::Arc;

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{ApiKey, DeleteGroupsRequest, DeleteGroupsResponse, ResponseKind};

use super::api::{ApiDecl, RequestContext};
use crate::errors::{code, group_result_code};
use crate::shared::Shared;
use spool_security::acl::Operation;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::DeleteGroups,
    min: 0,
    max: 2,
};

pub(crate) async fn handle(
    request: DeleteGroupsRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let access = &context.access;
    let shared = Arc::clone(shared);
    let mut results = Vec::with_capacity(request.groups_names.len());
    for group_id in request.groups_names {
        let error = if access.group(Operation::Delete, group_id.0.as_str()) {
            match crate::share::describe::delete(&shared, group_id.0.as_str()).await {
                Some(code) => code,
                None => group_result_code(shared.groups().delete_group(group_id.0.as_str()).await),
            }
        } else {
            code::GROUP_AUTHORIZATION_FAILED
        };
        results.push(
            DeletableGroupResult::default()
                .with_group_id(group_id)
                .with_error_code(error),
        );
    }
    ResponseKind::DeleteGroups(DeleteGroupsResponse::default().with_results(results))
}
