//! How a member moves towards its target assignment, one heartbeat at a time, so that
//! no partition is ever consumed by two members:
//!
//! - partitions it must give up leave its assignment first, and it stays at its
//!   epoch (`UnrevokedPartitions`) until a heartbeat says it no longer holds them;
//! - then it moves to the target's epoch, with the partitions it keeps and those of
//!   its new ones that no other member still holds; those still held come later
//!   (`UnreleasedPartitions`), at a later heartbeat once their holder let them go.

use std::collections::{BTreeSet, HashSet};

use uuid::Uuid;

use super::member::{Member, MemberState, still_holds};
use super::{Assignment, PartitionCounts};

/// What a reconciliation knows besides the member.
pub(super) struct Target<'a> {
    pub(super) epoch: i32,
    /// The member's target assignment.
    pub(super) partitions: &'a Assignment,
    /// The topics the member subscribes to: a partition of another topic is not
    /// kept whatever the target says.
    pub(super) subscribed: &'a PartitionCounts,
    /// Partitions that other members hold (assigned or still to give up).
    pub(super) held_by_others: &'a HashSet<(Uuid, i32)>,
}

/// Moves `member` as far towards `target` as it may go now. `owned` is what its
/// heartbeat says it holds (`None`: not said, so it may hold what it had);
/// `subscription_changed` says whether its subscription changed in this heartbeat.
pub(super) fn reconcile(
    member: &mut Member,
    target: &Target<'_>,
    owned: Option<&Assignment>,
    subscription_changed: bool,
) {
    match member.state {
        MemberState::Stable if member.epoch != target.epoch => {
            next_assignment(member, target, owned, member.epoch);
        }
        MemberState::Stable => {
            if subscription_changed {
                drop_unsubscribed(member, target, owned);
            }
        }
        MemberState::UnrevokedPartitions => {
            if still_holds(owned, &member.pending_revocation) {
                if subscription_changed {
                    drop_unsubscribed(member, target, owned);
                }
            } else {
                let epoch = (member.epoch + 1).min(target.epoch);
                next_assignment(member, target, owned, epoch);
            }
        }
        MemberState::UnreleasedPartitions => {
            next_assignment(member, target, owned, member.epoch);
        }
    }
}

/// The next step towards the target: give up what it must (at `epoch_if_revoking`,
/// still held), or move to the target's epoch with what is free of it.
fn next_assignment(
    member: &mut Member,
    target: &Target<'_>,
    owned: Option<&Assignment>,
    epoch_if_revoking: i32,
) {
    let mut kept = Assignment::new();
    let mut revoked = Assignment::new();
    let mut added = Assignment::new();
    let mut unreleased = false;
    let topics: BTreeSet<Uuid> = target
        .partitions
        .keys()
        .chain(member.assigned.keys())
        .copied()
        .collect();
    let empty = BTreeSet::new();
    for topic in topics {
        let wanted = if target.subscribed.contains_key(&topic) {
            target.partitions.get(&topic).unwrap_or(&empty)
        } else {
            &empty
        };
        let current = member.assigned.get(&topic).unwrap_or(&empty);
        let keep: BTreeSet<i32> = current.intersection(wanted).copied().collect();
        let give_up: BTreeSet<i32> = current.difference(&keep).copied().collect();
        let mut take = BTreeSet::new();
        for &partition in wanted.difference(&keep) {
            if target.held_by_others.contains(&(topic, partition)) {
                unreleased = true;
            } else {
                take.insert(partition);
            }
        }
        insert_nonempty(&mut kept, topic, keep);
        insert_nonempty(&mut revoked, topic, give_up);
        insert_nonempty(&mut added, topic, take);
    }

    if !revoked.is_empty() && still_holds(owned, &revoked) {
        member.state = MemberState::UnrevokedPartitions;
        member.set_epoch(epoch_if_revoking);
        member.assigned = kept;
        member.pending_revocation = revoked;
        return;
    }
    for (topic, partitions) in added {
        kept.entry(topic).or_default().extend(partitions);
    }
    member.state = if unreleased {
        MemberState::UnreleasedPartitions
    } else {
        MemberState::Stable
    };
    member.set_epoch(target.epoch);
    member.assigned = kept;
    member.pending_revocation = Assignment::new();
}

/// Its subscription changed without a new target (yet): the partitions of topics it
/// no longer subscribes to are to be given up at once.
fn drop_unsubscribed(member: &mut Member, target: &Target<'_>, owned: Option<&Assignment>) {
    let gone: Vec<Uuid> = member
        .assigned
        .keys()
        .filter(|topic| !target.subscribed.contains_key(topic))
        .copied()
        .collect();
    if gone.is_empty() {
        return;
    }
    for topic in gone {
        if let Some(partitions) = member.assigned.remove(&topic) {
            member
                .pending_revocation
                .entry(topic)
                .or_default()
                .extend(partitions);
        }
    }
    if still_holds(owned, &member.pending_revocation) {
        member.state = MemberState::UnrevokedPartitions;
    } else {
        member.pending_revocation = Assignment::new();
    }
}

fn insert_nonempty(assignment: &mut Assignment, topic: Uuid, partitions: BTreeSet<i32>) {
    if !partitions.is_empty() {
        assignment.insert(topic, partitions);
    }
}
