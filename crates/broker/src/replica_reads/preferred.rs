//! KIP-392's rack-aware replica selection, as a leader answers a consumer's fetch:
//! a consumer that names a rack (`client.rack`) the leader is not in is sent to a
//! live broker of that rack, which serves it the same committed records (see
//! [`super::ReplicaReads`]); one in the leader's rack, or in a rack no live broker is
//! in, reads from the leader. The partitions of a rack's clients are spread over the
//! rack's brokers by a hash of the partition, the same on every leader.

use std::collections::BTreeSet;

use spool_metadata::{BrokerRecord, PartitionKey};

/// A partition's replicas as Metadata lists them: its leader, then the broker the
/// leader names to the consumers of each other rack (Java clients follow a preferred
/// read replica only if it is among the partition's replicas), then live writers
/// after the leader, in node order, up to the topic's replication factor (shared
/// storage keeps the copies: each of them can serve and take over the partition, so
/// all are in sync).
#[derive(Debug, Default)]
pub(crate) struct ReplicaLists {
    /// The live brokers reachable on the request's listener; empty when leaders name
    /// no preferred replicas (embedded mode, `broker.read.preferred=false`).
    live: Vec<BrokerRecord>,
    /// Their racks, each once (none without racks: every partition's leader alone).
    racks: BTreeSet<String>,
    listener: String,
    /// The live brokers that lead partitions (not readers), by node id; empty in
    /// embedded mode.
    writers: Vec<i32>,
}

impl ReplicaLists {
    pub(crate) fn new(live: Vec<BrokerRecord>, writers: Vec<i32>, listener: &str) -> ReplicaLists {
        let racks = live
            .iter()
            .filter_map(|broker| broker.rack.clone())
            .collect();
        let mut writers = writers;
        writers.sort_unstable();
        ReplicaLists {
            live,
            racks,
            listener: listener.to_owned(),
            writers,
        }
    }

    /// The live writers reachable on the request's listener, by node id (none in
    /// embedded mode).
    pub(crate) fn writers(&self) -> &[i32] {
        &self.writers
    }

    /// The replicas of `key`, led by `leader`, of a topic of replication `factor`:
    /// the brokers a client `assigned` it (the leader added first if it is not one
    /// of them), or the leader first and the writers after it.
    pub(crate) fn of(
        &self,
        key: PartitionKey,
        leader: i32,
        factor: i16,
        assigned: &[i32],
    ) -> Vec<i32> {
        let mut replicas = vec![leader];
        if assigned.contains(&leader) {
            replicas.clear();
        }
        replicas.extend_from_slice(assigned);
        let wanted = usize::try_from(factor).unwrap_or(1);
        let after = self.writers.partition_point(|node| *node <= leader);
        let (before, rest) = self.writers.split_at(after);
        for node in rest.iter().chain(before) {
            if replicas.len() >= wanted || !assigned.is_empty() {
                break;
            }
            if !replicas.contains(node) {
                replicas.push(*node);
            }
        }
        if self.racks.is_empty() {
            return replicas;
        }
        let leader_rack = self
            .live
            .iter()
            .find(|broker| broker.node_id == leader)
            .and_then(|broker| broker.rack.as_deref());
        for rack in &self.racks {
            let named =
                preferred_replica(key, rack, leader, leader_rack, &self.live, &self.listener);
            if let Some(node) = named.filter(|node| !replicas.contains(node)) {
                replicas.push(node);
            }
        }
        replicas
    }

    /// Of a partition's `replicas`, those in sync: the leader and every live one
    /// (shared storage keeps the copies); in embedded mode, all.
    pub(crate) fn in_sync(&self, replicas: &[i32], leader: i32) -> Vec<i32> {
        replicas
            .iter()
            .copied()
            .filter(|node| {
                *node == leader
                    || self.writers.is_empty()
                    || self.writers.contains(node)
                    || self.live.iter().any(|broker| broker.node_id == *node)
            })
            .collect()
    }
}

