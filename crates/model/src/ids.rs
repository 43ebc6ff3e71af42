//! Newtypes for offsets, timestamps and producer identities.

use std::fmt;

/// A logical offset within one partition: the position of a record in the partition's
/// sequence, not a byte position in any file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Offset(pub i64);

impl Offset {
    pub const ZERO: Offset = Offset(0);

    /// The offset `delta` records after this one.
    #[must_use]
    pub fn plus(self, delta: i64) -> Offset {
        Offset(self.0.saturating_add(delta))
    }

    /// The number of offsets from `earlier` up to (not including) `self`.
    #[must_use]
    pub fn distance_from(self, earlier: Offset) -> i64 {
        self.0.saturating_sub(earlier.0)
    }
}

impl fmt::Display for Offset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Milliseconds since the Unix epoch, as Kafka timestamps are. `-1` means "none".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// Kafka's "no timestamp" value.
    pub const NONE: Timestamp = Timestamp(-1);

    /// The system's wall-clock time now (domain code asks its [`crate::Clock`]).
    #[must_use]
    pub fn now() -> Timestamp {
        crate::Clock::System.timestamp()
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A partition index within a topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PartitionId(pub i32);

impl fmt::Display for PartitionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// An idempotent or transactional producer's id; `-1` for a plain producer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProducerId(pub i64);

impl ProducerId {
    pub const NONE: ProducerId = ProducerId(-1);
}

/// A producer's epoch; a higher epoch fences the older ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProducerEpoch(pub i16);

impl ProducerEpoch {
    pub const NONE: ProducerEpoch = ProducerEpoch(-1);
}

/// A producer's per-partition sequence number of the first record of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sequence(pub i32);

impl Sequence {
    pub const NONE: Sequence = Sequence(-1);
}
