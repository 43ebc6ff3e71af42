//! The `range` assignor: per topic, the subscribers (in member id order) each get a
//! contiguous range of its partitions, the first ones one more when they do not
//! divide evenly. Members subscribed to topics of the same partition count get the
//! same partition numbers of each (co-partitioning, for joins).
//!
//! Sticky as Kafka's server-side range assignor is: a member first keeps up to its
//! share of what it has (one more than the share, while the extra ones last, if it
//! had more), and the partitions left fill each member's share in order.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::{Assignment, MemberSpec};

pub(super) fn assign(
    members: &BTreeMap<String, MemberSpec>,
    partition_counts: &BTreeMap<Uuid, i32>,
) -> BTreeMap<String, Assignment> {
    let mut assignments: BTreeMap<String, Assignment> = members
        .keys()
        .map(|id| (id.clone(), Assignment::new()))
        .collect();
    for (topic, &count) in partition_counts {
        let subscribers: Vec<(&String, &MemberSpec)> = members
            .iter()
            .filter(|(_, spec)| spec.subscribed.contains(topic))
            .collect();
        let shares = assign_topic(topic, count, &subscribers);
        for ((id, _), partitions) in subscribers.iter().zip(shares) {
            if !partitions.is_empty()
                && let Some(assignment) = assignments.get_mut(*id)
            {
                assignment.insert(*topic, partitions.into_iter().collect());
            }
        }
    }
    assignments
}

/// Each subscriber's partitions of one topic, in the subscribers' order.
fn assign_topic(topic: &Uuid, count: i32, subscribers: &[(&String, &MemberSpec)]) -> Vec<Vec<i32>> {
    let members = subscribers.len();
    let Ok(partitions) = usize::try_from(count) else {
        return vec![Vec::new(); members];
    };
    if members == 0 || partitions == 0 {
        return vec![Vec::new(); members];
    }
    let share = partitions / members;
    let mut extras = partitions % members;
    let mut taken = vec![false; partitions];
    let mut given: Vec<Vec<i32>> = Vec::with_capacity(members);
    let mut quotas: Vec<usize> = Vec::with_capacity(members);

    for (_, spec) in subscribers {
        let had: Vec<i32> = spec
            .current
            .get(topic)
            .map(|set| {
                set.iter()
                    .copied()
                    .filter(|&p| p >= 0 && p < count)
                    .collect()
            })
            .unwrap_or_default();
        let mut quota = share;
        if had.len() > share && extras > 0 {
            quota += 1;
            extras -= 1;
        }
        let mut kept = Vec::with_capacity(quota);
        for partition in had {
            if kept.len() == quota {
                break;
            }
            let slot = usize::try_from(partition)
                .ok()
                .and_then(|p| taken.get_mut(p));
            if let Some(slot) = slot.filter(|taken| !**taken) {
                *slot = true;
                kept.push(partition);
            }
        }
        given.push(kept);
        quotas.push(quota);
    }
    for quota in &mut quotas {
        if extras == 0 {
            break;
        }
        if *quota == share {
            *quota += 1;
            extras -= 1;
        }
    }

    let mut free = taken
        .iter()
        .enumerate()
        .filter(|(_, taken)| !**taken)
        .filter_map(|(p, _)| i32::try_from(p).ok());
    for (partitions, quota) in given.iter_mut().zip(&quotas) {
        while partitions.len() < *quota {
            let Some(partition) = free.next() else { break };
            partitions.push(partition);
        }
        partitions.sort_unstable();
    }
    given
}
