//! The controller: the broker holding the controller lease assigns every partition to
//! a live broker that is not draining, balanced by count. Partitions of dead or
//! draining brokers (and new ones) go to the least loaded (or to the broker an
//! operator asked for); then, while one broker leads two more than another, one
//! partition moves from the most to the least loaded (the one led longest, so that
//! a partition just moved stays).
//!
//! A partition whose leader is dead (or that has none) moves at once: one transaction
//! fenced by the controller epoch raises its leader epoch, so the old leader can
//! commit nothing more. A live leader is *asked* to hand the partition over, and does
//! so once what it buffered is committed (see [`super::handover`]); one that has not
//! after `cluster.handover.timeout.ms` loses the partition the first way.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use spool_metadata::{Leadership, MetadataError, PartitionKey, PartitionMove};

use super::ClusterView;
use super::view::{Asked, lease_ms};
use crate::shared::Shared;

/// The controller's round, if this broker holds (or can take) the lease; `true` if
/// partitions moved or handovers were asked.
pub(crate) async fn tick(shared: &Arc<Shared>, view: &ClusterView) -> Result<bool, MetadataError> {
    if view.is_replaced() {
        return Ok(false);
    }
    // One round at a time in this broker (the heartbeat's and one after a topic was
    // created), so that two rounds never plan the same moves.
    let _round = view.controller_round.lock().await;
    let metadata = shared.metadata();
    // A reader never takes the lease; it only notes who holds it (for Metadata).
    let lease = if view.reader {
        metadata.controller().await?
    } else {
        metadata
            .claim_controller(view.node_id, view.incarnation, lease_ms(&view.settings))
            .await?
    };
    if let Some(lease) = &lease {
        view.note_controller(lease.node_id);
    }
    let Some(lease) = lease.filter(|lease| lease.incarnation == Some(view.incarnation)) else {
        // Not the controller: what it saw as one is stale by the time it is again.
        view.asked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
        return Ok(false);
    };
    let now = spool_model::Timestamp::now().0;
    let live: Vec<(i32, bool)> = metadata
        .brokers()
        .await?
        .into_iter()
        .filter(|broker| broker.lease_expires_ms > now)
        .map(|broker| (broker.node_id, broker.takes_work()))
        .collect();
    let eligible: Vec<i32> = live
        .iter()
        .filter(|(_, takes_work)| *takes_work)
        .map(|(node, _)| *node)
        .collect();
    let live: HashSet<i32> = live.into_iter().map(|(node, _)| node).collect();
    let leaderships = metadata.leaderships().await?;
    let asked_now: HashMap<PartitionKey, i32> = leaderships
        .iter()
        .map(|leadership| (leadership.key, leadership.handover_to))
        .collect();
    let overdue = overdue_handovers(view, &leaderships, &live, &eligible);
    let mut moves = Vec::new();
    let mut handovers = Vec::new();
    for planned in plan(&leaderships, &eligible) {
        if !live.contains(&planned.from) {
            moves.push(planned);
        } else if asked_now.get(&planned.key) != Some(&planned.to) {
            handovers.push(planned);
        }
    }
    moves.extend(overdue);
    let mut changed = false;
    if !moves.is_empty()
        && let Some(moved) = metadata.move_partitions(lease.epoch, &moves).await?
    {
        tracing::info!(
            partitions = moved.len(),
            brokers = eligible.len(),
            "the controller moved partitions"
        );
        changed = true;
    }
    if !handovers.is_empty()
        && let Some(asked) = metadata.request_handovers(lease.epoch, &handovers).await?
    {
        tracing::info!(
            partitions = asked.len(),
            brokers = eligible.len(),
            "the controller asked live leaders to hand partitions over"
        );
        changed = true;
    }
    Ok(changed)
}