/// The broker a consumer in `client_rack` is to fetch the partition `key` from, if
/// not this one (`me`, in `my_rack`): of the `live` brokers not draining that are in
/// that rack and reachable on the client's `listener`, the one the partition hashes
/// to. `None`: the consumer reads from the leader.
pub(crate) fn preferred_replica(
    key: PartitionKey,
    client_rack: &str,
    me: i32,
    my_rack: Option<&str>,
    live: &[BrokerRecord],
    listener: &str,
) -> Option<i32> {
    if client_rack.is_empty() || my_rack == Some(client_rack) {
        return None;
    }
    let mut in_rack: Vec<i32> = live
        .iter()
        .filter(|broker| broker.node_id != me && !broker.draining)
        .filter(|broker| broker.rack.as_deref() == Some(client_rack))
        // One registered before listeners were recorded is on every listener.
        .filter(|broker| {
            broker.listeners.is_empty() || broker.listeners.iter().any(|e| e.listener == listener)
        })
        .map(|broker| broker.node_id)
        .collect();
    if in_rack.is_empty() {
        return None;
    }
    in_rack.sort_unstable();
    let spread = crc32c::crc32c_append(
        crc32c::crc32c(key.topic_id.as_bytes()),
        &key.partition.to_be_bytes(),
    );
    let index = usize::try_from(spread).unwrap_or(0) % in_rack.len();
    in_rack.get(index).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn broker(node_id: i32, rack: Option<&str>) -> BrokerRecord {
        BrokerRecord {
            node_id,
            incarnation: Uuid::nil(),
            host: "127.0.0.1".to_owned(),
            port: 9000 + node_id,
            rack: rack.map(str::to_owned),
            lease_expires_ms: i64::MAX,
            draining: false,
            topics_seen: 0,
            assignments_seen: 0,
            listeners: Vec::new(),
            reader: node_id > 3,
        }
    }

    fn key(partition: i32) -> PartitionKey {
        PartitionKey {
            topic_id: Uuid::from_u128(7),
            partition,
        }
    }

    #[test]
    fn a_client_of_another_rack_goes_to_a_broker_of_its_rack() {
        let live = [
            broker(1, Some("a")),
            broker(2, Some("b")),
            broker(4, Some("b")),
            broker(5, None),
        ];
        let choose = |partition, rack| {
            preferred_replica(key(partition), rack, 1, Some("a"), &live, "PLAINTEXT")
        };
        // The leader's own rack, no rack, a rack without a live broker: the leader.
        assert_eq!(choose(0, "a"), None);
        assert_eq!(choose(0, ""), None);
        assert_eq!(choose(0, "c"), None);
        // Rack b: brokers 2 and 4 (a reader), spread by partition.
        let chosen: Vec<Option<i32>> = (0..64).map(|p| choose(p, "b")).collect();
        assert!(
            chosen.iter().all(|c| matches!(c, Some(2 | 4))),
            "{chosen:?}"
        );
        assert!(
            chosen.contains(&Some(2)) && chosen.contains(&Some(4)),
            "{chosen:?}"
        );
        // The same answer every time (every leader computes the same).
        assert_eq!(choose(5, "b"), choose(5, "b"));
    }

    #[test]
    fn replicas_fill_up_to_the_factor_with_the_writers_after_the_leader() {
        let lists = ReplicaLists::new(Vec::new(), vec![4, 1, 3, 2], "PLAINTEXT");
        assert_eq!(lists.of(key(0), 3, 3, &[]), vec![3, 4, 1]);
        assert_eq!(lists.of(key(0), 4, 2, &[]), vec![4, 1]);
        assert_eq!(lists.of(key(0), 2, 1, &[]), vec![2]);
        // Never more than there are writers.
        assert_eq!(lists.of(key(0), 1, 6, &[]), vec![1, 2, 3, 4]);
        // Embedded mode: the leader alone.
        assert_eq!(ReplicaLists::default().of(key(0), 1, 3, &[]), vec![1]);
        // A client's assignment, as named; a leader the controller moved elsewhere
        // first; a broker gone is named but not in sync.
        assert_eq!(lists.of(key(0), 2, 2, &[2, 4]), vec![2, 4]);
        assert_eq!(lists.of(key(0), 4, 2, &[2, 4]), vec![2, 4]);
        assert_eq!(lists.of(key(0), 3, 2, &[2, 9]), vec![3, 2, 9]);
        assert_eq!(lists.in_sync(&[3, 2, 9], 3), vec![3, 2]);
    }

    #[test]
    fn metadata_lists_the_leader_and_the_broker_it_names_to_each_other_rack() {
        let live = vec![
            broker(1, Some("a")),
            broker(2, Some("a")),
            broker(3, Some("b")),
            broker(4, Some("c")),
            broker(5, None),
        ];
        let lists = ReplicaLists::new(live.clone(), Vec::new(), "PLAINTEXT");
        for partition in 0..16 {
            let replicas = lists.of(key(partition), 1, 1, &[]);
            // Rack a is the leader's own; b and c have one broker each.
            assert_eq!(replicas, vec![1, 3, 4], "partition {partition}");
            for (rack, node) in [("b", 3), ("c", 4)] {
                assert_eq!(
                    preferred_replica(key(partition), rack, 1, Some("a"), &live, "PLAINTEXT"),
                    Some(node)
                );
            }
        }
        assert_eq!(
            ReplicaLists::default().of(key(0), 7, 1, &[]),
            vec![7],
            "off: the leader alone"
        );
    }

    #[test]
    fn draining_brokers_and_brokers_without_the_clients_listener_are_not_chosen() {
        let mut draining = broker(2, Some("b"));
        draining.draining = true;
        let mut elsewhere = broker(3, Some("b"));
        elsewhere.listeners = vec![spool_metadata::BrokerEndpoint {
            listener: "SASL_SSL".to_owned(),
            host: "h".to_owned(),
            port: 1,
        }];
        let live = [broker(1, None), draining, elsewhere];
        assert_eq!(
            preferred_replica(key(0), "b", 1, None, &live, "PLAINTEXT"),
            None
        );
        assert_eq!(
            preferred_replica(key(0), "b", 1, None, &live, "SASL_SSL"),
            Some(3)
        );
    }
}
