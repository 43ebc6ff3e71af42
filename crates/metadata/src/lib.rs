//! Spool's metadata: which topics exist, with how many partitions and which configs,
//! the broker configs changed at run time, and consumer groups' committed offsets.
//!
//! [`MetadataStore`] is the narrow interface the broker uses; [`SqliteStore`] keeps it
//! in an embedded SQLite database inside the data directory (the single-node mode).
//! A PostgreSQL backend implementing the same trait comes with the cluster mode.

mod sqlite;

use std::collections::BTreeMap;

use spool_model::TopicName;
use uuid::Uuid;

pub use sqlite::SqliteStore;

/// A topic as the metadata store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicRecord {
    pub name: TopicName,
    pub id: Uuid,
    pub partitions: i32,
    /// Topic-level configs set explicitly, by their Kafka names.
    pub configs: BTreeMap<String, String>,
}

/// A consumer group's committed offset for one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedOffset {
    pub group: String,
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    /// -1 when the client did not send one.
    pub leader_epoch: i32,
    pub metadata: Option<String>,
    /// When it was committed (ms since the epoch), for expiry.
    pub commit_ms: i64,
}

/// Why a metadata operation failed.
#[derive(Debug, thiserror::Error)]
pub enum MetadataError {
    #[error("topic {0} already exists")]
    TopicExists(String),
    #[error("topic {0} does not exist")]
    UnknownTopic(String),
    #[error("metadata store: {0}")]
    Database(#[from] sqlx::Error),
    #[error("metadata store migration: {0}")]
    Migration(#[from] sqlx::migrate::MigrateError),
    #[error("metadata store holds an invalid record: {0}")]
    Corrupt(String),
}

pub type Result<T> = std::result::Result<T, MetadataError>;

/// Where topics and configs are kept. Every change is durable when it returns.
#[async_trait::async_trait]
pub trait MetadataStore: Send + Sync + std::fmt::Debug {
    async fn create_topic(&self, topic: &TopicRecord) -> Result<()>;
    /// Deletes a topic; `UnknownTopic` if there is none.
    async fn delete_topic(&self, name: &TopicName) -> Result<()>;
    async fn topics(&self) -> Result<Vec<TopicRecord>>;
    /// Sets a topic's partition count (only ever raised).
    async fn set_partitions(&self, name: &TopicName, partitions: i32) -> Result<()>;
    /// Replaces a topic's explicit configs.
    async fn set_topic_configs(
        &self,
        name: &TopicName,
        configs: &BTreeMap<String, String>,
    ) -> Result<()>;
    /// Dynamic broker configs by scope: `""` is the cluster-wide default, otherwise
    /// the node id they apply to.
    async fn broker_configs(&self) -> Result<BTreeMap<String, BTreeMap<String, String>>>;
    /// Replaces the dynamic broker configs of one scope.
    async fn set_broker_configs(
        &self,
        scope: &str,
        configs: &BTreeMap<String, String>,
    ) -> Result<()>;
    /// Every committed offset of every group.
    async fn committed_offsets(&self) -> Result<Vec<CommittedOffset>>;
    /// Stores committed offsets (replacing earlier ones of the same partitions), all
    /// or none.
    async fn commit_offsets(&self, offsets: &[CommittedOffset]) -> Result<()>;
    /// Takes `count` producer ids that were never handed out; returns the first.
    async fn allocate_producer_ids(&self, count: i64) -> Result<i64>;
    /// Deletes a group's committed offsets: the given (topic, partition) pairs, or
    /// all of them when `partitions` is `None`.
    async fn delete_offsets(&self, group: &str, partitions: Option<&[(String, i32)]>)
    -> Result<()>;
}
