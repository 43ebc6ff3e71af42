//! What this broker knows of failed-over mirror partitions: which it settled, and the
//! locks that keep settling apart from copying and from itself ([`super::settle`]).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, RwLock};

use uuid::Uuid;

/// What this broker knows of failed-over partitions.
#[derive(Debug, Default)]
pub(crate) struct Failovers {
    /// Settled here, by topic id, partition and the leader epoch it was settled
    /// under: only these take writes.
    settled: Mutex<HashSet<(Uuid, i32, i32)>>,
    /// One settling at a time on this broker (the failover's answer and the round's
    /// sweep may reach the same partition together): a partition is never settled
    /// again once it takes writes.
    settling: tokio::sync::Mutex<()>,
    /// Copies append holding its read side, after checking that their topic is still
    /// a mirror; settling takes its write side, after which no copy appends again.
    copy_gate: Arc<RwLock<()>>,
}

impl Failovers {
    /// Held by a settling from start to end.
    pub(super) fn settling(&self) -> &tokio::sync::Mutex<()> {
        &self.settling
    }

    pub(super) fn settled(&self) -> std::sync::MutexGuard<'_, HashSet<(Uuid, i32, i32)>> {
        self.settled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn is_settled(&self, topic_id: Uuid, index: i32, epoch: i32) -> bool {
        self.settled().contains(&(topic_id, index, epoch))
    }

    /// The gate a copy's append holds the read side of.
    pub(super) fn copy_gate(&self) -> Arc<RwLock<()>> {
        self.copy_gate.clone()
    }
}
