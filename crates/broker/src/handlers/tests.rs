//! Handlers tested without TCP: a broker built in-process by [`Broker::builder`] over
//! an in-memory log store and metadata store (and, in shared-storage mode, an
//! in-memory object store), its handlers called with decoded requests and their
//! answers read as decoded responses. The wire, the connection and the real clients
//! are the integration tests' and the compat suites'.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_response::PartitionProduceResponse;
use kafka_protocol::messages::{
    BrokerId, CreateTopicsRequest, GroupId, JoinGroupRequest, MetadataRequest, RequestKind,
    ResponseKind,
};
use kafka_protocol::protocol::StrBytes;
use spool_log::{LogError, ReadChunk};
use spool_metadata::SqliteStore;
use spool_objects::ObjectStorage;
use spool_security::session::ANONYMOUS;
use spool_store::MemoryStore;
use spool_testkit::{
    BatchBuilder, FetchAt, fetch_request, list_offsets_request, produce_request, topic_name,
};

use super::api::RequestContext;
use super::{create_topics, fetch, join_group, list_offsets, metadata, produce};
use crate::config::BrokerConfig;
use crate::errors::code;
use crate::partitions::PartitionError;
use crate::server::Broker;
use crate::shared::Shared;

mod share;

/// A broker in this process, with nothing on disk but its data directory's own
/// files (the lock, the store binding, the instance id).
struct InProcess {
    broker: Broker,
    _data: tempfile::TempDir,
}

impl InProcess {
    /// Embedded mode: the logs in memory, the metadata in an in-memory SQLite.
    async fn embedded() -> InProcess {
        InProcess::build(false).await
    }

    /// Shared-storage mode: besides, the partitions' objects in an in-memory object
    /// store, and this broker a cluster of one.
    async fn shared_storage() -> InProcess {
        InProcess::build(true).await
    }

