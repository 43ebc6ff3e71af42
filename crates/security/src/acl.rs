//! Kafka's ACL model: what a binding names (a resource pattern and an entry) and what
//! a filter of DescribeAcls or DeleteAcls matches, with the wire codes of each field.

use spool_metadata::AclRecord;

/// The resource types Spool authorizes (DELEGATION_TOKEN and USER, which it has no
/// use for, are refused in bindings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResourceType {
    Topic,
    Group,
    Cluster,
    TransactionalId,
}

impl ResourceType {
    pub fn from_code(code: i8) -> Option<ResourceType> {
        Some(match code {
            2 => ResourceType::Topic,
            3 => ResourceType::Group,
            4 => ResourceType::Cluster,
            5 => ResourceType::TransactionalId,
            _ => return None,
        })
    }

    pub fn code(self) -> i8 {
        match self {
            ResourceType::Topic => 2,
            ResourceType::Group => 3,
            ResourceType::Cluster => 4,
            ResourceType::TransactionalId => 5,
        }
    }

    pub fn index(self) -> usize {
        match self {
            ResourceType::Topic => 0,
            ResourceType::Group => 1,
            ResourceType::Cluster => 2,
            ResourceType::TransactionalId => 3,
        }
    }

    /// The operations that mean something on this type: what an authorized-operations
    /// bitfield is made of.
    pub fn operations(self) -> &'static [Operation] {
        use Operation::*;
        match self {
            ResourceType::Topic => &[
                Read,
                Write,
                Create,
                Delete,
                Alter,
                Describe,
                DescribeConfigs,
                AlterConfigs,
            ],
            ResourceType::Group => &[Read, Delete, Describe],
            ResourceType::Cluster => &[
                Create,
                Alter,
                Describe,
                ClusterAction,
                DescribeConfigs,
                AlterConfigs,
                IdempotentWrite,
            ],
            ResourceType::TransactionalId => &[Write, Describe],
        }
    }
}

/// The one cluster resource's name.
pub const CLUSTER_NAME: &str = "kafka-cluster";

/// Wire codes of the filter-only values.
pub const ANY: i8 = 1;
pub const MATCH: i8 = 2;

/// How a binding's resource name matches a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PatternType {
    /// The name itself, or every resource of the type for `*`.
    Literal,
    /// Every resource whose name starts with it.
    Prefixed,
}

impl PatternType {
    pub fn from_code(code: i8) -> Option<PatternType> {
        match code {
            3 => Some(PatternType::Literal),
            4 => Some(PatternType::Prefixed),
            _ => None,
        }
    }

    #[cfg(test)]
    pub fn code(self) -> i8 {
        match self {
            PatternType::Literal => 3,
            PatternType::Prefixed => 4,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    All,
    Read,
    Write,
    Create,
    Delete,
    Alter,
    Describe,
    ClusterAction,
    DescribeConfigs,
    AlterConfigs,
    IdempotentWrite,
}

impl Operation {
    pub fn from_code(code: i8) -> Option<Operation> {
        use Operation::*;
        Some(match code {
            2 => All,
            3 => Read,
            4 => Write,
            5 => Create,
            6 => Delete,
            7 => Alter,
            8 => Describe,
            9 => ClusterAction,
            10 => DescribeConfigs,
            11 => AlterConfigs,
            12 => IdempotentWrite,
            _ => return None,
        })
    }

    pub fn code(self) -> i8 {
        use Operation::*;
        match self {
            All => 2,
            Read => 3,
            Write => 4,
            Create => 5,
            Delete => 6,
            Alter => 7,
            Describe => 8,
            ClusterAction => 9,
            DescribeConfigs => 10,
            AlterConfigs => 11,
            IdempotentWrite => 12,
        }
    }

    /// Whether an ALLOW of `self` allows `wanted`: itself, anything for ALL, and
    /// Kafka's implications (DESCRIBE by READ, WRITE, DELETE or ALTER;
    /// DESCRIBE_CONFIGS by ALTER_CONFIGS).
    pub fn allows(self, wanted: Operation) -> bool {
        use Operation::*;
        self == wanted
            || self == All
            || (wanted == Describe && matches!(self, Read | Write | Delete | Alter))
            || (wanted == DescribeConfigs && self == AlterConfigs)
    }

    /// Whether a DENY of `self` denies `wanted`: itself, and anything for ALL (a
    /// denial implies nothing else).
    pub fn denies(self, wanted: Operation) -> bool {
        self == wanted || self == Operation::All
    }
}

pub const DENY: i8 = 2;
pub const ALLOW: i8 = 3;

/// Why a binding cannot be created.
pub fn invalid_binding(acl: &AclRecord) -> Option<&'static str> {
    if ResourceType::from_code(acl.resource_type).is_none() {
        return Some("the resource type must be TOPIC, GROUP, CLUSTER or TRANSACTIONAL_ID");
    }
    if PatternType::from_code(acl.pattern_type).is_none() {
        return Some("the pattern type must be LITERAL or PREFIXED");
    }
    if Operation::from_code(acl.operation).is_none() {
        return Some("the operation must be a specific one (not ANY)");
    }
    if !matches!(acl.permission, DENY | ALLOW) {
        return Some("the permission must be ALLOW or DENY");
    }
    if acl.resource_name.is_empty() {
        return Some("the resource name must not be empty");
    }
    if acl.resource_type == ResourceType::Cluster.code() && acl.resource_name != CLUSTER_NAME {
        return Some("the cluster resource is named kafka-cluster");
    }
    if !acl
        .principal
        .split_once(':')
        .is_some_and(|(kind, name)| !kind.is_empty() && !name.is_empty())
    {
        return Some("the principal must be of the form User:name (or User:*)");
    }
    if acl.host.is_empty() {
        return Some("the host must be an IP address or *");
    }
    None
}

/// A filter of DescribeAcls or DeleteAcls: codes as sent, `None` strings for any.
#[derive(Debug, Clone)]
pub struct AclFilter {
    pub resource_type: i8,
    pub resource_name: Option<String>,
    pub pattern_type: i8,
    pub principal: Option<String>,
    pub host: Option<String>,
    pub operation: i8,
    pub permission: i8,
}

impl AclFilter {
    /// Why the filter can match nothing sensible (an unknown code).
    pub fn invalid(&self) -> Option<&'static str> {
        let known_type = self.resource_type == ANY || (2..=7).contains(&self.resource_type);
        if !known_type {
            return Some("unknown resource type");
        }
        if !(ANY..=4).contains(&self.pattern_type) {
            return Some("unknown pattern type");
        }
        if !(ANY..=14).contains(&self.operation) {
            return Some("unknown operation");
        }
        if !(ANY..=ALLOW).contains(&self.permission) {
            return Some("unknown permission type");
        }
        None
    }

