//! Spool's metadata: which topics exist (keyed by their id), with how many partitions,
//! their configs and leader epochs; the broker configs changed at run time; consumer
//! groups' committed offsets and coordinator epochs; the producer ids handed out; and,
//! in shared-storage mode, the [`Catalogue`] of what is where in object storage and
//! the [`Cluster`]'s membership, controller lease and partition leaders; and the
//! [`Transactions`] of the transaction coordinator.
//!
//! [`MetadataStore`] is the one interface the broker uses. Two backends implement it
//! with the same SQL and the same semantics (the conformance suite in
//! `tests/conformance.rs` runs against both): [`SqliteStore`], an embedded database in
//! the data directory (one broker), and [`PostgresStore`], which several brokers share.
//! [`open`] picks one from a `--metadata-url`.
//!
//! Every operation is safe when several brokers share the store: each is one
//! transaction whose outcome does not depend on a read made before it (producer-id
//! blocks are taken by one `UPDATE … RETURNING`, configs change key by key, committed
//! offsets are fenced by the coordinator epoch in the same transaction).

mod acls;
mod acls_sql;
mod catalogue;
mod catalogue_sql;
mod cluster;
mod cluster_sql;
mod credentials;
mod credentials_sql;
mod delayed;
mod delayed_sql;
mod error;
mod faulty;
mod postgres;
mod quotas;
mod quotas_sql;
mod sql;
mod sqlite;
mod transactions;
mod transactions_sql;
mod url;

use std::collections::BTreeMap;

use spool_model::TopicName;
use uuid::Uuid;

pub use acls::{AclRecord, Acls};
pub use catalogue::{
    Catalogue, ObjectCommit, PartitionKey, PartitionState, RangeCommit, StoredRange,
};
pub use cluster::{
    BrokerEndpoint, BrokerLease, BrokerRecord, Cluster, ControllerLease, Leadership, PartitionMove,
};
pub use credentials::{ScramCredentialRecord, ScramCredentials};
pub use delayed::{DelayedRecord, DelayedRecords, PendingHolds};
pub use error::MetadataError;
pub use faulty::FaultyMetadata;
pub use postgres::PostgresStore;
pub use quotas::{ClientQuotas, EntityPart, QuotaEntity, QuotaRecord};
pub use sqlite::SqliteStore;
pub use transactions::{
    SettleOffsets, TransactionRecord, Transactions, TxnMarker, TxnState, TxnUpdate,
};
pub use url::{MetadataUrl, open};

/// A topic as the metadata store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicRecord {
    pub name: TopicName,
    /// What the topic's data, partitions and committed offsets are keyed by: a topic
    /// deleted and created again under the same name is another topic.
    pub id: Uuid,
    pub partitions: i32,
    /// Topic-level configs set explicitly, by their Kafka names.
    pub configs: BTreeMap<String, String>,
}

/// A consumer group's committed offset for one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedOffset {
    pub group: String,
    /// The topic's name: filled in when read (from the topic the id names), not
    /// stored with the offset.
    pub topic: String,
    /// What the offset belongs to: it goes when the topic does.
    pub topic_id: Uuid,
    pub partition: i32,
    pub offset: i64,
    /// -1 when the client did not send one.
    pub leader_epoch: i32,
    pub metadata: Option<String>,
    /// When it was committed (ms since the epoch), for expiry.
    pub commit_ms: i64,
}

/// One change of a set of configs: a key set to a value, or removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigChange {
    Set { key: String, value: String },
    Delete { key: String },
}

impl ConfigChange {
    /// The changes that turn the configs `from` into `to`, key by key.
    #[must_use]
    pub fn between(
        from: &BTreeMap<String, String>,
        to: &BTreeMap<String, String>,
    ) -> Vec<ConfigChange> {
        let removed = from
            .keys()
            .filter(|key| !to.contains_key(*key))
            .map(|key| ConfigChange::Delete { key: key.clone() });
        let set = to
            .iter()
            .filter(|(key, value)| from.get(*key) != Some(*value))
            .map(|(key, value)| ConfigChange::Set {
                key: key.clone(),
                value: value.clone(),
            });
        removed.chain(set).collect()
    }
}

pub type Result<T> = std::result::Result<T, MetadataError>;

