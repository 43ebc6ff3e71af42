//! The controller: the broker holding the controller lease assigns every partition to
//! a live broker that is not draining, balanced by count. Partitions of dead or
//! draining brokers (and new ones) go to the least loaded; then, while one broker
//! leads two more than another, one partition moves from the most to the least
//! loaded. All moves of a round are one transaction fenced by the controller epoch,
//! and each raises the partition's leader epoch, so the old leader can commit nothing
//! more.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use spool_metadata::{Leadership, MetadataError, PartitionKey, PartitionMove};

use super::{ClusterView, lease_ms};
use crate::server::Shared;

/// The controller's round, if this broker holds (or can take) the lease; `true` if
/// partitions moved.
pub(crate) async fn tick(shared: &Arc<Shared>, view: &ClusterView) -> Result<bool, MetadataError> {
    if view.is_replaced() {
        return Ok(false);
    }
    // One round at a time in this broker (the heartbeat's and one after a topic was
    // created), so that two rounds never plan the same moves.
    let _round = view.controller_round.lock().await;
    let metadata = &shared.metadata;
    let lease = metadata
        .claim_controller(view.node_id, view.incarnation, lease_ms(&view.settings))
        .await?;
    if let Some(lease) = &lease {
        view.note_controller(lease.node_id);
    }
    let Some(lease) = lease.filter(|lease| lease.incarnation == Some(view.incarnation)) else {
        return Ok(false);
    };
    let now = spool_model::Timestamp::now().0;
    let eligible: Vec<i32> = metadata
        .brokers()
        .await?
        .into_iter()
        .filter(|broker| broker.lease_expires_ms > now && !broker.draining)
        .map(|broker| broker.node_id)
        .collect();
    let leaderships = metadata.leaderships().await?;
    let moves = plan(&leaderships, &eligible);
    if moves.is_empty() {
        return Ok(false);
    }
    match metadata.move_partitions(lease.epoch, &moves).await? {
        Some(moved) => {
            tracing::info!(
                partitions = moved.len(),
                brokers = eligible.len(),
                "the controller moved partitions"
            );
            Ok(true)
        }
        None => Ok(false),
    }
}

/// The moves that give every partition an eligible leader and balance their counts
/// (see the module docs); each partition at most once.
pub(crate) fn plan(leaderships: &[Leadership], eligible: &[i32]) -> Vec<PartitionMove> {
    if eligible.is_empty() {
        return Vec::new();
    }
    let mut led: BTreeMap<i32, Vec<PartitionKey>> =
        eligible.iter().map(|node| (*node, Vec::new())).collect();
    let mut sorted: Vec<&Leadership> = leaderships.iter().collect();
    sorted.sort_by_key(|leadership| leadership.key);
    let mut orphans = Vec::new();
    for leadership in sorted {
        match led.get_mut(&leadership.leader) {
            Some(keys) => keys.push(leadership.key),
            None => orphans.push(leadership.key),
        }
    }
    let mut target: HashMap<PartitionKey, i32> = HashMap::new();
    for key in orphans {
        let Some(node) = least_loaded(&led) else {
            break;
        };
        led.entry(node).or_default().push(key);
        target.insert(key, node);
    }
    while let (Some(most), Some(least)) = (most_loaded(&led), least_loaded(&led)) {
        let count = |node: i32| led.get(&node).map_or(0, Vec::len);
        if count(most) <= count(least) + 1 {
            break;
        }
        let Some(key) = led.get_mut(&most).and_then(Vec::pop) else {
            break;
        };
        led.entry(least).or_default().push(key);
        target.insert(key, least);
    }
    let current: HashMap<PartitionKey, i32> = leaderships
        .iter()
        .map(|leadership| (leadership.key, leadership.leader))
        .collect();
    let mut moves: Vec<PartitionMove> = target
        .into_iter()
        .filter_map(|(key, to)| {
            let from = current.get(&key).copied().unwrap_or(-1);
            (from != to).then_some(PartitionMove { key, from, to })
        })
        .collect();
    moves.sort();
    moves
}

/// The broker leading fewest partitions (the lowest node id among equals).
fn least_loaded(led: &BTreeMap<i32, Vec<PartitionKey>>) -> Option<i32> {
    led.iter()
        .min_by_key(|(node, keys)| (keys.len(), **node))
        .map(|(node, _)| *node)
}

/// The broker leading most partitions (the highest node id among equals).
fn most_loaded(led: &BTreeMap<i32, Vec<PartitionKey>>) -> Option<i32> {
    led.iter()
        .max_by_key(|(node, keys)| (keys.len(), **node))
        .map(|(node, _)| *node)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leadership(partition: i32, leader: i32) -> Leadership {
        Leadership {
            key: PartitionKey {
                topic_id: uuid::Uuid::nil(),
                partition,
            },
            leader,
            leader_epoch: 1,
        }
    }

    fn counts(leaderships: &[Leadership], moves: &[PartitionMove]) -> BTreeMap<i32, usize> {
        let mut leaders: HashMap<PartitionKey, i32> =
            leaderships.iter().map(|l| (l.key, l.leader)).collect();
        for planned in moves {
            assert_eq!(leaders.get(&planned.key), Some(&planned.from));
            leaders.insert(planned.key, planned.to);
        }
        let mut counts = BTreeMap::new();
        for node in leaders.values() {
            *counts.entry(*node).or_default() += 1;
        }
        counts
    }

    #[test]
    fn new_partitions_are_spread_over_the_live_brokers() {
        let partitions: Vec<Leadership> = (0..7).map(|p| leadership(p, -1)).collect();
        let moves = plan(&partitions, &[1, 2, 3]);
        assert_eq!(moves.len(), 7);
        assert_eq!(
            counts(&partitions, &moves),
            BTreeMap::from([(1, 3), (2, 2), (3, 2)])
        );
        assert!(plan(&partitions, &[]).is_empty(), "no broker, no move");
    }

    #[test]
    fn a_dead_brokers_partitions_go_to_the_others_and_nothing_else_moves() {
        let partitions: Vec<Leadership> = (0..9).map(|p| leadership(p, 1 + p % 3)).collect();
        let moves = plan(&partitions, &[1, 2]);
        assert_eq!(moves.len(), 3, "only broker 3's partitions move: {moves:?}");
        assert!(
            moves
                .iter()
                .all(|m| m.key.partition % 3 == 2 && m.from == 3)
        );
        assert_eq!(
            counts(&partitions, &moves),
            BTreeMap::from([(1, 5), (2, 4)])
        );
        assert!(plan(&partitions, &[1, 2, 3]).is_empty(), "balanced already");
    }

    #[test]
    fn a_new_broker_takes_its_share() {
        let partitions: Vec<Leadership> = (0..9).map(|p| leadership(p, 1 + p % 2)).collect();
        let moves = plan(&partitions, &[1, 2, 3]);
        assert_eq!(moves.len(), 3, "{moves:?}");
        assert!(moves.iter().all(|m| m.to == 3));
        assert_eq!(
            counts(&partitions, &moves),
            BTreeMap::from([(1, 3), (2, 3), (3, 3)])
        );
    }
}