    async fn build(shared_storage: bool) -> InProcess {
        let data = tempfile::tempdir().unwrap();
        let mut config = BrokerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            data_dir: data.path().to_path_buf(),
            ..BrokerConfig::default()
        };
        config.admin.listen = None;
        config.groups.initial_rebalance_delay = Duration::ZERO;
        let metadata = Arc::new(SqliteStore::in_memory().await.unwrap());
        let mut builder = Broker::builder(config)
            .log_store(Arc::new(MemoryStore::new()))
            .metadata(metadata);
        if shared_storage {
            let memory = Arc::new(object_store::memory::InMemory::new());
            builder = builder.objects(ObjectStorage::new(memory, "spool".into()));
        }
        InProcess {
            broker: builder.start().await.unwrap(),
            _data: data,
        }
    }

    fn shared(&self) -> &Arc<Shared> {
        self.broker.shared()
    }

    /// What a request of `version` from an anonymous client on the first listener
    /// comes with.
    fn context(&self, version: i16) -> RequestContext {
        let shared = self.shared();
        RequestContext {
            version,
            client_id: "handler-test".to_owned(),
            client_host: "/127.0.0.1".to_owned(),
            listener: shared.first_listener(),
            connection: 1,
            access: shared
                .authorizer()
                .access(Arc::from(ANONYMOUS), IpAddr::V4(Ipv4Addr::LOCALHOST)),
        }
    }

    async fn create_topic(&self, name: &str, partitions: i32) {
        let request = CreateTopicsRequest::default()
            .with_timeout_ms(10_000)
            .with_topics(vec![
                CreatableTopic::default()
                    .with_name(topic_name(name))
                    .with_num_partitions(partitions)
                    .with_replication_factor(1),
            ]);
        let ResponseKind::CreateTopics(response) =
            create_topics::handle(request, &self.context(5), self.shared()).await
        else {
            panic!("not a CreateTopics response");
        };
        assert_eq!(response.topics[0].error_code, code::NONE);
    }

    /// One produce of `batch` to `topic`'s partition `index` with acks=all, as a
    /// client sends it: again while the partition has no leader yet (a new topic in
    /// shared-storage mode, until the controller assigns it).
    async fn produce(&self, topic: &str, index: i32, batch: &[u8]) -> PartitionProduceResponse {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let RequestKind::Produce(request) = produce_request(topic, index, batch.to_vec())
            else {
                unreachable!("a Produce request")
            };
            let context = self.context(9);
            let appended = produce::append(
                request,
                &context.access,
                &context.listener,
                None,
                self.shared().clone(),
            )
            .await;
            let Some(ResponseKind::Produce(response)) = appended.answer().await else {
                panic!("not a Produce response");
            };
            let partition = response.responses[0].partition_responses[0].clone();
            let retriable = [code::NOT_LEADER_OR_FOLLOWER, code::LEADER_NOT_AVAILABLE];
            if !retriable.contains(&partition.error_code) || Instant::now() > deadline {
                return partition;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn list_offsets(&self, topic: &str, index: i32, timestamp: i64) -> (i16, i64) {
        let request = list_offsets_request(topic, index, timestamp);
        let ResponseKind::ListOffsets(response) =
            list_offsets::handle(request, &self.context(7), self.shared()).await
        else {
            panic!("not a ListOffsets response");
        };
        let partition = &response.topics[0].partitions[0];
        (partition.error_code, partition.offset)
    }
}

/// Metadata names a created topic's partitions with this broker as their leader,
/// and an unknown topic as unknown (nothing is created for it).
#[tokio::test]
async fn metadata_describes_topics_and_refuses_unknown_ones() {
    let broker = InProcess::embedded().await;
    broker.create_topic("described", 3).await;
    let request = MetadataRequest::default()
        .with_allow_auto_topic_creation(false)
        .with_topics(Some(
            ["described", "missing"]
                .into_iter()
                .map(|name| MetadataRequestTopic::default().with_name(Some(topic_name(name))))
                .collect(),
        ));
    let ResponseKind::Metadata(response) =
        metadata::handle(request, &broker.context(12), broker.shared()).await
    else {
        panic!("not a Metadata response");
    };
    let node = broker.shared().started_config().node_id;
    assert_eq!(response.brokers.len(), 1);
    assert_eq!(response.brokers[0].node_id, BrokerId(node));
    let described = &response.topics[0];
    assert_eq!(described.error_code, code::NONE);
    assert_eq!(described.partitions.len(), 3);
    assert!(
        described
            .partitions
            .iter()
            .all(|p| p.error_code == code::NONE && p.leader_id == BrokerId(node))
    );
    assert_eq!(
        response.topics[1].error_code,
        code::UNKNOWN_TOPIC_OR_PARTITION
    );
    assert!(broker.shared().topics().get("missing").is_none());
}

/// Produce appends where the last append ended and answers with the base offset;
/// ListOffsets then tells the end and the start; Fetch returns the batches.
async fn produce_list_offsets_and_fetch(broker: InProcess) {
    broker.create_topic("written", 2).await;
    let batch = BatchBuilder::new().values(3, 10).build();
    let first = broker.produce("written", 1, &batch).await;
    assert_eq!(first.error_code, code::NONE, "{:?}", first.error_message);
    assert_eq!(first.base_offset, 0);
    let second = broker.produce("written", 1, &batch).await;
    assert_eq!(second.error_code, code::NONE);
    assert_eq!(second.base_offset, 3);

    assert_eq!(broker.list_offsets("written", 1, -1).await, (code::NONE, 6));
    assert_eq!(broker.list_offsets("written", 1, -2).await, (code::NONE, 0));
    assert_eq!(broker.list_offsets("written", 0, -1).await, (code::NONE, 0));
    assert_eq!(
        broker.list_offsets("written", 2, -1).await.0,
        code::UNKNOWN_TOPIC_OR_PARTITION
    );

    let at = FetchAt {
        partition: 1,
        offset: 3,
        max_bytes: 1 << 20,
    };
    let RequestKind::Fetch(request) = fetch_request("written", &[at], 1, 0, 1 << 20) else {
        unreachable!("a Fetch request")
    };
    let context = broker.context(12);
    let body = fetch::handle(request, &context, broker.shared().clone()).await;
    let partition = &body.topics[0].partitions[0];
    assert_eq!(partition.error, code::NONE);
    assert_eq!(partition.high_watermark, 6);
    let mut fetched = Vec::new();
    for chunk in &partition.records {
        match chunk {
            ReadChunk::Memory(bytes) => fetched.extend_from_slice(bytes),
            ReadChunk::File { .. } => panic!("an in-memory log read from a file"),
        }
    }
    // The second batch, as written, with its offsets assigned by the broker.
    assert_eq!(fetched.len(), batch.len());
    let header =
        spool_protocol::batch::validate_batch(&fetched, spool_protocol::batch::BatchRules::Stored)
            .unwrap();
    assert_eq!(header.base_offset.0, 3);
    assert_eq!(header.last_offset_delta, 2);
}

#[tokio::test]
async fn produce_list_offsets_and_fetch_embedded() {
    let broker = InProcess::embedded().await;
    assert!(broker.shared().storage().is_none());
    produce_list_offsets_and_fetch(broker).await;
}

#[tokio::test]
async fn produce_list_offsets_and_fetch_over_shared_storage() {
    let broker = InProcess::shared_storage().await;
    assert!(broker.shared().storage().is_some() && broker.shared().cluster().is_some());
    produce_list_offsets_and_fetch(broker).await;
}

/// Produce refuses a corrupt batch (one byte of a record changed: the CRC no longer
/// matches) and appends nothing of it.
#[tokio::test]
async fn produce_refuses_a_corrupt_batch() {
    let broker = InProcess::embedded().await;
    broker.create_topic("guarded", 1).await;
    let mut batch = BatchBuilder::new().values(2, 10).build();
    let last = batch.len() - 1;
    batch[last] ^= 0xff;
    let refused = broker.produce("guarded", 0, &batch).await;
    assert_eq!(refused.error_code, code::CORRUPT_MESSAGE);
    assert_eq!(broker.list_offsets("guarded", 0, -1).await, (code::NONE, 0));
}

/// JoinGroup (v4+) asks a new member to join again with the id it hands out; the
/// member then leads the group's first generation.
#[tokio::test]
async fn join_group_hands_out_a_member_id_then_a_generation() {
    let broker = InProcess::embedded().await;
    let join = |member_id: &str| {
        JoinGroupRequest::default()
            .with_group_id(GroupId(StrBytes::from_static_str("joined")))
            .with_session_timeout_ms(10_000)
            .with_rebalance_timeout_ms(10_000)
            .with_member_id(StrBytes::from_string(member_id.to_owned()))
            .with_protocol_type(StrBytes::from_static_str("consumer"))
            .with_protocols(vec![
                JoinGroupRequestProtocol::default()
                    .with_name(StrBytes::from_static_str("range"))
                    .with_metadata(Bytes::from_static(b"subscription")),
            ])
    };
    let ResponseKind::JoinGroup(first) =
        join_group::handle(join(""), &broker.context(5), broker.shared()).await
    else {
        panic!("not a JoinGroup response");
    };
    assert_eq!(first.error_code, code::MEMBER_ID_REQUIRED);
    let member_id = first.member_id.to_string();
    assert!(member_id.starts_with("handler-test-"), "{member_id}");

    let ResponseKind::JoinGroup(joined) =
        join_group::handle(join(&member_id), &broker.context(5), broker.shared()).await
    else {
        panic!("not a JoinGroup response");
    };
    assert_eq!(joined.error_code, code::NONE);
    assert_eq!(joined.generation_id, 1);
    assert_eq!(joined.leader.to_string(), member_id);
    assert_eq!(
        joined.protocol_name.map(|p| p.to_string()).as_deref(),
        Some("range")
    );
    assert_eq!(joined.members.len(), 1);
}

/// Shared-storage mode, all on one thread (a current-thread runtime): a handover
/// begun while a tail opens waits for the opening without blocking the thread that
/// the opening's catalogue reads need, and seals the tail just opened. While a
/// partition without a tail is handed over, none opens for it, and a request is told
/// why; after, one opens again.
#[tokio::test]
async fn a_handover_waits_for_a_tail_being_opened_on_one_thread() {
    let broker = InProcess::shared_storage().await;
    broker.create_topic("handed", 2).await;
    let shared = broker.shared();
    let topic = shared.topics().get("handed").unwrap();
    let partitions = shared.partitions();
    // The controller assigns the new topic's partitions.
    let deadline = Instant::now() + Duration::from_secs(10);
    let epochs = loop {
        if let (Some(first), Some(second)) = (
            partitions.led_epoch(&topic, 0),
            partitions.led_epoch(&topic, 1),
        ) {
            break [first, second];
        }
        assert!(Instant::now() < deadline, "no leader for the new topic");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let storage = shared.storage().unwrap();

    let first = topic.log_partition(0).unwrap();
    let (opened, handover) = tokio::join!(
        partitions.open(topic.clone(), 0, -1),
        storage.begin_handover(shared.logs(), &first, epochs[0]),
    );
    let opened = opened.unwrap();
    let sealed = handover.unwrap().tail.expect("the tail opened meanwhile");
    assert!(Arc::ptr_eq(&opened.log, &sealed));
    let batch = BatchBuilder::new().values(1, 10).build();
    let refused = sealed.append(&[&batch]).unwrap_err();
    assert!(matches!(refused, LogError::NotLeader { .. }), "{refused}");

    let second = topic.log_partition(1).unwrap();
    assert!(
        storage
            .tail(shared.logs(), &second, topic.partition_key(1), epochs[1])
            .is_none()
    );
    let handover = storage
        .begin_handover(shared.logs(), &second, epochs[1])
        .await;
    assert!(handover.unwrap().tail.is_none());
    partitions.open_tails([(topic.clone(), 1)]).await;
    let why = partitions.partition_of(topic.clone(), 1, -1).unwrap_err();
    assert!(
        matches!(&why, PartitionError::OpenFailed(failure) if matches!(**failure, PartitionError::NotLeader)),
        "{why}"
    );
    assert_eq!(
        broker.list_offsets("handed", 1, -1).await.0,
        code::NOT_LEADER_OR_FOLLOWER
    );
    storage.end_handover(&second);
    assert_eq!(broker.list_offsets("handed", 1, -1).await, (code::NONE, 0));
    assert!(partitions.partition_of(topic.clone(), 1, -1).is_ok());
}
