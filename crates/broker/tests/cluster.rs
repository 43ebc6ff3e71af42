//! Several brokers sharing one metadata store and one object store form a cluster:
//! the controller spreads partitions over them, each serves only what it leads
//! (`NOT_LEADER_OR_FOLLOWER` elsewhere), Metadata from any of them names every live
//! broker and each partition's leader; a broker that stops hands its partitions over
//! (with raised epochs) and a broker that joins takes its share, no data copied.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{MetadataRequest, MetadataResponse, RequestKind, ResponseKind};
use object_store::memory::InMemory;
use spool_broker::{Broker, BrokerConfig, MetadataUrl, ObjectStorage};
use spool_testkit::{BatchBuilder, FetchAt, RawClient, topic_name};

const NOT_LEADER_OR_FOLLOWER: i16 = 6;

/// The shared stores, and the brokers running on them by node id.
struct Cluster {
    objects: Arc<InMemory>,
    metadata: MetadataUrl,
    brokers: BTreeMap<i32, (Broker, tempfile::TempDir)>,
    _dir: tempfile::TempDir,
}

impl Cluster {
    fn new() -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        Cluster {
            objects: Arc::new(InMemory::new()),
            metadata: MetadataUrl::Sqlite(dir.path().join("catalogue.db")),
            brokers: BTreeMap::new(),
            _dir: dir,
        }
    }

    async fn start(&mut self, node_id: i32) {
        let data = tempfile::tempdir().unwrap();
        let mut config = BrokerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            data_dir: data.path().to_path_buf(),
            metadata_url: Some(self.metadata.clone()),
            node_id,
            ..BrokerConfig::default()
        };
        for (name, value) in [
            ("storage.flush.ms", "5"),
            ("cluster.lease.ms", "1000"),
            ("cluster.heartbeat.ms", "100"),
        ] {
            config.set(name, value).unwrap();
        }
        let objects = ObjectStorage::new(self.objects.clone(), "spool".into());
        let broker = Broker::start_with_objects(config, objects).await.unwrap();
        self.brokers.insert(node_id, (broker, data));
    }

    async fn stop(&mut self, node_id: i32) {
        let (broker, _data) = self.brokers.remove(&node_id).unwrap();
        broker.shutdown().await.unwrap();
    }

    fn addr(&self, node_id: i32) -> SocketAddr {
        self.brokers[&node_id].0.local_addr()
    }

    async fn client(&self, node_id: i32) -> RawClient {
        RawClient::connect(self.addr(node_id)).await
    }
}

async fn metadata(client: &mut RawClient, topic: &str) -> MetadataResponse {
    let request = MetadataRequest::default()
        .with_allow_auto_topic_creation(false)
        .with_topics(Some(vec![
            MetadataRequestTopic::default().with_name(Some(topic_name(topic))),
        ]));
    let ResponseKind::Metadata(response) = client.call(RequestKind::Metadata(request), 12).await
    else {
        panic!("not a Metadata response")
    };
    response
}

