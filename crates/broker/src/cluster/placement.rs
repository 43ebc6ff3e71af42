//! Where partitions lead: every partition on a live writer that is not draining,
//! balanced by count, and spread over racks (`broker.rack`). Partitions of dead or
//! draining brokers (and new ones) go to the least loaded — among equals, one of the
//! same rack as the broker they leave (a drain keeps what it can in its rack) — or to
//! the broker an operator asked for; then, while one broker leads two more than
//! another, one partition moves from the most to the least loaded (the one led
//! longest, so that a partition just moved stays). Among equally loaded brokers, the
//! one whose rack leads fewest is chosen.

use std::collections::{BTreeMap, HashMap};

use spool_metadata::{Leadership, PartitionKey, PartitionMove};

/// Each broker's rack (`None`: no rack), by node id.
pub(crate) type Racks = HashMap<i32, Option<String>>;

/// The moves that give every partition an eligible leader and balance their counts
/// (see the module docs); each partition at most once. A handover already asked to
/// an eligible broker counts as done, and is planned again as it stands. `racks`
/// has each broker's rack (eligible ones, and those partitions move away from).
pub(crate) fn plan(
    leaderships: &[Leadership],
    eligible: &[i32],
    racks: &Racks,
) -> Vec<PartitionMove> {
    if eligible.is_empty() {
        return Vec::new();
    }
    let mut led: BTreeMap<i32, Vec<PartitionKey>> =
        eligible.iter().map(|node| (*node, Vec::new())).collect();
    let mut sorted: Vec<&Leadership> = leaderships.iter().collect();
    sorted.sort_by_key(|leadership| leadership.key);
    let mut orphans: Vec<(PartitionKey, i32)> = Vec::new();
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
            None => orphans.push((leadership.key, leadership.leader)),
        }
    }
    for (key, from) in orphans {
        let Some(node) = least_loaded(&led, racks, racks.get(&from)) else {
            break;
        };
        led.entry(node).or_default().push(key);
        target.insert(key, node);
    }
    let since: HashMap<PartitionKey, i64> = leaderships
        .iter()
        .map(|leadership| (leadership.key, leadership.leader_since_ms))
        .collect();
    while let (Some(most), Some(least)) = (most_loaded(&led), least_loaded(&led, racks, None)) {
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

/// First leaders for new partitions (`keys`), each where [`least_loaded`] puts it
/// among the `eligible` brokers, counting what each leads in `leaderships`.
pub(crate) fn first_leaders(
    keys: &[(PartitionKey, Option<i32>)],
    leaderships: &[Leadership],
    eligible: &[i32],
    racks: &Racks,
) -> Vec<(PartitionKey, i32)> {
    let mut led: BTreeMap<i32, Vec<PartitionKey>> =
        eligible.iter().map(|node| (*node, Vec::new())).collect();
    for leadership in leaderships {
        if let Some(keys) = led.get_mut(&leadership.leader) {
            keys.push(leadership.key);
        }
    }
    let mut assigned = Vec::with_capacity(keys.len());
    for (key, preferred) in keys {
        // A client's assignment names the preferred leader: taken if it may lead.
        let chosen = preferred.filter(|node| led.contains_key(node));
        let Some(node) = chosen.or_else(|| least_loaded(&led, racks, None)) else {
            break;
        };
        led.entry(node).or_default().push(*key);
        assigned.push((*key, node));
    }
    assigned
}

/// Where a partition goes: the broker leading fewest partitions, among equals one of
/// `near` (the rack of the broker it leaves: its consumers' reads stay in the rack
/// they were), else the one whose rack leads fewest (leaders spread over racks), then
/// the lowest node id.
fn least_loaded(
    led: &BTreeMap<i32, Vec<PartitionKey>>,
    racks: &Racks,
    near: Option<&Option<String>>,
) -> Option<i32> {
    let fewest = led.values().map(Vec::len).min()?;
    if let Some(rack) = near.filter(|rack| rack.is_some()) {
        let same_rack = led
            .iter()
            .filter(|(node, keys)| racks.get(node) == Some(rack) && keys.len() == fewest)
            .min_by_key(|(node, keys)| (keys.len(), **node));
        if let Some((node, _)) = same_rack {
            return Some(*node);
        }
    }
    let rack_load = |node: i32| -> usize {
        let rack = racks.get(&node);
        led.iter()
            .filter(|(other, _)| racks.get(other) == rack)
            .map(|(_, keys)| keys.len())
            .sum()
    };
    led.iter()
        .filter(|(_, keys)| keys.len() == fewest)
        .min_by_key(|(node, _)| (rack_load(**node), **node))
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

    /// No broker has a rack.
    fn no_racks() -> Racks {
        Racks::new()
    }

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
        let moves = plan(&partitions, &[1, 2, 3], &no_racks());
        assert_eq!(moves.len(), 7);
        assert_eq!(
            counts(&partitions, &moves),
            BTreeMap::from([(1, 3), (2, 2), (3, 2)])
        );
        assert!(
            plan(&partitions, &[], &no_racks()).is_empty(),
            "no broker, no move"
        );
    }

    #[test]
    fn a_dead_brokers_partitions_go_to_the_others_and_nothing_else_moves() {
        let partitions: Vec<Leadership> = (0..9).map(|p| leadership(p, 1 + p % 3)).collect();
        let moves = plan(&partitions, &[1, 2], &no_racks());
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
        assert!(
            plan(&partitions, &[1, 2, 3], &no_racks()).is_empty(),
            "balanced already"
        );
    }

    #[test]
    fn a_new_broker_takes_its_share() {
        let partitions: Vec<Leadership> = (0..9).map(|p| leadership(p, 1 + p % 2)).collect();
        let moves = plan(&partitions, &[1, 2, 3], &no_racks());
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
        let moves = plan(&partitions, &[1, 2, 3], &no_racks());
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
        let moves = plan(&partitions, &[1, 2], &no_racks());
        assert!(moves.is_empty(), "{moves:?}");

        // A dead leader's partition goes where an operator asked, if it can.
        let orphaned = vec![Leadership {
            handover_to: 2,
            ..leadership(0, 7)
        }];
        assert_eq!(plan(&orphaned, &[1, 2], &no_racks())[0].to, 2);
    }

    fn racks(of: &[(i32, &str)]) -> Racks {
        of.iter()
            .map(|(node, rack)| (*node, Some((*rack).to_owned())))
            .collect()
    }

    #[test]
    fn new_partitions_spread_over_racks_as_well_as_brokers() {
        // Racks a (brokers 1, 2) and b (broker 3): of four new partitions, b's one
        // broker takes two, as many as rack a, not one.
        let partitions: Vec<Leadership> = (0..4).map(|p| leadership(p, -1)).collect();
        let placed = racks(&[(1, "a"), (2, "a"), (3, "b")]);
        let moves = plan(&partitions, &[1, 2, 3], &placed);
        let counts = counts(&partitions, &moves);
        assert_eq!(counts.get(&3), Some(&2), "{counts:?}");
        assert_eq!(counts.get(&1).unwrap() + counts.get(&2).unwrap(), 2);
    }

    #[test]
    fn a_draining_brokers_partitions_stay_in_its_rack_when_balance_allows() {
        // Brokers 1 and 2 in rack a, 3 and 4 in rack b; broker 1 drains: its
        // partitions go to 2, its rack's other broker, as far as balance allows.
        let partitions: Vec<Leadership> = (0..8).map(|p| leadership(p, 1 + p % 4)).collect();
        let placed = racks(&[(1, "a"), (2, "a"), (3, "b"), (4, "b")]);
        let moves = plan(&partitions, &[2, 3, 4], &placed);
        assert_eq!(moves.len(), 2, "{moves:?}");
        let to: Vec<i32> = moves.iter().map(|m| m.to).collect();
        assert!(to.contains(&2), "one stays in rack a: {to:?}");
        let counts = counts(&partitions, &moves);
        assert!(
            counts.values().all(|c| (2..=3).contains(c)),
            "balanced: {counts:?}"
        );
        // Without racks the same drain spreads by node id only.
        let plain = plan(&partitions, &[2, 3, 4], &no_racks());
        assert_eq!(plain.len(), 2);
    }
}
