//! CreateAcls (key 30): adds ACL bindings, kept in the metadata store; every broker of
//! a cluster applies them before the answer (see `docs/security.md`). Needs ALTER on
//! the cluster; `SECURITY_DISABLED` while `authorizer.enabled` is false.

use std::sync::Arc;

use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::{ApiKey, CreateAclsRequest, CreateAclsResponse, ResponseKind};
use kafka_protocol::protocol::StrBytes;
use spool_metadata::AclRecord;

use super::api::{ApiDecl, RequestContext};
use crate::errors::code;
use crate::shared::Shared;
use spool_security::acl::{self, Operation};

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::CreateAcls,
    min: 0,
    max: 3,
};

fn result(error: i16, message: Option<String>) -> AclCreationResult {
    AclCreationResult::default()
        .with_error_code(error)
        .with_error_message(message.map(StrBytes::from_string))
}

pub(crate) async fn handle(
    request: CreateAclsRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let shared = Arc::clone(shared);
    let count = request.creations.len();
    let answer =
        |results| ResponseKind::CreateAcls(CreateAclsResponse::default().with_results(results));
    if let Some((error, message)) = refusal(context, &shared, Operation::Alter) {
        return answer(vec![result(error, Some(message)); count]);
    }
    let bindings: Vec<AclRecord> = request
        .creations
        .into_iter()
        .map(|creation| AclRecord {
            resource_type: creation.resource_type,
            resource_name: creation.resource_name.to_string(),
            pattern_type: creation.resource_pattern_type,
            principal: creation.principal.to_string(),
            host: creation.host.to_string(),
            operation: creation.operation,
            permission: creation.permission_type,
        })
        .collect();
    let mut results = Vec::with_capacity(count);
    let mut valid = Vec::with_capacity(count);
    for binding in bindings {
        match acl::invalid_binding(&binding) {
            Some(why) => results.push(result(code::INVALID_REQUEST, Some(why.to_owned()))),
            None => {
                results.push(result(code::NONE, None));
                valid.push(binding);
            }
        }
    }
    if valid.is_empty() {
        return answer(results);
    }
    if let Err(error) = shared.metadata().create_acls(&valid).await {
        tracing::warn!(%error, "cannot store ACLs");
        for result in results.iter_mut().filter(|r| r.error_code == code::NONE) {
            *result = self::result(code::UNKNOWN_SERVER_ERROR, Some(error.to_string()));
        }
        return answer(results);
    }
    tracing::info!(
        principal = context.access.principal(),
        count = valid.len(),
        "ACLs created"
    );
    applied(&shared).await;
    answer(results)
}

/// Why a principal may not change or read the ACLs: the authorizer is off, or it lacks
/// `operation` on the cluster.
pub(crate) fn refusal(
    context: &RequestContext,
    shared: &Shared,
    operation: Operation,
) -> Option<(i16, String)> {
    if !shared.authorizer().enabled() {
        return Some((
            code::SECURITY_DISABLED,
            "no authorizer is enabled (authorizer.enabled=false)".to_owned(),
        ));
    }
    (!context.access.cluster(operation)).then(|| {
        (
            code::CLUSTER_AUTHORIZATION_FAILED,
            format!(
                "{} may not {operation:?} the cluster's ACLs",
                context.access.principal()
            ),
        )
    })
}

/// After a change: this broker's bindings read again, and, in a cluster, every other
/// broker's, before the client is answered.
pub(crate) async fn applied(shared: &Shared) {
    {
        // Under the admin lock, as following the store loads them: a load of what it
        // read before this change cannot come after this one.
        let _admin = shared.changes().lock().await;
        match shared.metadata().acls().await {
            Ok(bindings) => shared.authorizer().load(bindings),
            Err(error) => tracing::warn!(%error, "cannot read the ACLs again; the next poll does"),
        }
    }
    crate::cluster::wait_for_followers(shared).await;
}
