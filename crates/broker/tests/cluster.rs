//! Several brokers sharing one metadata store and one object store form a cluster:
//! the controller spreads partitions over them, each serves only what it leads
//! (`NOT_LEADER_OR_FOLLOWER` elsewhere), Metadata from any of them names every live
//! broker and each partition's leader; a broker that stops hands its partitions over
//! (with raised epochs) and a broker that joins takes its share, no data copied. A
//! live leader hands a partition over only once what it acknowledged is committed.

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

const LEADER_NOT_AVAILABLE: i16 = 5;
const NOT_LEADER_OR_FOLLOWER: i16 = 6;

/// The shared stores, and the brokers running on them by node id.
pub(crate) struct Cluster {
    objects: Arc<InMemory>,
    metadata: MetadataUrl,
    brokers: BTreeMap<i32, (Broker, tempfile::TempDir)>,
    _dir: tempfile::TempDir,
}

impl Cluster {
    pub(crate) fn new() -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        Cluster {
            objects: Arc::new(InMemory::new()),
            metadata: MetadataUrl::Sqlite(dir.path().join("catalogue.db")),
            brokers: BTreeMap::new(),
            _dir: dir,
        }
    }

    pub(crate) async fn start(&mut self, node_id: i32) {
        self.start_with(node_id, &[]).await;
    }

    /// Starts broker `node_id` with `settings` over the test's defaults.
    pub(crate) async fn start_with(&mut self, node_id: i32, settings: &[(&str, &str)]) {
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
        ]
        .iter()
        .chain(settings)
        {
            config.set(name, value).unwrap();
        }
        let objects = ObjectStorage::new(self.objects.clone(), "spool".into());
        let broker = Broker::builder(config)
            .objects(objects)
            .start()
            .await
            .unwrap();
        self.brokers.insert(node_id, (broker, data));
    }

    pub(crate) async fn stop(&mut self, node_id: i32) {
        let (broker, _data) = self.brokers.remove(&node_id).unwrap();
        broker.shutdown().await.unwrap();
    }

    fn addr(&self, node_id: i32) -> SocketAddr {
        self.brokers[&node_id].0.local_addr()
    }

    pub(crate) async fn client(&self, node_id: i32) -> RawClient {
        RawClient::connect(self.addr(node_id)).await
    }
}

