//! DescribeAcls (key 29): the bindings a filter matches, grouped by resource pattern.
//! Needs DESCRIBE on the cluster; `SECURITY_DISABLED` while `authorizer.enabled` is
//! false.

use std::sync::Arc;

use std::collections::BTreeMap;

use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use kafka_protocol::messages::{ApiKey, DescribeAclsRequest, DescribeAclsResponse, ResponseKind};
use kafka_protocol::protocol::StrBytes;

use super::acl_filter::acl_filter_of;
use super::api::{ApiDecl, RequestContext};
use super::create_acls::refusal;
use crate::errors::code;
use crate::shared::Shared;
use spool_security::acl::Operation;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::DescribeAcls,
    min: 0,
    max: 3,
};

pub(crate) async fn handle(
    request: DescribeAclsRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let request = &request;
    let failed = |error: i16, message: &str| {
        ResponseKind::DescribeAcls(
            DescribeAclsResponse::default()
                .with_error_code(error)
                .with_error_message(Some(StrBytes::from_string(message.to_owned()))),
        )
    };
    if let Some((error, message)) = refusal(context, shared, Operation::Describe) {
        return failed(error, &message);
    }
    let filter = acl_filter_of!(request);
    if let Some(why) = filter.invalid() {
        return failed(code::INVALID_REQUEST, why);
    }
    let index = shared.authorizer().current();
    let mut resources: BTreeMap<(i8, &str, i8), Vec<AclDescription>> = BTreeMap::new();
    for binding in index.bindings().iter().filter(|b| filter.matches(b)) {
        resources
            .entry((
                binding.resource_type,
                &binding.resource_name,
                binding.pattern_type,
            ))
            .or_default()
            .push(
                AclDescription::default()
                    .with_principal(StrBytes::from_string(binding.principal.clone()))
                    .with_host(StrBytes::from_string(binding.host.clone()))
                    .with_operation(binding.operation)
                    .with_permission_type(binding.permission),
            );
    }
    let resources = resources
        .into_iter()
        .map(|((resource_type, name, pattern_type), acls)| {
            DescribeAclsResource::default()
                .with_resource_type(resource_type)
                .with_resource_name(StrBytes::from_string(name.to_owned()))
                .with_pattern_type(pattern_type)
                .with_acls(acls)
        })
        .collect();
    ResponseKind::DescribeAcls(DescribeAclsResponse::default().with_resources(resources))
}