/// Where topics, configs, offsets and ids are kept. Every change is durable when it
/// returns, and visible to every broker sharing the store.
#[async_trait::async_trait]
pub trait MetadataStore:
    Catalogue
    + Cluster
    + Transactions
    + DelayedRecords
    + ScramCredentials
    + Acls
    + ClientQuotas
    + Send
    + Sync
    + std::fmt::Debug
{
    /// Creates a topic with its configs and its partitions at leader epoch 0;
    /// `TopicExists` if one of that name exists.
    async fn create_topic(&self, topic: &TopicRecord) -> Result<()>;
    /// Deletes a topic with its configs, partitions and every committed offset of it;
    /// `UnknownTopic` if there is none.
    async fn delete_topic(&self, id: Uuid) -> Result<()>;
    async fn topics(&self) -> Result<Vec<TopicRecord>>;
    /// The store's own id, made at its first use and never changed: a data directory
    /// records the store it belongs to and refuses another.
    async fn store_id(&self) -> Result<Uuid>;
    /// Raised by every change of a topic (created, deleted, grown, configs altered)
    /// and of the broker configs, whoever made it: a broker that sees it move reloads
    /// [`MetadataStore::topics`] and [`MetadataStore::broker_configs`].
    async fn topics_version(&self) -> Result<i64>;
    /// Raises a topic's partition count to `partitions` (the new ones at leader epoch
    /// 0); `Conflict` if it has as many already (another broker grew it).
    async fn add_partitions(&self, id: Uuid, partitions: i32) -> Result<()>;
    /// Changes a topic's explicit configs, key by key.
    async fn alter_topic_configs(&self, id: Uuid, changes: &[ConfigChange]) -> Result<()>;
    /// Raises the leader epoch of every partition of a topic by one (a broker taking
    /// ownership); returns the new epochs by partition index.
    async fn bump_leader_epochs(&self, id: Uuid) -> Result<Vec<i32>>;
    /// Raises the leader epoch of every partition of every topic by one, in one
    /// transaction (a single broker taking ownership of everything at start); returns
    /// the new epochs by topic id, each topic's by partition index.
    async fn bump_all_leader_epochs(&self) -> Result<std::collections::HashMap<Uuid, Vec<i32>>>;
    /// Dynamic broker configs by scope: `""` is the cluster-wide default, otherwise
    /// the node id they apply to.
    async fn broker_configs(&self) -> Result<BTreeMap<String, BTreeMap<String, String>>>;
    /// Changes the dynamic broker configs of one scope, key by key.
    async fn alter_broker_configs(&self, scope: &str, changes: &[ConfigChange]) -> Result<()>;
    /// Makes node `node_id` the coordinator of `group`: returns a coordinator epoch
    /// larger than any handed out for it before. Writes made with an older epoch are
    /// refused (`Fenced`) from then on.
    async fn claim_group(&self, group: &str, node_id: i32) -> Result<i64>;
    /// The node that claimed `group` last, if any did.
    async fn group_claimant(&self, group: &str) -> Result<Option<i32>>;
    /// One group's committed offsets (what a new coordinator of it starts from).
    async fn group_offsets(&self, group: &str) -> Result<Vec<CommittedOffset>>;
    /// Every committed offset of every group.
    async fn committed_offsets(&self) -> Result<Vec<CommittedOffset>>;
    /// Stores a group's committed offsets (replacing earlier ones of the same
    /// partitions), all or none; `Fenced` unless `coordinator_epoch` is the group's
    /// latest claim, `UnknownTopic` if a topic id names no topic.
    async fn commit_offsets(
        &self,
        group: &str,
        coordinator_epoch: i64,
        offsets: &[CommittedOffset],
    ) -> Result<()>;
    /// Deletes a group's committed offsets: of the given (topic id, partition) pairs,
    /// or all of them when `partitions` is `None`; fenced as commits are.
    async fn delete_offsets(
        &self,
        group: &str,
        coordinator_epoch: i64,
        partitions: Option<&[(Uuid, i32)]>,
    ) -> Result<()>;
    /// Takes `count` producer ids that were never handed out; returns the first.
    async fn allocate_producer_ids(&self, count: i64) -> Result<i64>;
}