pub(crate) async fn metadata(client: &mut RawClient, topic: &str) -> MetadataResponse {
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

pub(crate) fn batch(tag: &str) -> Vec<u8> {
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

    // Broker 3 drains: everything moves to broker 1 (it stays up, leading nothing);
    // undrained, it takes its share again.
    let store = spool_metadata::open(&cluster.metadata).await.unwrap();
    assert!(store.set_draining(3, true).await.unwrap());
    settled(&cluster, 1, "spread", &[1, 3], 6).await;
    let drained = settled(&cluster, 3, "spread", &[1, 3], 6).await;
    assert!(
        drained.iter().all(|(leader, _)| *leader == 1),
        "{drained:?}"
    );
    let mut on_three = cluster.client(3).await;
    assert_eq!(
        on_three.produce("spread", 0, batch("no")).await.0,
        NOT_LEADER_OR_FOLLOWER
    );
    assert!(store.set_draining(3, false).await.unwrap());
    let back = settled(&cluster, 1, "spread", &[1, 3], 3).await;
    for (partition, (leader, _)) in (0..).zip(&back) {
        let tag = format!("d{partition}");
        assert_eq!(produce(&cluster, *leader, partition, &tag).await, 2);
    }

    // Broker 4 joins and takes its share.
    cluster.start(4).await;
    let joined = settled(&cluster, 4, "spread", &[1, 3, 4], 2).await;
    for (partition, (leader, _)) in (0..).zip(&joined) {
        assert_eq!(
            produce(&cluster, *leader, partition, &format!("c{partition}")).await,
            3
        );
    }
    for node in [1, 3, 4] {
        cluster.stop(node).await;
    }
}

const MESSAGE_TOO_LARGE: i16 = 10;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;

/// Each partition's leader as broker `asked` tells it, in one Metadata request.
async fn leaders_now(cluster: &Cluster, asked: i32, topic: &str) -> (i16, Vec<i32>) {
    let response = metadata(&mut cluster.client(asked).await, topic).await;
    let topic = &response.topics[0];
    let leaders = topic.partitions.iter().map(|p| p.leader_id.0).collect();
    (topic.error_code, leaders)
}

/// The error of one produce of `tag` to each partition through its leader, at once.
async fn produce_to_leaders(
    cluster: &Cluster,
    topic: &str,
    leaders: &[i32],
    tag: &str,
) -> Vec<i16> {
    let mut errors = Vec::new();
    for (partition, leader) in (0..).zip(leaders) {
        let mut client = cluster.client(*leader).await;
        errors.push(client.produce(topic, partition, batch(tag)).await.0);
    }
    errors
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_through_one_broker_is_in_force_on_all_once_answered() {
    let mut cluster = Cluster::new();
    for node in [1, 2, 3] {
        cluster.start(node).await;
    }
    // Created through 1: every broker lists it with its leaders, and they serve it,
    // without waiting.
    let mut one = cluster.client(1).await;
    assert_eq!(one.create_topic("seen", 3).await, 0);
    assert_eq!(one.create_topic("plain", 3).await, 0);
    let (error, leaders) = leaders_now(&cluster, 1, "seen").await;
    assert_eq!(error, 0);
    let spread = |leaders: &[i32]| {
        let mut sorted = leaders.to_vec();
        sorted.sort_unstable();
        sorted
    };
    // One partition on each broker, so that each check below reaches them all.
    assert_eq!(spread(&leaders), [1, 2, 3], "{leaders:?}");
    for asked in [2, 3] {
        assert_eq!(
            leaders_now(&cluster, asked, "seen").await,
            (0, leaders.clone())
        );
    }
    assert_eq!(
        produce_to_leaders(&cluster, "seen", &leaders, "a").await,
        [0, 0, 0]
    );

    // A topic's config altered through 1 is in force on its leaders.
    let big = "x".repeat(200);
    assert_eq!(
        one.set_config(2, "seen", "max.message.bytes", "100").await,
        0
    );
    assert_eq!(
        produce_to_leaders(&cluster, "seen", &leaders, &big).await,
        [MESSAGE_TOO_LARGE; 3]
    );

    // So is a cluster-wide broker default altered through 2, for a topic that does not
    // set the config itself.
    let (_, plain) = leaders_now(&cluster, 1, "plain").await;
    assert_eq!(spread(&plain), [1, 2, 3], "{plain:?}");
    assert_eq!(
        produce_to_leaders(&cluster, "plain", &plain, &big).await,
        [0, 0, 0]
    );
    let mut two = cluster.client(2).await;
    assert_eq!(two.set_config(4, "", "message.max.bytes", "100").await, 0);
    assert_eq!(
        produce_to_leaders(&cluster, "plain", &plain, &big).await,
        [MESSAGE_TOO_LARGE; 3]
    );

    // Deleted through 3: gone everywhere.
    assert_eq!(cluster.client(3).await.delete_topic("seen").await, 0);
    for asked in [1, 2] {
        assert_eq!(
            leaders_now(&cluster, asked, "seen").await.0,
            UNKNOWN_TOPIC_OR_PARTITION
        );
    }
    for node in [1, 2, 3] {
        cluster.stop(node).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brokers_changing_topics_at_once_do_not_wait_for_each_other() {
    // A long lease: a broker waiting for another that cannot follow would wait this.
    let lease = Duration::from_secs(20);
    let mut cluster = Cluster::new();
    for node in [1, 2] {
        cluster
            .start_with(node, &[("cluster.lease.ms", "20000")])
            .await;
    }
    let started = Instant::now();
    let creators = [1, 2].map(|node| {
        let addr = cluster.addr(node);
        tokio::spawn(async move {
            let mut client = RawClient::connect(addr).await;
            for i in 0..10 {
                assert_eq!(client.create_topic(&format!("t{node}-{i}"), 1).await, 0);
            }
        })
    });
    for creator in creators {
        creator.await.unwrap();
    }
    assert!(
        started.elapsed() < lease / 2,
        "20 creations through two brokers at once took {:?}",
        started.elapsed()
    );
    for node in [1, 2] {
        cluster.stop(node).await;
    }
}

/// A Fetch of partition `partition` from offset 0, naming the topic by id (v13+).
fn fetch_by_id(topic_id: uuid::Uuid, partition: i32) -> RequestKind {
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    RequestKind::Fetch(
        kafka_protocol::messages::FetchRequest::default()
            .with_replica_id(kafka_protocol::messages::BrokerId(-1))
            .with_max_bytes(1 << 20)
            .with_topics(vec![
                FetchTopic::default()
                    .with_topic_id(topic_id)
                    .with_partitions(vec![
                        FetchPartition::default()
                            .with_partition(partition)
                            .with_partition_max_bytes(1 << 20),
                    ]),
            ]),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_that_does_not_lead_a_partition_names_its_leader() {
    let mut cluster = Cluster::new();
    for node in [1, 2] {
        cluster.start(node).await;
    }
    assert_eq!(cluster.client(1).await.create_topic("hinted", 2).await, 0);
    let described = metadata(&mut cluster.client(1).await, "hinted").await;
    let topic_id = described.topics[0].topic_id;
    for partition in &described.topics[0].partitions {
        let (index, leader, epoch) = (
            partition.partition_index,
            partition.leader_id.0,
            partition.leader_epoch,
        );
        let other = if leader == 1 { 2 } else { 1 };
        let leader_at = (
            "127.0.0.1".to_owned(),
            i32::from(cluster.addr(leader).port()),
        );
        let mut client = cluster.client(other).await;

        // Produce v10 (KIP-951) names the leader and its address; v9 cannot.
        for version in [9, 10] {
            let ResponseKind::Produce(response) = client
                .call(
                    spool_testkit::produce_request("hinted", index, batch("x")),
                    version,
                )
                .await
            else {
                panic!("not a Produce response")
            };
            let refused = &response.responses[0].partition_responses[0];
            assert_eq!(refused.error_code, NOT_LEADER_OR_FOLLOWER);
            let hint = (
                refused.current_leader.leader_id.0,
                refused.current_leader.leader_epoch,
            );
            let endpoints: Vec<(String, i32)> = response
                .node_endpoints
                .iter()
                .map(|e| (e.host.to_string(), e.port))
                .collect();
            if version == 10 {
                assert_eq!(hint, (leader, epoch));
                assert_eq!(endpoints, std::slice::from_ref(&leader_at));
            } else {
                assert_eq!((hint, endpoints.len()), ((-1, -1), 0));
            }
        }

        // Fetch v16, by topic id, the same.
        let ResponseKind::Fetch(response) = client.call(fetch_by_id(topic_id, index), 16).await
        else {
            panic!("not a Fetch response")
        };
        let refused = &response.responses[0].partitions[0];
        assert_eq!(refused.error_code, NOT_LEADER_OR_FOLLOWER);
        assert_eq!(
            (
                refused.current_leader.leader_id.0,
                refused.current_leader.leader_epoch
            ),
            (leader, epoch)
        );
        let endpoint = &response.node_endpoints[0];
        assert_eq!((endpoint.host.to_string(), endpoint.port), leader_at);

        // The leader serves it by id; an id of no topic is UNKNOWN_TOPIC_ID.
        let mut at_leader = cluster.client(leader).await;
        assert_eq!(at_leader.produce("hinted", index, batch("y")).await, (0, 0));
        let ResponseKind::Fetch(response) = at_leader.call(fetch_by_id(topic_id, index), 13).await
        else {
            panic!("not a Fetch response")
        };
        let served = &response.responses[0].partitions[0];
        assert_eq!((served.error_code, served.high_watermark), (0, 1));
        assert_eq!(response.responses[0].topic_id, topic_id);
        let ResponseKind::Fetch(response) = at_leader
            .call(fetch_by_id(uuid::Uuid::new_v4(), index), 13)
            .await
        else {
            panic!("not a Fetch response")
        };
        assert_eq!(response.responses[0].partitions[0].error_code, 100);
    }
    for node in [1, 2] {
        cluster.stop(node).await;
    }
}

const NOT_COORDINATOR: i16 = 16;

/// The coordinator of `group` as broker `asked` answers (-1 with an error).
async fn coordinator(cluster: &Cluster, asked: i32, group: &str) -> i32 {
    use kafka_protocol::messages::FindCoordinatorRequest;
    let mut client = cluster.client(asked).await;
    let request = FindCoordinatorRequest::default().with_key(
        kafka_protocol::protocol::StrBytes::from_string(group.to_owned()),
    );
    let ResponseKind::FindCoordinator(response) =
        client.call(RequestKind::FindCoordinator(request), 3).await
    else {
        panic!("not a FindCoordinator response")
    };
    if response.error_code == 0 {
        // (A broker that just stopped may still be named, for a heartbeat.)
        if let Some((broker, _)) = cluster.brokers.get(&response.node_id.0) {
            assert_eq!(
                response.port,
                i32::from(broker.local_addr().port()),
                "the coordinator's address"
            );
        }
        response.node_id.0
    } else {
        -1
    }
}

/// Commits `offset` for `group` on spread/0 through `node` (a simple commit, no
/// generation); returns the partition's error code.
async fn commit(cluster: &Cluster, node: i32, group: &str, offset: i64) -> i16 {
    use kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use kafka_protocol::messages::{GroupId, OffsetCommitRequest};
    let mut client = cluster.client(node).await;
    let request = OffsetCommitRequest::default()
        .with_group_id(GroupId(kafka_protocol::protocol::StrBytes::from_string(
            group.to_owned(),
        )))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![
            OffsetCommitRequestTopic::default()
                .with_name(topic_name("spread"))
                .with_partitions(vec![
                    OffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(offset),
                ]),
        ]);
    let ResponseKind::OffsetCommit(response) =
        client.call(RequestKind::OffsetCommit(request), 2).await
    else {
        panic!("not an OffsetCommit response")
    };
    response.topics[0].partitions[0].error_code
}

/// (error, offset) of `group`'s commit on spread/0 as `node` answers OffsetFetch v3.
async fn fetch_committed(cluster: &Cluster, node: i32, group: &str) -> (i16, i64) {
    use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
    use kafka_protocol::messages::{GroupId, OffsetFetchRequest};
    let mut client = cluster.client(node).await;
    let request = OffsetFetchRequest::default()
        .with_group_id(GroupId(kafka_protocol::protocol::StrBytes::from_string(
            group.to_owned(),
        )))
        .with_topics(Some(vec![
            OffsetFetchRequestTopic::default()
                .with_name(topic_name("spread"))
                .with_partition_indexes(vec![0]),
        ]));
    let ResponseKind::OffsetFetch(response) =
        client.call(RequestKind::OffsetFetch(request), 3).await
    else {
        panic!("not an OffsetFetch response")
    };
    let offset = response
        .topics
        .first()
        .map_or(-1, |t| t.partitions[0].committed_offset);
    (response.error_code, offset)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_group_has_one_coordinator_and_its_offsets_survive_a_move() {
    let mut cluster = Cluster::new();
    for node in [1, 2, 3] {
        cluster.start(node).await;
    }
    let mut client = cluster.client(1).await;
    assert_eq!(client.create_topic("spread", 6).await, 0);
    // Every broker knows the topic (commits name it).
    for node in [1, 2, 3] {
        settled(&cluster, node, "spread", &[1, 2, 3], 2).await;
    }

    // Every broker names the same coordinator; the groups spread over the brokers.
    let groups: Vec<String> = (0..12).map(|g| format!("group-{g}")).collect();
    let mut coordinators = BTreeMap::new();
    for group in &groups {
        let chosen = coordinator(&cluster, 1, group).await;
        for asked in [2, 3] {
            assert_eq!(coordinator(&cluster, asked, group).await, chosen, "{group}");
        }
        coordinators.insert(group.clone(), chosen);
    }
    let used: std::collections::BTreeSet<i32> = coordinators.values().copied().collect();
    assert!(
        used.len() >= 2,
        "groups spread over brokers: {coordinators:?}"
    );

    // A group is served by its coordinator only.
    let group = &groups[0];
    let chosen = coordinators[group];
    let other = [1, 2, 3].into_iter().find(|n| *n != chosen).unwrap();
    assert_eq!(commit(&cluster, other, group, 7).await, NOT_COORDINATOR);
    assert_eq!(
        fetch_committed(&cluster, other, group).await.0,
        NOT_COORDINATOR
    );
    assert_eq!(commit(&cluster, chosen, group, 42).await, 0);
    assert_eq!(fetch_committed(&cluster, chosen, group).await, (0, 42));

    // Its coordinator stops: another takes the group, with its committed offsets
    // (read from the store, not from what that broker had cached).
    let remaining: Vec<i32> = [1, 2, 3].into_iter().filter(|n| *n != chosen).collect();
    // Until it moves, the other brokers refuse the group.
    assert_eq!(
        fetch_committed(&cluster, remaining[0], group).await.0,
        NOT_COORDINATOR
    );
    cluster.stop(chosen).await;
    let started = Instant::now();
    let next = loop {
        let next = coordinator(&cluster, remaining[0], group).await;
        if remaining.contains(&next) && coordinator(&cluster, remaining[1], group).await == next {
            break next;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no new coordinator"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(fetch_committed(&cluster, next, group).await, (0, 42));
    assert_eq!(commit(&cluster, next, group, 43).await, 0);
    assert_eq!(fetch_committed(&cluster, next, group).await, (0, 43));
    for node in remaining {
        cluster.stop(node).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draining_leader_commits_what_it_acknowledged_before_handing_over() {
    let mut cluster = Cluster::new();
    // Appends wait 1.5 s for their object: acks=1 answers come long before it.
    let slow_flush = [
        ("storage.flush.ms", "1500"),
        ("cluster.handover.timeout.ms", "10000"),
    ];
    for node in [1, 2] {
        cluster.start_with(node, &slow_flush).await;
    }
    let mut client = cluster.client(1).await;
    assert_eq!(client.create_topic("spread", 6).await, 0);
    let leaders = settled(&cluster, 1, "spread", &[1, 2], 3).await;
    let partition = (0..).zip(&leaders).find(|(_, (l, _))| *l == 1).unwrap().0;

    let mut producer = cluster.client(1).await;
    for n in 0..5 {
        let RequestKind::Produce(request) =
            spool_testkit::produce_request("spread", partition, batch(&format!("v{n}")))
        else {
            unreachable!()
        };
        let request = RequestKind::Produce(request.with_acks(1));
        let ResponseKind::Produce(response) = producer.call(request, 9).await else {
            panic!("not a Produce response")
        };
        let answer = &response.responses[0].partition_responses[0];
        assert_eq!((answer.error_code, answer.base_offset), (0, n));
    }

    // Broker 1 drains right away, its appends not yet in any object.
    let store = spool_metadata::open(&cluster.metadata).await.unwrap();
    assert!(store.set_draining(1, true).await.unwrap());
    let after = settled(&cluster, 2, "spread", &[1, 2], 6).await;
    let (leader, epoch) = after[usize::try_from(partition).unwrap()];
    assert!(leader == 2 && epoch > leaders[usize::try_from(partition).unwrap()].1);
    assert_eq!(
        values(&cluster, 2, partition).await,
        (0..5).map(|n| format!("v{n}")).collect::<Vec<_>>(),
        "everything acknowledged with acks=1 is there on the next leader"
    );
    assert_eq!(produce(&cluster, 2, partition, "after").await, 5);
    for node in [1, 2] {
        cluster.stop(node).await;
    }
}

/// Every (offset, value, delivered) of the topic `delayed`'s partition 0 through
/// `node`, where `delivered` says whether the record came from a delivery batch.
async fn delayed_records(cluster: &Cluster, node: i32) -> Vec<(i64, String, bool)> {
    let mut client = cluster.client(node).await;
    let at = FetchAt {
        partition: 0,
        offset: 0,
        max_bytes: 1 << 20,
    };
    let answer = &client.fetch(12, "delayed", &[at], 0, 0, 1 << 20).await[0];
    assert_eq!(answer.error_code, 0, "fetch from {node}");
    let bytes = answer.records.clone().unwrap_or_default();
    let mut out = Vec::new();
    for frame in spool_protocol::batch::BatchFrames::new(&bytes) {
        let (header, batch) = frame.unwrap();
        if header.is_control() {
            continue;
        }
        let records = spool_protocol::keyed::BatchRecords::read(batch, 1 << 20).unwrap();
        for record in records.records().unwrap() {
            out.push((
                header.base_offset.0 + record.offset_delta,
                String::from_utf8(record.value.unwrap().to_vec()).unwrap(),
                spool_protocol::internal::is_delivery(&header),
            ));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delayed_records_pending_when_their_leader_stops_are_delivered_once_by_the_next() {
    let mut cluster = Cluster::new();
    for node in [1, 2] {
        cluster.start(node).await;
    }
    let mut client = cluster.client(1).await;
    let configs = [("delivery.delay.enable", "true")];
    assert_eq!(client.create_topic_with("delayed", 1, &configs).await, 0);
    let (_, leaders) = leaders_now(&cluster, 1, "delayed").await;
    let started = Instant::now();
    let mut leader = leaders[0];
    while leader < 0 {
        assert!(started.elapsed() < Duration::from_secs(10), "no leader");
        tokio::time::sleep(Duration::from_millis(50)).await;
        leader = leaders_now(&cluster, 1, "delayed").await.1[0];
    }
    let now = spool_model::Timestamp::now().0;
    let due = now + 3_000;
    let mut builder = BatchBuilder::new().timestamp(now);
    for i in 0..20 {
        let mut record = spool_testkit::TestRecord::value(format!("later-{i}").into_bytes());
        record.headers.push((
            "spool.deliver-at".to_owned(),
            Some(due.to_string().into_bytes()),
        ));
        builder = builder.record(record);
    }
    let mut on_leader = cluster.client(leader).await;
    assert_eq!(on_leader.produce("delayed", 0, builder.build()).await.0, 0);
    assert_eq!(on_leader.produce("delayed", 0, batch("now")).await.0, 0);

    // The leader stops with all 20 pending; the other broker takes the partition.
    cluster.stop(leader).await;
    let next = if leader == 1 { 2 } else { 1 };
    let started = Instant::now();
    loop {
        let seen = delayed_records(&cluster, next).await;
        let delivered: Vec<&str> = seen
            .iter()
            .filter(|(_, _, delivered)| *delivered)
            .map(|(_, value, _)| value.as_str())
            .collect();
        if !delivered.is_empty() {
            assert!(
                spool_model::Timestamp::now().0 >= due,
                "delivered before its time"
            );
        }
        if delivered.len() >= 20 {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let again = delayed_records(&cluster, next).await;
            let mut values: Vec<&str> = again
                .iter()
                .filter(|(_, _, delivered)| *delivered)
                .map(|(_, value, _)| value.as_str())
                .collect();
            values.sort_unstable();
            let mut expected: Vec<String> = (0..20).map(|i| format!("later-{i}")).collect();
            expected.sort_unstable();
            assert_eq!(values, expected, "each delayed record once");
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "not delivered after the move: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    cluster.stop(next).await;
}

/// Each broker registers its endpoint on every listener: Metadata asked on a listener
/// names the other brokers at their endpoints on that listener, and leaves out a
/// broker that has no such listener (Kafka's rule), whose partitions then have no
/// leader there.
#[tokio::test]
async fn metadata_names_other_brokers_on_the_listener_asked() {
    let mut cluster = Cluster::new();
    let two_listeners = [
        ("listeners", "PLAINTEXT://127.0.0.1:0,CLIENT://127.0.0.1:0"),
        ("listener.security.protocol.map", "CLIENT:PLAINTEXT"),
    ];
    cluster.start_with(1, &two_listeners).await;
    cluster.start_with(2, &two_listeners).await;
    cluster.start(3).await;
    let client_port = |node: i32| {
        let broker = &cluster.brokers[&node].0;
        i32::from(broker.listener_addr("CLIENT").unwrap().port())
    };
    let plain_port = |node: i32| i32::from(cluster.addr(node).port());

    let mut admin = cluster.client(1).await;
    assert_eq!(admin.create_topic("listeners", 6).await, 0);
    settled(&cluster, 1, "listeners", &[1, 2, 3], 2).await;

    // On PLAINTEXT, every broker at its PLAINTEXT endpoint.
    let response = metadata(&mut admin, "listeners").await;
    let named: Vec<(i32, i32)> = response
        .brokers
        .iter()
        .map(|b| (b.node_id.0, b.port))
        .collect();
    assert_eq!(
        named,
        vec![(1, plain_port(1)), (2, plain_port(2)), (3, plain_port(3))]
    );

    // On CLIENT, brokers 1 and 2 at their CLIENT endpoints; broker 3 has none.
    let addr = cluster.brokers[&1].0.listener_addr("CLIENT").unwrap();
    let mut on_client = RawClient::connect(addr).await;
    let response = metadata(&mut on_client, "listeners").await;
    let named: Vec<(i32, i32)> = response
        .brokers
        .iter()
        .map(|b| (b.node_id.0, b.port))
        .collect();
    assert_eq!(named, vec![(1, client_port(1)), (2, client_port(2))]);
    for partition in &response.topics[0].partitions {
        assert_ne!(partition.leader_id.0, 3, "broker 3 is not on CLIENT");
        if partition.leader_id.0 == -1 {
            assert_eq!(partition.error_code, LEADER_NOT_AVAILABLE);
        }
    }
}
