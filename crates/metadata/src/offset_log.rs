//! Kafka's `__consumer_offsets`, read-only, as a compacted log fed by the offset store:
//! every committed offset is also a record of partition
//! [`offsets_topic_partition`]`(group)` of that topic, at the offset that partition's
//! head had when it was committed. A new commit of the same (group, topic, partition)
//! moves the record to the head, as compaction keeps only a key's latest record: the
//! log holds the latest commit of each key, offsets rise with commit order, and the
//! gaps are the commits superseded since. Lag monitors (Burrow and the like) read it
//! unchanged. Deleted offsets leave no tombstone (the record is gone).

use crate::{CommittedOffset, Result};

/// Kafka's default `offsets.topic.num.partitions`; fixed here.
pub const OFFSETS_TOPIC_PARTITIONS: i32 = 50;

/// The partition of `__consumer_offsets` that holds `group`'s records: Kafka's
/// `abs(hashCode(group)) % partitions`, with Java's `String.hashCode` (UTF-16 units).
#[must_use]
pub fn offsets_topic_partition(group: &str) -> i32 {
    let hash = group.encode_utf16().fold(0_i32, |hash, unit| {
        hash.wrapping_mul(31).wrapping_add(i32::from(unit))
    });
    // Kafka's Utils.abs: the one int without a positive counterpart counts as 0.
    let positive = if hash == i32::MIN { 0 } else { hash.abs() };
    positive % OFFSETS_TOPIC_PARTITIONS
}

/// One record of `__consumer_offsets`: a committed offset at its place in the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedOffset {
    pub log_offset: i64,
    pub committed: CommittedOffset,
}

#[async_trait::async_trait]
pub trait OffsetLog {
    /// Partition `partition`'s head: the offset its next record takes (its records
    /// are below it; the log start stays 0, as a compacted log's does).
    async fn offset_log_head(&self, partition: i32) -> Result<i64>;
    /// Up to `limit` records of partition `partition` from offset `from`, below
    /// `below`, by offset.
    async fn offset_log(
        &self,
        partition: i32,
        from: i64,
        below: i64,
        limit: i64,
    ) -> Result<Vec<LoggedOffset>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_hash_to_kafkas_partitions() {
        // Java: "".hashCode() == 0, "a".hashCode() == 97,
        // "console-consumer".hashCode() == -648006740,
        // "polygenelubricants".hashCode() == Integer.MIN_VALUE.
        assert_eq!(offsets_topic_partition(""), 0);
        assert_eq!(offsets_topic_partition("a"), 47);
        assert_eq!(offsets_topic_partition("console-consumer"), 40);
        assert_eq!(offsets_topic_partition("polygenelubricants"), 0);
    }
}
