//! What share groups (KIP-932) keep of each partition they read: the share-partition's
//! state, as its leader last wrote it. The leader shapes it (one text, JSON, with the
//! start offset beside it for those who only describe); the store keeps it and fences
//! it by the state epoch, the partition's leader epoch at the time of writing, so that
//! a leader that lost the partition cannot overwrite its successor's state.
//!
//! Beside the states, the dead letters waiting for another broker: a leader that
//! archives records whose dead-letter partition another broker leads queues their
//! letters with the new state, in one store transaction, and that partition's leader
//! writes them and takes them off.

use uuid::Uuid;

use crate::Result;

/// One share-partition's stored state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharePartitionRecord {
    pub group: String,
    pub topic_id: Uuid,
    pub partition: i32,
    pub state_epoch: i32,
    pub start_offset: i64,
    pub state: String,
}

/// A dead letter queued for the leader of its dead-letter partition: one Kafka record
/// batch, ready to append. Keyed by the record it is the letter of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedDeadLetter {
    pub group: String,
    pub topic_id: Uuid,
    pub partition: i32,
    pub offset: i64,
    pub dead_letter_topic: String,
    pub target_partition: i32,
    pub batch: Vec<u8>,
}

#[async_trait::async_trait]
pub trait SharePartitions {
    /// Takes on a share-partition as its leader at `state_epoch`: its state, if one
    /// was written; `Fenced` if one was written at a later epoch. Writes at earlier
    /// epochs are refused from then on.
    async fn claim_share_partition(
        &self,
        group: &str,
        topic_id: Uuid,
        partition: i32,
        state_epoch: i32,
    ) -> Result<Option<SharePartitionRecord>>;
    /// Stores a share-partition's state, replacing the one before, and queues
    /// `letters` (a letter of a record already queued is not queued twice), in one
    /// store transaction; `Fenced`, and nothing queued, if a state was written or
    /// claimed at a later epoch.
    async fn save_share_partition(
        &self,
        record: &SharePartitionRecord,
        letters: &[QueuedDeadLetter],
    ) -> Result<()>;
    /// Up to `limit` queued dead letters, by dead-letter topic, partition, and the
    /// record they are the letters of.
    async fn queued_dead_letters(&self, limit: u32) -> Result<Vec<QueuedDeadLetter>>;
    /// The letters are written: they leave the queue.
    async fn dead_letters_written(&self, letters: &[QueuedDeadLetter]) -> Result<()>;
    /// The stored share-partitions of `group`, or of every group.
    async fn share_partitions(&self, group: Option<&str>) -> Result<Vec<SharePartitionRecord>>;
    /// Forgets share-partitions of `group`: the given (topic id, partition) pairs, or
    /// all of them.
    async fn delete_share_partitions(
        &self,
        group: &str,
        partitions: Option<&[(Uuid, i32)]>,
    ) -> Result<()>;
}
