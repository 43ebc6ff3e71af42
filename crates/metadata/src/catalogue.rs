//! The catalogue of shared-storage mode: which object holds which offsets of which
//! partition, each partition's log start and high watermark, its idempotent producers'
//! state and its leader epoch history. The objects themselves live in object storage;
//! this store is the only compare-and-set (an object store whose conditional writes
//! are not atomic is enough).
//!
//! The write path commits one object's ranges in one transaction that checks every
//! partition's leader epoch and high watermark ([`Catalogue::commit_object`]): a
//! partition whose row moved (another leader, or a commit this leader lost track of)
//! is refused and nothing of it becomes visible.

use uuid::Uuid;

use crate::Result;

/// A partition, by its topic's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PartitionKey {
    pub topic_id: Uuid,
    pub partition: i32,
}

/// A partition's row in the catalogue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionState {
    pub leader_epoch: i32,
    pub log_start: i64,
    /// Offsets below it are committed (in objects the catalogue lists).
    pub high_watermark: i64,
    /// The idempotent producers' state as of the high watermark, as the log encodes
    /// it; `None` before the first commit.
    pub producer_state: Option<Vec<u8>>,
    /// A compacted partition is clean below it (each key has at most one record
    /// there); zero if never cleaned.
    pub cleaned_offset: i64,
    /// Which leader epoch began at which offset, oldest first.
    pub epochs: Vec<(i32, i64)>,
}

/// What a broker that does not lead a partition reads of it to serve its committed
/// records (see [`Catalogue::committed_marks`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedMarks {
    pub key: PartitionKey,
    pub leader_epoch: i32,
    pub log_start: i64,
    pub high_watermark: i64,
    pub cleaned_offset: i64,
    /// The producer state as of the high watermark (its transactions give the last
    /// stable offset and the aborted ones), when asked for and committed.
    pub producer_state: Option<Vec<u8>>,
}

/// One partition's part of an object being committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeCommit {
    pub key: PartitionKey,
    /// The leader epoch the batches were written under: the commit is refused if the
    /// partition's epoch moved.
    pub leader_epoch: i32,
    /// The high watermark the range continues: the commit is refused unless it is
    /// the partition's (nothing lost, nothing twice). The range's base offset, or
    /// below it when the range starts past a gap (a mirror's batches keep their
    /// source's offsets).
    pub from_offset: i64,
    /// The first offset of the range.
    pub base_offset: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
    /// Where the range's bytes are in the object.
    pub position: i64,
    pub length: i64,
    /// The producers' state as of `last_offset + 1`.
    pub producer_state: Option<Vec<u8>>,
}

/// An object written and the ranges in it to make visible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectCommit {
    /// The object's name (never reused).
    pub name: String,
    pub size: i64,
    pub ranges: Vec<RangeCommit>,
}

/// A range of a partition's batches in an object, as the read path finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRange {
    pub base_offset: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
    pub object: String,
    pub position: i64,
    pub length: i64,
}

/// The catalogue of shared-storage mode. Every method is one transaction.
#[async_trait::async_trait]
pub trait Catalogue: Send + Sync {
    /// Records an object and makes visible the ranges whose partition is still at
    /// their leader epoch and high watermark, moving each accepted partition's high
    /// watermark past its range; returns, per range in order, whether it was accepted.
    async fn commit_object(&self, commit: &ObjectCommit) -> Result<Vec<bool>>;
    /// The partition's row, with its epoch history; `None` if it does not exist.
    async fn partition_state(&self, key: PartitionKey) -> Result<Option<PartitionState>>;
    /// The committed marks of the partitions of `keys` that exist, in one lookup per
    /// few hundred partitions; with their producer states if `producer_states`.
    async fn committed_marks(
        &self,
        keys: &[PartitionKey],
        producer_states: bool,
    ) -> Result<Vec<CommittedMarks>>;
    /// Records that `epoch` began at `start_offset` (kept if already recorded).
    async fn begin_epoch(&self, key: PartitionKey, epoch: i32, start_offset: i64) -> Result<()>;
    /// The ranges holding offsets from `offset` on, in order, as many as cover
    /// `max_bytes` (at least one, at most `limit`): a bounded lookup whatever the lag.
    async fn ranges_from(
        &self,
        key: PartitionKey,
        offset: i64,
        max_bytes: i64,
        limit: i64,
    ) -> Result<Vec<StoredRange>>;
    /// The first range (from the log start) holding a batch whose max timestamp is
    /// at least `timestamp`.
    async fn range_for_timestamp(
        &self,
        key: PartitionKey,
        timestamp: i64,
    ) -> Result<Option<StoredRange>>;
    /// The range holding the largest timestamp (the earliest such).
    async fn range_with_max_timestamp(&self, key: PartitionKey) -> Result<Option<StoredRange>>;
    /// Moves the log start up to `offset` (never past the high watermark, never
    /// back) and forgets the ranges wholly below it; returns the new log start.
    async fn advance_log_start(&self, key: PartitionKey, offset: i64) -> Result<i64>;
    /// Compaction's and the cleaner's swap: in one transaction, while the partition
    /// is at `leader_epoch`, records `object` and puts its ranges in place of the
    /// `replaced` ones (matched by offsets, object and position). Refused (`false`,
    /// nothing changed) if the epoch moved or any of those ranges is gone (retention,
    /// DeleteRecords or another rewrite took it).
    async fn replace_ranges(
        &self,
        key: PartitionKey,
        leader_epoch: i32,
        replaced: &[StoredRange],
        object: &ObjectCommit,
    ) -> Result<bool>;
    /// The cleaner's mark: moves the partition's cleaned offset up to `offset` (never
    /// back) while it is at `leader_epoch`; `false` if the epoch moved.
    async fn advance_cleaned_offset(
        &self,
        key: PartitionKey,
        leader_epoch: i32,
        offset: i64,
    ) -> Result<bool>;
    /// Notes, at `now_ms`, the objects no range refers to any more (those not noted
    /// already); returns how many were noted.
    async fn note_unreferenced_objects(&self, now_ms: i64) -> Result<u64>;
    /// Objects noted unreferenced before `before_ms`, at most `limit`: to delete.
    async fn unreferenced_objects(&self, before_ms: i64, limit: i64) -> Result<Vec<String>>;
    /// Forgets objects (once deleted from the object store).
    async fn forget_objects(&self, names: &[String]) -> Result<()>;
    /// Which of `names` the catalogue knows (an object it does not know and that is
    /// old enough was written by a commit that never happened).
    async fn known_objects(&self, names: &[String]) -> Result<Vec<String>>;
}