    pub fn matches(&self, acl: &AclRecord) -> bool {
        let code_matches = |filter: i8, value: i8| filter == ANY || filter == value;
        let text_matches =
            |filter: &Option<String>, value: &str| filter.as_deref().is_none_or(|f| f == value);
        code_matches(self.resource_type, acl.resource_type)
            && self.pattern_matches(acl)
            && text_matches(&self.principal, &acl.principal)
            && text_matches(&self.host, &acl.host)
            && code_matches(self.operation, acl.operation)
            && code_matches(self.permission, acl.permission)
    }

    /// The resource half: an exact pattern, or for MATCH every binding that would apply
    /// to the named resource (the name, `*`, prefixes of it).
    fn pattern_matches(&self, acl: &AclRecord) -> bool {
        if self.pattern_type == MATCH {
            let Some(name) = &self.resource_name else {
                return true;
            };
            return match PatternType::from_code(acl.pattern_type) {
                Some(PatternType::Literal) => {
                    acl.resource_name == *name || acl.resource_name == "*"
                }
                Some(PatternType::Prefixed) => name.starts_with(&acl.resource_name),
                None => false,
            };
        }
        (self.pattern_type == ANY || self.pattern_type == acl.pattern_type)
            && self
                .resource_name
                .as_deref()
                .is_none_or(|name| name == acl.resource_name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding(name: &str, pattern: PatternType, operation: Operation) -> AclRecord {
        AclRecord {
            resource_type: ResourceType::Topic.code(),
            resource_name: name.to_owned(),
            pattern_type: pattern.code(),
            principal: "User:alice".to_owned(),
            host: "*".to_owned(),
            operation: operation.code(),
            permission: ALLOW,
        }
    }

    fn filter(name: Option<&str>, pattern_type: i8) -> AclFilter {
        AclFilter {
            resource_type: ANY,
            resource_name: name.map(str::to_owned),
            pattern_type,
            principal: None,
            host: None,
            operation: ANY,
            permission: ANY,
        }
    }

    #[test]
    fn implications_run_one_way() {
        assert!(Operation::Read.allows(Operation::Describe));
        assert!(Operation::AlterConfigs.allows(Operation::DescribeConfigs));
        assert!(!Operation::Describe.allows(Operation::Read));
        assert!(Operation::All.allows(Operation::IdempotentWrite));
        assert!(!Operation::Read.denies(Operation::Describe));
        assert!(Operation::All.denies(Operation::Write));
    }

    #[test]
    fn match_filters_find_what_applies_to_a_name() {
        let literal = binding("orders", PatternType::Literal, Operation::Read);
        let wildcard = binding("*", PatternType::Literal, Operation::Read);
        let prefix = binding("ord", PatternType::Prefixed, Operation::Read);
        let other = binding("pay", PatternType::Prefixed, Operation::Read);
        let matching = filter(Some("orders"), MATCH);
        assert!(matching.matches(&literal));
        assert!(matching.matches(&wildcard));
        assert!(matching.matches(&prefix));
        assert!(!matching.matches(&other));
        // ANY matches names exactly, of any pattern type.
        let any = filter(Some("ord"), ANY);
        assert!(any.matches(&prefix));
        assert!(!any.matches(&literal));
        let literal_only = filter(None, PatternType::Literal.code());
        assert!(literal_only.matches(&wildcard));
        assert!(!literal_only.matches(&prefix));
    }

    #[test]
    fn bindings_must_be_specific() {
        let mut acl = binding("orders", PatternType::Literal, Operation::Read);
        assert_eq!(invalid_binding(&acl), None);
        acl.operation = ANY;
        assert!(invalid_binding(&acl).is_some());
        acl.operation = Operation::Read.code();
        acl.principal = "alice".to_owned();
        assert!(invalid_binding(&acl).is_some());
        acl.principal = "User:alice".to_owned();
        acl.resource_type = ResourceType::Cluster.code();
        assert!(invalid_binding(&acl).is_some());
        acl.resource_name = CLUSTER_NAME.to_owned();
        assert_eq!(invalid_binding(&acl), None);
    }
}
