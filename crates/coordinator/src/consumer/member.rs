//! A member of a consumer group: what it subscribes to, its epoch and where it stands
//! on its way to its target assignment.

use std::time::Duration;

use bytes::Bytes;

use tokio::time::Instant;

use super::Assignment;

/// Where a member stands on its way to the group's target assignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemberState {
    /// It has what the target gives it at its epoch (or all it may have yet).
    Stable,
    /// It must give partitions up before it moves to the next epoch: the answer to
    /// its heartbeat left them out, and it has not said it released them.
    UnrevokedPartitions,
    /// It is at the target epoch, but partitions the target gives it are still
    /// held by members that have not released them.
    UnreleasedPartitions,
}

impl MemberState {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            MemberState::Stable => "stable",
            MemberState::UnrevokedPartitions => "unrevoked_partitions",
            MemberState::UnreleasedPartitions => "unreleased_partitions",
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub(crate) id: String,
    pub(crate) instance_id: Option<String>,
    pub(crate) rack_id: Option<String>,
    pub(crate) client_id: String,
    pub(crate) client_host: String,
    pub(crate) epoch: i32,
    /// The epoch before the last change: a heartbeat that lost its answer comes
    /// back with it.
    pub(crate) previous_epoch: i32,
    pub(crate) state: MemberState,
    /// What it may consume.
    pub(crate) assigned: Assignment,
    /// What it must give up; no other member gets these until it does.
    pub(crate) pending_revocation: Assignment,
    /// Sorted.
    pub(crate) subscribed_names: Vec<String>,
    /// Empty: none.
    pub(crate) regex: String,
    pub(crate) server_assignor: Option<String>,
    /// How long it may take to give partitions up (the client's
    /// `max.poll.interval.ms`).
    pub(crate) rebalance_timeout: Duration,
    /// When its session ends without a heartbeat.
    pub(crate) session_deadline: Instant,
    /// When it is fenced if it still has not given up its pending revocations, and
    /// the epoch it was at then.
    pub(crate) revocation_deadline: Option<(Instant, i32)>,
    /// Set for a member of the classic protocol (a group being migrated).
    pub(crate) classic: Option<ClassicMember>,
}

/// What a member of the classic protocol in a consumer-protocol group has besides:
/// it joins, syncs and heartbeats with the classic APIs (`group/classic.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClassicMember {
    pub(crate) session_timeout: Duration,
    /// (name, metadata) in its order of preference.
    pub(crate) protocols: Vec<(String, Bytes)>,
    /// What its last SyncGroup gave it.
    pub(crate) synced: Assignment,
}

impl ClassicMember {
    /// The protocol it is answered with: its first.
    pub(crate) fn protocol_name(&self) -> String {
        self.protocols
            .first()
            .map(|(name, _)| name.clone())
            .unwrap_or_default()
    }
}

impl Member {
    pub(crate) fn new(id: String, now: Instant) -> Member {
        Member {
            id,
            instance_id: None,
            rack_id: None,
            client_id: String::new(),
            client_host: String::new(),
            epoch: 0,
            previous_epoch: -1,
            state: MemberState::Stable,
            assigned: Assignment::new(),
            pending_revocation: Assignment::new(),
            subscribed_names: Vec::new(),
            regex: String::new(),
            server_assignor: None,
            rebalance_timeout: Duration::ZERO,
            session_deadline: now,
            revocation_deadline: None,
            classic: None,
        }
    }

    pub(crate) fn set_epoch(&mut self, epoch: i32) {
        self.previous_epoch = self.epoch;
        self.epoch = epoch;
    }
}

/// Whether `owned` (what a member says it holds; `None`: not said) still holds any
/// partition of `partitions`.
pub(crate) fn still_holds(owned: Option<&Assignment>, partitions: &Assignment) -> bool {
    let Some(owned) = owned else {
        return partitions.values().any(|set| !set.is_empty());
    };
    partitions
        .iter()
        .any(|(topic, set)| owned.get(topic).is_some_and(|held| !held.is_disjoint(set)))
}

/// Whether every partition of `owned` is in `assigned`.
pub(crate) fn is_within(owned: &Assignment, assigned: &Assignment) -> bool {
    owned.iter().all(|(topic, set)| {
        set.is_empty() || assigned.get(topic).is_some_and(|mine| set.is_subset(mine))
    })
}
