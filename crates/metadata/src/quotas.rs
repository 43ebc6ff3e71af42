//! Client quotas (KIP-13, KIP-124, KIP-546): per entity (a user, a client id, or both,
//! each named or the default), a rate by its Kafka name (`producer_byte_rate`,
//! `consumer_byte_rate`, `request_percentage`). A change moves the topics version, so
//! every broker following the store loads them again.

use crate::Result;

/// One part of a quota entity: absent, the default (`<default>`), or a name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EntityPart {
    Absent,
    Default,
    Named(String),
}

/// What a quota applies to: a user, a client id, or a user's client id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QuotaEntity {
    pub user: EntityPart,
    pub client_id: EntityPart,
}

/// One quota: an entity's value for a key.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaRecord {
    pub entity: QuotaEntity,
    pub key: String,
    pub value: f64,
}

#[async_trait::async_trait]
pub trait ClientQuotas {
    /// Sets (`Some`) or removes (`None`) quotas, all in one transaction.
    async fn alter_quotas(&self, changes: &[(QuotaEntity, String, Option<f64>)]) -> Result<()>;
    /// Every quota.
    async fn quotas(&self) -> Result<Vec<QuotaRecord>>;
}
