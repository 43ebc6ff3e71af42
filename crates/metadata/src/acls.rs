//! ACL bindings, as Kafka's authorizer keeps them: a resource pattern (type, name,
//! pattern type) with an entry (principal, host, operation, permission), each field by
//! its wire code. Every broker sharing the store reads the same ones, and a change
//! moves the topics version, so every broker following the store loads them again.

use crate::Result;

/// One binding, fields as on the wire (see `docs/security.md`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AclRecord {
    pub resource_type: i8,
    pub resource_name: String,
    pub pattern_type: i8,
    /// `User:name` or `User:*`.
    pub principal: String,
    /// An IP address or `*`.
    pub host: String,
    pub operation: i8,
    pub permission: i8,
}

#[async_trait::async_trait]
pub trait Acls {
    /// Adds bindings; one there already stays as it is.
    async fn create_acls(&self, acls: &[AclRecord]) -> Result<()>;
    /// Removes bindings; those that were there, in the order given.
    async fn delete_acls(&self, acls: &[AclRecord]) -> Result<Vec<AclRecord>>;
    /// Every binding.
    async fn acls(&self) -> Result<Vec<AclRecord>>;
}
