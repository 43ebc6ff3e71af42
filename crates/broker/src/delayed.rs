//! Delayed delivery (`delivery.delay.enable`): a record with a due time in the future
//! waits in its own partition as a hold batch, which consumers skip, and is appended
//! to the partition again when due. See `docs/delayed-delivery.md`.
//!
//! - [`split`]: the produce side, taking held records out of a batch;
//! - [`delivery`]: the leader's side, noting holds in the store's timer and
//!   appending records again when due, exactly once.

pub(crate) mod delivery;
pub(crate) mod split;

use std::collections::HashMap;
use std::sync::RwLock;

use spool_metadata::{PartitionKey, PendingHolds};

/// Each led partition's pending held records as the delivery rounds last read them,
/// for `/metrics` (which cannot wait for the store).
#[derive(Debug, Default)]
pub(crate) struct DelayedStats {
    by_partition: RwLock<HashMap<PartitionKey, PendingHolds>>,
}

impl DelayedStats {
    pub(crate) fn set(&self, key: PartitionKey, pending: PendingHolds) {
        self.write().insert(key, pending);
    }

    /// Keeps only the partitions in `led`.
    pub(crate) fn retain(&self, led: &std::collections::HashSet<PartitionKey>) {
        self.write().retain(|key, _| led.contains(key));
    }

    pub(crate) fn all(&self) -> Vec<(PartitionKey, PendingHolds)> {
        self.by_partition
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|(key, pending)| (*key, *pending))
            .collect()
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<PartitionKey, PendingHolds>> {
        self.by_partition
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
