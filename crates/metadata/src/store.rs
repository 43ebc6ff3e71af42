//! The one interface the broker uses: every part of the store together.

use std::collections::BTreeMap;

use uuid::Uuid;

use crate::{
    Acls, Catalogue, ClientQuotas, Cluster, CommittedOffset, ConfigChange, DelayedRecords,
    GroupStates, LanePresences, MirrorLinks, OffsetLog, Result, SchemaRegistryStore,
    ScramCredentials, SharePartitions, TableFiles, TopicRecord, Transactions, TxnCheckers,
};

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
    + GroupStates
    + SharePartitions
    + TxnCheckers
    + LanePresences
    + MirrorLinks
    + OffsetLog
    + SchemaRegistryStore
    + TableFiles
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
    /// Keeps the brokers a client named for a topic's partitions
    /// ([`crate::TopicRecord::replica_assignment`]), all of them at once.
    async fn set_replica_assignment(&self, id: Uuid, assignment: &[Vec<i32>]) -> Result<()>;
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
