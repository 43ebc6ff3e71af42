//! The ACL filter that DescribeAcls and DeleteAcls requests carry.

/// The [`AclFilter`] of a DescribeAcls request or a DeleteAcls filter: both name
/// their fields alike.
macro_rules! acl_filter_of {
    ($wire:expr) => {
        spool_security::acl::AclFilter {
            resource_type: $wire.resource_type_filter,
            resource_name: $wire.resource_name_filter.as_ref().map(ToString::to_string),
            pattern_type: $wire.pattern_type_filter,
            principal: $wire.principal_filter.as_ref().map(ToString::to_string),
            host: $wire.host_filter.as_ref().map(ToString::to_string),
            operation: $wire.operation,
            permission: $wire.permission_type,
        }
    };
}

pub(crate) use acl_filter_of;
