//! Mirror links (BMQ's Mirror): on the target cluster, which source cluster's topics
//! (and groups' offsets) are copied here at their own offsets. Kept in the store so
//! that every broker of a cluster mirrors the partitions it leads by the same links.

use uuid::Uuid;

use crate::Result;

/// One link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorLinkRecord {
    pub name: String,
    /// The source cluster's bootstrap brokers (`host:port`, separated by commas).
    pub source: String,
    /// The source client's settings by librdkafka's names (security, TLS, SASL), in
    /// order.
    pub source_config: Vec<(String, String)>,
    /// The source topics mirrored: those whose whole name the regex matches.
    pub topics: String,
    /// The consumer groups whose committed offsets are copied (none when `None`).
    pub groups: Option<String>,
    /// Where a new mirror topic starts: `earliest` (the source's log start) or
    /// `latest` (its end when the mirror topic is made).
    pub start: String,
    /// A paused link fetches nothing until resumed.
    pub paused: bool,
    /// The topics failed over: writable here, no longer followed.
    pub failed_over: Vec<String>,
    pub created_ms: i64,
}

/// What one broker reported of a link it follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorStatusRecord {
    pub node_id: i32,
    /// The broker's own encoding (JSON), opaque here.
    pub status: String,
    pub updated_ms: i64,
}

/// A failed-over mirror partition, as its leader settled it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorFailoverRecord {
    pub topic_id: Uuid,
    pub partition: i32,
    /// The log end when it was settled: the source's records end there.
    pub log_end: i64,
    /// Every producer id of the source in the partition is below it.
    pub producer_id_floor: i64,
    pub settled_ms: i64,
}

#[async_trait::async_trait]
pub trait MirrorLinks {
    /// Adds the link `record.name`, or replaces it.
    async fn put_mirror_link(&self, record: &MirrorLinkRecord) -> Result<()>;
    /// Every link, by name.
    async fn mirror_links(&self) -> Result<Vec<MirrorLinkRecord>>;
    /// Removes the link `name` and what brokers reported of it; whether there was one.
    async fn remove_mirror_link(&self, name: &str) -> Result<bool>;
    /// Replaces what broker `node_id` reports of `link`.
    async fn put_mirror_status(
        &self,
        link: &str,
        node_id: i32,
        status: &str,
        now_ms: i64,
    ) -> Result<()>;
    /// What every broker reported of `link`, by node id.
    async fn mirror_statuses(&self, link: &str) -> Result<Vec<MirrorStatusRecord>>;
    /// Records that `record`'s partition was settled, unless it already was; whether
    /// this call recorded it (the first settling stands).
    async fn put_mirror_failover(&self, record: &MirrorFailoverRecord) -> Result<bool>;
    /// How the failed-over partition was first settled, if it was.
    async fn mirror_failover(
        &self,
        topic_id: Uuid,
        partition: i32,
    ) -> Result<Option<MirrorFailoverRecord>>;
    /// The highest producer-id floor a settling found, if any partition was settled.
    async fn mirror_failover_floor(&self) -> Result<Option<i64>>;
}