/// The handovers asked of live leaders (to brokers that can take them) more than
/// `cluster.handover.timeout.ms` ago, as this controller has seen them, as moves.
fn overdue_handovers(
    view: &ClusterView,
    leaderships: &[Leadership],
    live: &HashSet<i32>,
    eligible: &[i32],
) -> Vec<PartitionMove> {
    let mut asked = view
        .asked
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let now = Instant::now();
    let mut current = HashMap::new();
    let mut overdue = Vec::new();
    for leadership in leaderships {
        let (from, to) = (leadership.leader, leadership.handover_to);
        if to < 0 || to == from || !live.contains(&from) || !eligible.contains(&to) {
            continue;
        }
        let epoch = leadership.leader_epoch;
        let seen = asked
            .get(&leadership.key)
            .filter(|seen| (seen.from, seen.to, seen.leader_epoch) == (from, to, epoch))
            .map_or(now, |seen| seen.since);
        if now.duration_since(seen) >= view.settings.handover_timeout {
            tracing::warn!(
                topic_id = %leadership.key.topic_id,
                partition = leadership.key.partition,
                from,
                to,
                "a leader did not hand a partition over in time: moving it without it"
            );
            overdue.push(PartitionMove {
                key: leadership.key,
                from,
                to,
            });
        } else {
            current.insert(
                leadership.key,
                Asked {
                    from,
                    to,
                    leader_epoch: epoch,
                    since: seen,
                },
            );
        }
    }
    *asked = current;
    overdue
}

/// The moves that give every partition an eligible leader and balance their counts
/// (see the module docs); each partition at most once. A handover already asked to
/// an eligible broker counts as done, and is planned again as it stands.
pub(crate) fn plan(leaderships: &[Leadership], eligible: &[i32]) -> Vec<PartitionMove> {
    if eligible.is_empty() {
        return Vec::new();
    }
    let mut led: BTreeMap<i32, Vec<PartitionKey>> =
        eligible.iter().map(|node| (*node, Vec::new())).collect();
    let mut sorted: Vec<&Leadership> = leaderships.iter().collect();
    sorted.sort_by_key(|leadership| leadership.key);
    let mut orphans = Vec::new();
    let mut target: HashMap<PartitionKey, i32> = HashMap::new();
    for leadership in sorted {
        let asked = leadership.handover_to;
        if asked >= 0 && asked != leadership.leader && led.contains_key(&asked) {
            led.entry(asked).or_default().push(leadership.key);
            target.insert(leadership.key, asked);
            continue;
        }
        match led.get_mut(&leadership.leader) {
            Some(keys) => keys.push(leadership.key),
            None => orphans.push(leadership.key),
        }
    }
    for key in orphans {
        let Some(node) = least_loaded(&led) else {
            break;
        };
        led.entry(node).or_default().push(key);
        target.insert(key, node);
    }
    let since: HashMap<PartitionKey, i64> = leaderships
        .iter()
        .map(|leadership| (leadership.key, leadership.leader_since_ms))
        .collect();
    while let (Some(most), Some(least)) = (most_loaded(&led), least_loaded(&led)) {
        let count = |node: i32| led.get(&node).map_or(0, Vec::len);
        if count(most) <= count(least) + 1 {
            break;
        }
        // The partition led longest (among equals the last), that this round does not
        // move already.
        let Some(keys) = led.get_mut(&most) else {
            break;
        };
        let Some(index) = keys
            .iter()
            .enumerate()
            .filter(|(_, key)| !target.contains_key(key))
            .min_by_key(|(index, key)| (since.get(key).copied().unwrap_or(0), usize::MAX - index))
            .map(|(index, _)| index)
        else {
            break;
        };
        let key = keys.remove(index);
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
            handover_to: -1,
            leader_since_ms: 0,
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

    #[test]
    fn an_asked_handover_counts_as_done_and_balancing_moves_the_partition_led_longest() {
        let mut partitions: Vec<Leadership> = (0..6).map(|p| leadership(p, 1 + p % 2)).collect();
        // Partition 0 (on 1) was asked to go to 3; partition 5 (on 2, the most
        // loaded) moved lately.
        partitions[0].handover_to = 3;
        partitions[5].leader_since_ms = 5_000;
        let moves = plan(&partitions, &[1, 2, 3]);
        assert!(moves.contains(&PartitionMove {
            key: partitions[0].key,
            from: 1,
            to: 3
        }));
        assert_eq!(
            counts(&partitions, &moves),
            BTreeMap::from([(1, 2), (2, 2), (3, 2)])
        );
        assert!(
            moves.iter().all(|m| m.key != partitions[5].key),
            "the partition moved lately stays: {moves:?}"
        );

        // A handover asked to a broker that cannot take it is planned as if not asked.
        partitions[0].handover_to = 9;
        let moves = plan(&partitions, &[1, 2]);
        assert!(moves.is_empty(), "{moves:?}");

        // A dead leader's partition goes where an operator asked, if it can.
        let orphaned = vec![Leadership {
            handover_to: 2,
            ..leadership(0, 7)
        }];
        assert_eq!(plan(&orphaned, &[1, 2])[0].to, 2);
    }
}
