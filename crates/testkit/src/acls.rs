//! ACL requests and a PLAIN login for the raw client: what authorization tests need.

#![allow(clippy::panic)]

use bytes::Bytes;
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::{
    CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest, RequestKind, ResponseKind,
    SaslAuthenticateRequest, SaslHandshakeRequest,
};
use kafka_protocol::protocol::StrBytes;

use crate::RawClient;

/// A binding by wire codes: resource type (2 topic, 3 group, 4 cluster, 5
/// transactional id), pattern type (3 literal, 4 prefixed), operation, permission
/// (2 deny, 3 allow); host `*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acl {
    pub resource_type: i8,
    pub name: String,
    pub pattern_type: i8,
    pub principal: String,
    pub operation: i8,
    pub permission: i8,
}

impl Acl {
    /// An ALLOW of `operation` on a literal resource.
    pub fn allow(resource_type: i8, name: &str, principal: &str, operation: i8) -> Acl {
        Acl {
            resource_type,
            name: name.to_owned(),
            pattern_type: 3,
            principal: principal.to_owned(),
            operation,
            permission: 3,
        }
    }

    #[must_use]
    pub fn prefixed(mut self) -> Acl {
        self.pattern_type = 4;
        self
    }

    #[must_use]
    pub fn deny(mut self) -> Acl {
        self.permission = 2;
        self
    }
}

fn text(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_owned())
}

impl RawClient {
    /// Logs in with SASL PLAIN (SaslHandshake v1, SaslAuthenticate v2); the error code.
    pub async fn login_plain(&mut self, user: &str, password: &str) -> i16 {
        let handshake = SaslHandshakeRequest::default().with_mechanism(text("PLAIN"));
        let ResponseKind::SaslHandshake(answer) =
            self.call(RequestKind::SaslHandshake(handshake), 1).await
        else {
            panic!("not a SaslHandshake response")
        };
        if answer.error_code != 0 {
            return answer.error_code;
        }
        let token = format!("\0{user}\0{password}");
        let authenticate =
            SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token.into_bytes()));
        let ResponseKind::SaslAuthenticate(answer) = self
            .call(RequestKind::SaslAuthenticate(authenticate), 2)
            .await
        else {
            panic!("not a SaslAuthenticate response")
        };
        answer.error_code
    }

    /// CreateAcls v3: each binding's error code.
    pub async fn create_acls(&mut self, acls: &[Acl]) -> Vec<i16> {
        let creations = acls
            .iter()
            .map(|acl| {
                AclCreation::default()
                    .with_resource_type(acl.resource_type)
                    .with_resource_name(text(&acl.name))
                    .with_resource_pattern_type(acl.pattern_type)
                    .with_principal(text(&acl.principal))
                    .with_host(text("*"))
                    .with_operation(acl.operation)
                    .with_permission_type(acl.permission)
            })
            .collect();
        let request = CreateAclsRequest::default().with_creations(creations);
        let ResponseKind::CreateAcls(response) =
            self.call(RequestKind::CreateAcls(request), 3).await
        else {
            panic!("not a CreateAcls response")
        };
        response.results.iter().map(|r| r.error_code).collect()
    }

    /// DescribeAcls v3 of every binding of `principal` (any, for `None`): the error
    /// code and the bindings.
    pub async fn describe_acls(&mut self, principal: Option<&str>) -> (i16, Vec<Acl>) {
        let request = DescribeAclsRequest::default()
            .with_resource_type_filter(1)
            .with_resource_name_filter(None)
            .with_pattern_type_filter(1)
            .with_principal_filter(principal.map(text))
            .with_host_filter(None)
            .with_operation(1)
            .with_permission_type(1);
        let ResponseKind::DescribeAcls(response) =
            self.call(RequestKind::DescribeAcls(request), 3).await
        else {
            panic!("not a DescribeAcls response")
        };
        let acls = response
            .resources
            .iter()
            .flat_map(|resource| {
                resource.acls.iter().map(|acl| Acl {
                    resource_type: resource.resource_type,
                    name: resource.resource_name.to_string(),
                    pattern_type: resource.pattern_type,
                    principal: acl.principal.to_string(),
                    operation: acl.operation,
                    permission: acl.permission_type,
                })
            })
            .collect();
        (response.error_code, acls)
    }

    /// DeleteAcls v3 with one filter: resources named `name` (any pattern type, or
    /// MATCH when `matching`), any principal and operation. The filter's error code
    /// and how many bindings it deleted.
    pub async fn delete_acls(&mut self, name: &str, matching: bool) -> (i16, usize) {
        let filter = DeleteAclsFilter::default()
            .with_resource_type_filter(1)
            .with_resource_name_filter(Some(text(name)))
            .with_pattern_type_filter(if matching { 2 } else { 1 })
            .with_principal_filter(None)
            .with_host_filter(None)
            .with_operation(1)
            .with_permission_type(1);
        let request = DeleteAclsRequest::default().with_filters(vec![filter]);
        let ResponseKind::DeleteAcls(response) =
            self.call(RequestKind::DeleteAcls(request), 3).await
        else {
            panic!("not a DeleteAcls response")
        };
        let result = &response.filter_results[0];
        (result.error_code, result.matching_acls.len())
    }
}