/// Each partition's (leader, epoch) once each of the topic's 6 partitions has one of
/// `nodes`, each leading `share` of them, and the brokers listed are exactly `nodes`,
/// as broker `asked` tells it.
async fn settled(
    cluster: &Cluster,
    asked: i32,
    topic: &str,
    nodes: &[i32],
    share: usize,
) -> Vec<(i32, i32)> {
    let mut client = cluster.client(asked).await;
    let started = Instant::now();
    loop {
        let response = metadata(&mut client, topic).await;
        let brokers: Vec<i32> = response.brokers.iter().map(|b| b.node_id.0).collect();
        let leaders: Vec<(i32, i32)> = response.topics[0]
            .partitions
            .iter()
            .map(|p| (p.leader_id.0, p.leader_epoch))
            .collect();
        if brokers == nodes
            && leaders.len() == 6
            && leaders.iter().all(|(leader, _)| nodes.contains(leader))
            && counts(&leaders).values().all(|count| *count == share)
        {
            return leaders;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "not settled: brokers {brokers:?}, leaders {leaders:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn counts(leaders: &[(i32, i32)]) -> BTreeMap<i32, usize> {
    let mut counts = BTreeMap::new();
    for (leader, _) in leaders {
        *counts.entry(*leader).or_default() += 1;
    }
    counts
}

fn batch(tag: &str) -> Vec<u8> {
    BatchBuilder::new()
        .record(spool_testkit::TestRecord::value(tag.as_bytes().to_vec()))
        .build()
}

/// Produces one record to `partition` through its leader, retrying while leadership
/// settles; returns its offset.
async fn produce(cluster: &Cluster, leader: i32, partition: i32, tag: &str) -> i64 {
    let mut client = cluster.client(leader).await;
    let started = Instant::now();
    loop {
        let (error, offset) = client.produce("spread", partition, batch(tag)).await;
        if error == 0 {
            return offset;
        }
        assert!(
            error == NOT_LEADER_OR_FOLLOWER && started.elapsed() < Duration::from_secs(10),
            "produce to {partition} through {leader}: error {error}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every record value of `partition`, read through `node`.
async fn values(cluster: &Cluster, node: i32, partition: i32) -> Vec<String> {
    let mut client = cluster.client(node).await;
    let at = FetchAt {
        partition,
        offset: 0,
        max_bytes: 1 << 20,
    };
    let answer = &client.fetch(12, "spread", &[at], 0, 0, 1 << 20).await[0];
    assert_eq!(answer.error_code, 0, "fetch {partition} from {node}");
    let mut records = answer.records.clone().unwrap_or_default();
    kafka_protocol::records::RecordBatchDecoder::decode_all(&mut records)
        .unwrap()
        .into_iter()
        .flat_map(|batch| batch.records)
        .map(|record| String::from_utf8(record.value.unwrap().to_vec()).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_spread_over_the_brokers_and_move_when_one_leaves_or_joins() {
    let mut cluster = Cluster::new();
    for node in [1, 2, 3] {
        cluster.start(node).await;
    }
    let mut client = cluster.client(1).await;
    assert_eq!(client.create_topic("spread", 6).await, 0);
    let leaders = settled(&cluster, 2, "spread", &[1, 2, 3], 2).await;

    // Each partition is served by its leader, and refused elsewhere.
    for (partition, (leader, _)) in (0..).zip(&leaders) {
        assert_eq!(
            produce(&cluster, *leader, partition, &format!("a{partition}")).await,
            0
        );
        let other = if *leader == 1 { 2 } else { 1 };
        let mut elsewhere = cluster.client(other).await;
        let (error, _) = elsewhere.produce("spread", partition, batch("no")).await;
        assert_eq!(
            error, NOT_LEADER_OR_FOLLOWER,
            "partition {partition} on {other}"
        );
    }

    // Broker 2 stops: its partitions move (new epochs) and keep their data.
    cluster.stop(2).await;
    let after = settled(&cluster, 1, "spread", &[1, 3], 3).await;
    for (partition, ((before, old_epoch), (now, new_epoch))) in
        (0..).zip(leaders.iter().zip(&after))
    {
        if *before == 2 {
            assert!(
                new_epoch > old_epoch,
                "partition {partition} moved under a new epoch"
            );
        } else {
            assert_eq!(
                (before, old_epoch),
                (now, new_epoch),
                "partition {partition} stays"
            );
        }
        assert_eq!(
            produce(&cluster, *now, partition, &format!("b{partition}")).await,
            1
        );
        assert_eq!(
            values(&cluster, *now, partition).await,
            vec![format!("a{partition}"), format!("b{partition}")]
        );
    }

    // Broker 4 joins and takes its share.
    cluster.start(4).await;
    let joined = settled(&cluster, 4, "spread", &[1, 3, 4], 2).await;
    for (partition, (leader, _)) in (0..).zip(&joined) {
        assert_eq!(
            produce(&cluster, *leader, partition, &format!("c{partition}")).await,
            2
        );
    }
    for node in [1, 3, 4] {
        cluster.stop(node).await;
    }
}
