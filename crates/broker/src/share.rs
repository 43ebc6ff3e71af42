//! Share groups at this broker (KIP-932; the rules are in `spool_share`, the design in
//! `docs/share-groups.md`): the members of the share groups it coordinates, the share
//! sessions of the members that fetch from it, and the share-partitions of the
//! partitions it leads.
//!
//! A share-partition is taken on from the metadata store the first time a member
//! fetches it here (claimed at the partition's leader epoch, which fences the leader
//! before), and every change of what the store keeps (acknowledgements, releases,
//! expired locks) is written before it is answered. A write that fails drops the
//! share-partition from memory: it is read back from the store at the next fetch, so
//! memory never runs ahead of what is durable. Acquisitions are not written (a lock
//! does not outlive its leader).

pub(crate) mod dead_letters;
pub(crate) mod describe;
pub(crate) mod held;
pub(crate) mod partition_access;
pub(crate) mod timers;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use spool_share::{ShareGroups, SharePartition, ShareSessions};
use tokio::sync::watch;
use uuid::Uuid;

/// A share-partition held in memory by the partition's leader, and the epoch its
/// state is written at (the partition's leader epoch when this broker took it on).
/// Taken on, changed and written back by `held`.
#[derive(Debug)]
pub(crate) struct Held {
    pub(crate) partition: SharePartition,
    pub(crate) state_epoch: i32,
}

/// One share-partition: a group's view of one topic partition.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SharePartitionId {
    pub(crate) group: String,
    pub(crate) topic_id: Uuid,
    pub(crate) partition: i32,
}

/// What this broker keeps of share groups.
#[derive(Debug)]
pub(crate) struct ShareService {
    groups: Mutex<ShareGroups>,
    sessions: Mutex<ShareSessions>,
    /// The share-partitions fetched here; `None` in a slot: not loaded (or dropped
    /// after a failed write).
    partitions: Mutex<HashMap<SharePartitionId, Arc<tokio::sync::Mutex<Option<Held>>>>>,
    /// Moves whenever records become available again (released, or their lock or
    /// backoff ran out), so that fetches waiting for records look again.
    available: watch::Sender<u64>,
    pub(crate) stats: ShareStats,
}

/// What `/metrics` counts of share groups.
#[derive(Debug, Default)]
pub(crate) struct ShareStats {
    pub(crate) acquired: AtomicU64,
    pub(crate) redelivered: AtomicU64,
    pub(crate) accepted: AtomicU64,
    pub(crate) released: AtomicU64,
    pub(crate) rejected: AtomicU64,
    pub(crate) lock_expiries: AtomicU64,
    pub(crate) dead_letters: AtomicU64,
    pub(crate) dead_letters_written: AtomicU64,
    /// Queued in the metadata store for another broker to write.
    pub(crate) dead_letters_queued: AtomicU64,
}

impl ShareStats {
    pub(crate) fn add(counter: &AtomicU64, by: u64) {
        if by > 0 {
            counter.fetch_add(by, Ordering::Relaxed);
        }
    }
}

impl ShareService {
    pub(crate) fn new(max_sessions: usize) -> ShareService {
        ShareService {
            groups: Mutex::new(ShareGroups::default()),
            sessions: Mutex::new(ShareSessions::new(max_sessions)),
            partitions: Mutex::new(HashMap::new()),
            available: watch::channel(0).0,
            stats: ShareStats::default(),
        }
    }

    pub(crate) fn groups(&self) -> MutexGuard<'_, ShareGroups> {
        self.groups.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn sessions(&self) -> MutexGuard<'_, ShareSessions> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The slot of a share-partition (made empty if it has none yet).
    pub(crate) fn slot(&self, id: &SharePartitionId) -> Arc<tokio::sync::Mutex<Option<Held>>> {
        self.partitions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(id.clone())
            .or_default()
            .clone()
    }

    /// The slot of a share-partition, only if it was fetched here.
    pub(crate) fn existing_slot(
        &self,
        id: &SharePartitionId,
    ) -> Option<Arc<tokio::sync::Mutex<Option<Held>>>> {
        self.partitions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
    }

    /// Every slot, for the timers.
    fn all_slots(&self) -> Vec<(SharePartitionId, Arc<tokio::sync::Mutex<Option<Held>>>)> {
        self.partitions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(id, slot)| (id.clone(), slot.clone()))
            .collect()
    }

    /// Forgets what this broker holds of `group` (it was deleted): its share-partitions
    /// and sessions.
    pub(crate) fn forget_group(&self, group: &str) {
        self.partitions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|id, _| id.group != group);
        self.sessions().forget_group(group);
    }

    /// Whether the group has members here.
    pub(crate) fn has_members(&self, group_id: &str) -> bool {
        self.groups().group(group_id).is_some()
    }

    /// Tells waiting fetches that records became available.
    pub(crate) fn wake_fetches(&self) {
        self.available.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// A receiver that changes when records become available.
    pub(crate) fn watch_available(&self) -> watch::Receiver<u64> {
        self.available.subscribe()
    }
}
