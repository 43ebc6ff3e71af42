//! DeleteAcls (key 31): removes the bindings each filter matches, as the store has
//! them now, and names them per filter. Needs ALTER on the cluster;
//! `SECURITY_DISABLED` while `authorizer.enabled` is false.

use std::collections::HashSet;
use std::sync::Arc;

use kafka_protocol::messages::delete_acls_response::{
    DeleteAclsFilterResult, DeleteAclsMatchingAcl,
};
use kafka_protocol::messages::{ApiKey, DeleteAclsRequest, DeleteAclsResponse, ResponseKind};
use kafka_protocol::protocol::StrBytes;
use spool_metadata::AclRecord;

use super::acl_filter::acl_filter_of;
use super::api::{ApiDecl, RequestContext};
use super::create_acls::{applied, refusal};
use crate::errors::code;
use crate::shared::Shared;
use spool_security::acl::{AclFilter, Operation};

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::DeleteAcls,
    min: 0,
    max: 3,
};

fn failed(error: i16, message: String) -> DeleteAclsFilterResult {
    DeleteAclsFilterResult::default()
        .with_error_code(error)
        .with_error_message(Some(StrBytes::from_string(message)))
}

fn matching(binding: &AclRecord) -> DeleteAclsMatchingAcl {
    DeleteAclsMatchingAcl::default()
        .with_resource_type(binding.resource_type)
        .with_resource_name(StrBytes::from_string(binding.resource_name.clone()))
        .with_pattern_type(binding.pattern_type)
        .with_principal(StrBytes::from_string(binding.principal.clone()))
        .with_host(StrBytes::from_string(binding.host.clone()))
        .with_operation(binding.operation)
        .with_permission_type(binding.permission)
}

pub(crate) async fn handle(
    request: DeleteAclsRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let shared = Arc::clone(shared);
    let answer = |results| {
        ResponseKind::DeleteAcls(DeleteAclsResponse::default().with_filter_results(results))
    };
    let count = request.filters.len();
    if let Some((error, message)) = refusal(context, &shared, Operation::Alter) {
        return answer(vec![failed(error, message); count]);
    }
    let filters: Vec<AclFilter> = request
        .filters
        .iter()
        .map(|filter| acl_filter_of!(filter))
        .collect();
    // What the store holds now, not this broker's copy: another broker's change of a
    // moment ago may not have reached it.
    let stored = match shared.metadata().acls().await {
        Ok(stored) => stored,
        Err(error) => {
            return answer(vec![
                failed(code::UNKNOWN_SERVER_ERROR, error.to_string());
                count
            ]);
        }
    };
    let matched: Vec<Result<Vec<&AclRecord>, &str>> = filters
        .iter()
        .map(|filter| match filter.invalid() {
            Some(why) => Err(why),
            None => Ok(stored.iter().filter(|b| filter.matches(b)).collect()),
        })
        .collect();
    let mut doomed: Vec<AclRecord> = Vec::new();
    let mut seen = HashSet::new();
    for binding in matched.iter().filter_map(|m| m.as_ref().ok()).flatten() {
        if seen.insert(*binding) {
            doomed.push((*binding).clone());
        }
    }
    let deleted: HashSet<AclRecord> = if doomed.is_empty() {
        HashSet::new()
    } else {
        match shared.metadata().delete_acls(&doomed).await {
            Ok(deleted) => deleted.into_iter().collect(),
            Err(error) => {
                return answer(vec![
                    failed(code::UNKNOWN_SERVER_ERROR, error.to_string());
                    count
                ]);
            }
        }
    };
    let results = matched
        .into_iter()
        .map(|matched| match matched {
            Err(why) => failed(code::INVALID_REQUEST, why.to_owned()),
            Ok(bindings) => DeleteAclsFilterResult::default().with_matching_acls(
                bindings
                    .into_iter()
                    .filter(|binding| deleted.contains(*binding))
                    .map(matching)
                    .collect(),
            ),
        })
        .collect();
    if !doomed.is_empty() {
        tracing::info!(
            principal = context.access.principal(),
            count = deleted.len(),
            "ACLs deleted"
        );
        applied(&shared).await;
    }
    answer(results)
}
