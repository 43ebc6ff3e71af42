//! The `uniform` assignor: every member gets as many partitions as the others, give
//! or take one, counted across all its topics, and keeps what it has where balance
//! allows.
//!
//! In three passes: every member keeps the partitions it has of topics it still
//! subscribes to; each partition left goes to the subscriber with the fewest; then,
//! while a member has two more than another that subscribes to one of its topics, it
//! gives that one a partition. Each move narrows the spread, so the last pass ends;
//! with the same subscriptions everywhere it ends balanced to one partition.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::{Assignment, MemberSpec};

pub(super) fn assign(
    members: &BTreeMap<String, MemberSpec>,
    partition_counts: &BTreeMap<Uuid, i32>,
) -> BTreeMap<String, Assignment> {
    let specs: Vec<&MemberSpec> = members.values().collect();
    let mut owned: Vec<BTreeSet<(Uuid, i32)>> = vec![BTreeSet::new(); specs.len()];
    let mut taken: BTreeSet<(Uuid, i32)> = BTreeSet::new();

    for (member, spec) in specs.iter().enumerate() {
        for (topic, partitions) in &spec.current {
            let Some(&count) = partition_counts.get(topic) else {
                continue;
            };
            if !spec.subscribed.contains(topic) {
                continue;
            }
            for &partition in partitions.iter().filter(|p| (0..count).contains(*p)) {
                if taken.insert((*topic, partition))
                    && let Some(set) = owned.get_mut(member)
                {
                    set.insert((*topic, partition));
                }
            }
        }
    }

    for (topic, &count) in partition_counts {
        let subscribers: Vec<usize> = (0..specs.len())
            .filter(|&m| specs.get(m).is_some_and(|s| s.subscribed.contains(topic)))
            .collect();
        for partition in 0..count {
            if taken.contains(&(*topic, partition)) {
                continue;
            }
            let fewest = subscribers
                .iter()
                .copied()
                .min_by_key(|&m| (owned.get(m).map_or(0, BTreeSet::len), m));
            if let Some(set) = fewest.and_then(|m| owned.get_mut(m)) {
                set.insert((*topic, partition));
                taken.insert((*topic, partition));
            }
        }
    }

    while let Some((from, to, partition)) = next_move(&specs, &owned) {
        if let Some(set) = owned.get_mut(from) {
            set.remove(&partition);
        }
        if let Some(set) = owned.get_mut(to) {
            set.insert(partition);
        }
    }

    members
        .keys()
        .zip(owned)
        .map(|(id, partitions)| {
            let mut assignment = Assignment::new();
            for (topic, partition) in partitions {
                assignment.entry(topic).or_default().insert(partition);
            }
            (id.clone(), assignment)
        })
        .collect()
}

/// A partition to move from a member to one with at least two fewer that subscribes
/// to its topic: from the most loaded member that has one, its last such partition.
fn next_move(
    specs: &[&MemberSpec],
    owned: &[BTreeSet<(Uuid, i32)>],
) -> Option<(usize, usize, (Uuid, i32))> {
    let count = |m: usize| owned.get(m).map_or(0, BTreeSet::len);
    let mut order: Vec<usize> = (0..owned.len()).collect();
    order.sort_by_key(|&m| (Reverse(count(m)), m));
    for &from in &order {
        for &to in order.iter().rev() {
            if count(from) <= count(to) + 1 {
                break;
            }
            let Some(subscribed) = specs.get(to).map(|s| &s.subscribed) else {
                continue;
            };
            let movable = owned
                .get(from)
                .and_then(|set| set.iter().rev().find(|(t, _)| subscribed.contains(t)));
            if let Some(&partition) = movable {
                return Some((from, to, partition));
            }
        }
    }
    None
}
