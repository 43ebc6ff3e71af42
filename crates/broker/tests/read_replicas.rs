//! Reads anywhere, over raw requests on an in-process cluster (two writers and a
//! reader on SQLite and an in-memory object store; `compat/test_read_replicas.py`
//! runs real clients on PostgreSQL and moto): the reader leads nothing and serves the
//! same bytes, offsets and marks as each partition's leader; a writer that does not
//! lead a partition serves a consumer that names its rack and refuses one that does
//! not; a leader sends a consumer of another rack to a broker of that rack.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::{BrokerId, FetchRequest, RequestKind, ResponseKind};
use kafka_protocol::protocol::StrBytes;
use spool_testkit::topic_name;

use crate::cluster::{Cluster, batch, metadata};

const NOT_LEADER_OR_FOLLOWER: i16 = 6;
const READER: i32 = 3;

/// A fetch of `partition` from offset 0, from a consumer in `rack` ("" for none).
fn fetch(topic: &str, partition: i32, rack: &str) -> RequestKind {
    RequestKind::Fetch(
        FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_bytes(1 << 20)
            .with_rack_id(StrBytes::from_string(rack.to_owned()))
            .with_topics(vec![
                FetchTopic::default()
                    .with_topic(topic_name(topic))
                    .with_partitions(vec![
                        FetchPartition::default()
                            .with_partition(partition)
                            .with_current_leader_epoch(-1)
                            .with_partition_max_bytes(1 << 20),
                    ]),
            ]),
    )
}

async fn fetched(cluster: &Cluster, node: i32, partition: i32, rack: &str) -> PartitionData {
    let mut client = cluster.client(node).await;
    let ResponseKind::Fetch(response) = client.call(fetch("spread", partition, rack), 12).await
    else {
        panic!("not a Fetch response")
    };
    response.responses[0].partitions[0].clone()
}

/// Each of the topic's partitions' leader, once every partition has one of the
/// writers and every broker lists all three.
async fn leaders(cluster: &Cluster) -> Vec<i32> {
    let started = Instant::now();
    loop {
        let response = metadata(&mut cluster.client(READER).await, "spread").await;
        let brokers: Vec<i32> = response.brokers.iter().map(|b| b.node_id.0).collect();
        let leaders: Vec<i32> = response.topics[0]
            .partitions
            .iter()
            .map(|p| p.leader_id.0)
            .collect();
        let on_writers = leaders.iter().all(|l| [1, 2].contains(l));
        if brokers == [1, 2, READER] && on_writers && leaders.contains(&1) && leaders.contains(&2) {
            return leaders;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "not settled: {brokers:?} {leaders:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_serves_what_the_leaders_serve_and_leaders_send_its_rack_there() {
    let mut cluster = Cluster::new();
    cluster.start_with(1, &[("broker.rack", "a")]).await;
    cluster.start_with(2, &[("broker.rack", "b")]).await;
    cluster
        .start_with(READER, &[("broker.rack", "r"), ("broker.roles", "reader")])
        .await;
    assert_eq!(cluster.client(1).await.create_topic("spread", 4).await, 0);
    let leaders = leaders(&cluster).await;
    for (partition, leader) in (0..).zip(&leaders) {
        let mut client = cluster.client(*leader).await;
        for round in 0..3 {
            let (error, _) = client
                .produce("spread", partition, batch(&format!("p{partition}-{round}")))
                .await;
            assert_eq!(error, 0);
        }
    }
    for (partition, leader) in (0..).zip(&leaders) {
        let other = if *leader == 1 { 2 } else { 1 };
        let at_leader = fetched(&cluster, *leader, partition, "").await;
        assert_eq!((at_leader.error_code, at_leader.high_watermark), (0, 3));
        // The reader serves a consumer without a rack; the same bytes and marks.
        let at_reader = fetched(&cluster, READER, partition, "").await;
        assert_eq!(at_reader.error_code, 0, "partition {partition}");
        let records = |data: &PartitionData| data.records.clone().unwrap_or_default();
        assert_eq!(records(&at_reader), records(&at_leader));
        assert!(!records(&at_reader).is_empty());
        assert_eq!(
            (
                at_reader.high_watermark,
                at_reader.last_stable_offset,
                at_reader.log_start_offset
            ),
            (
                at_leader.high_watermark,
                at_leader.last_stable_offset,
                at_leader.log_start_offset
            )
        );
        // A writer that does not lead it: a consumer naming its rack is served there,
        // one without a rack is sent to the leader.
        let with_rack = fetched(&cluster, other, partition, "z").await;
        assert_eq!(records(&with_rack), records(&at_leader));
        let without = fetched(&cluster, other, partition, "").await;
        assert_eq!(
            (without.error_code, without.current_leader.leader_id.0),
            (NOT_LEADER_OR_FOLLOWER, *leader)
        );
        // KIP-392: the leader sends rack r's consumer to the reader, with no records;
        // a consumer of its own rack, or of a rack with no broker, it serves itself.
        let sent = fetched(&cluster, *leader, partition, "r").await;
        assert_eq!(
            (sent.error_code, sent.preferred_read_replica.0),
            (0, READER)
        );
        assert_eq!(records(&sent), Bytes::new());
        let own_rack = if *leader == 1 { "a" } else { "b" };
        for rack in [own_rack, "nowhere"] {
            let served = fetched(&cluster, *leader, partition, rack).await;
            assert_eq!(served.preferred_read_replica.0, -1, "rack {rack}");
            assert_eq!(records(&served), records(&at_leader));
        }
        // ListOffsets at the reader: what the leader answers.
        let mut reader = cluster.client(READER).await;
        let mut leader_client = cluster.client(*leader).await;
        for timestamp in [-1, -2] {
            let from_reader = reader.list_offset(7, "spread", partition, timestamp).await;
            let from_leader = leader_client
                .list_offset(7, "spread", partition, timestamp)
                .await;
            assert_eq!(
                (
                    from_reader.error_code,
                    from_reader.offset,
                    from_reader.leader_epoch
                ),
                (0, from_leader.offset, from_leader.leader_epoch),
                "timestamp {timestamp}"
            );
        }
    }
    // The reader leads nothing, even after the writers rebalance.
    assert!(!leaders.contains(&READER));
    for node in [READER, 2, 1] {
        cluster.stop(node).await;
    }
}
