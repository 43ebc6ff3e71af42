//! Delayed delivery's timer. A delayed record waits in its own partition as a hold
//! batch (consumers skip it); the store keeps, per hold, when it is due, so that the
//! partition's leader finds what is due without scanning its log, and millions of
//! pending records cost no memory. Each partition also records how far its log has
//! been searched for holds: a leader notes holds after appending them, and one that
//! takes over (or restarts) searches only the log after that point.
//!
//! Delivering is made exactly-once with an intent: before a due record is appended
//! again, its row gets the partition's log end (`delivering_from`); once the delivery
//! is durable the row goes. A leader that finds an intent looks for the delivery from
//! that offset on before delivering again.

use crate::{PartitionKey, Result};

/// A held record's place in the timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DelayedRecord {
    pub key: PartitionKey,
    /// The offset of its hold batch.
    pub hold_offset: i64,
    /// When it is due (epoch ms).
    pub due_ms: i64,
    /// Set once a delivery was begun: the partition's log end just before it.
    pub delivering_from: Option<i64>,
}

/// How many held records a partition has, and when the next is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PendingHolds {
    pub count: i64,
    pub next_due_ms: Option<i64>,
}

#[async_trait::async_trait]
pub trait DelayedRecords {
    /// Notes holds (offset, due ms) found in the partition's log, and that its log has
    /// been searched for holds up to `through` (exclusive; the mark never moves back).
    /// A hold noted twice is noted once; holds of a deleted topic are dropped.
    async fn note_holds(&self, key: PartitionKey, holds: &[(i64, i64)], through: i64)
    -> Result<()>;
    /// How far the partition's log has been searched for holds (0: not at all).
    async fn holds_noted_through(&self, key: PartitionKey) -> Result<i64>;
    /// Up to `limit` of the partition's holds due at `now_ms`, by due time then
    /// offset.
    async fn due_holds(
        &self,
        key: PartitionKey,
        now_ms: i64,
        limit: i64,
    ) -> Result<Vec<DelayedRecord>>;
    /// Records that deliveries of these holds begin with the log at `log_end`.
    async fn begin_delivery(
        &self,
        key: PartitionKey,
        hold_offsets: &[i64],
        log_end: i64,
    ) -> Result<()>;
    /// Forgets delivered holds.
    async fn holds_delivered(&self, key: PartitionKey, hold_offsets: &[i64]) -> Result<()>;
    /// The partition's pending holds (a count over all of them: for showing, not for
    /// every round).
    async fn pending_holds(&self, key: PartitionKey) -> Result<PendingHolds>;
    /// When the partition's next hold is due (epoch ms), by the due-time index.
    async fn next_hold_due(&self, key: PartitionKey) -> Result<Option<i64>>;
}
