//! What the config APIs share: Kafka's resource types, and who may read or change
//! which configs.

/// Kafka's config resource types.
pub(crate) const TOPIC: i8 = 2;
pub(crate) const BROKER: i8 = 4;
pub(crate) const GROUP: i8 = 32;

use crate::errors::code;
use crate::topics::AdminError;
use spool_security::acl::Operation;
use spool_security::authorizer::Access;

/// Why the principal may not do `operation` (DESCRIBE_CONFIGS or ALTER_CONFIGS) to a
/// resource's configs: a topic's need it on the topic, a group's on the group, the
/// broker's on the cluster.
pub(crate) fn refusal(
    access: &Access,
    operation: Operation,
    resource_type: i8,
    name: &str,
) -> Option<AdminError> {
    let (allowed, error, what) = match resource_type {
        TOPIC => (
            access.topic(operation, name),
            code::TOPIC_AUTHORIZATION_FAILED,
            format!("topic {name}"),
        ),
        GROUP => (
            access.group(operation, name),
            code::GROUP_AUTHORIZATION_FAILED,
            format!("group {name}"),
        ),
        BROKER => (
            access.cluster(operation),
            code::CLUSTER_AUTHORIZATION_FAILED,
            "the cluster".to_owned(),
        ),
        _ => return None,
    };
    (!allowed).then(|| AdminError {
        code: error,
        message: format!("{} may not {operation:?} on {what}", access.principal()),
    })
}
