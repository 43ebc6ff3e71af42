//! Writes the seed corpus (`fuzz/corpus/<target>/`): a well-formed request for every
//! API key Spool decodes at every version, record batches of several shapes, and
//! segment files (with and without the checkpoint a clean shutdown leaves), and the
//! first messages of each SASL mechanism.
//!
//! `cargo run --manifest-path fuzz/Cargo.toml --bin seeds`; the output is committed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    AlterConfigsRequest, ApiKey, ApiVersionsRequest, CreatePartitionsRequest, CreateTopicsRequest,
    DeleteGroupsRequest, DeleteRecordsRequest, DeleteTopicsRequest, DescribeConfigsRequest,
    DescribeGroupsRequest, FetchRequest, FindCoordinatorRequest, HeartbeatRequest,
    IncrementalAlterConfigsRequest, InitProducerIdRequest, JoinGroupRequest, LeaveGroupRequest,
    ListGroupsRequest, ListOffsetsRequest, MetadataRequest, OffsetCommitRequest,
    OffsetDeleteRequest, OffsetFetchRequest, ProduceRequest, RequestHeader, RequestKind,
    SyncGroupRequest, TopicName,
};
use kafka_protocol::protocol::{Encodable, StrBytes};
use spool_log::{LogManager, ManagerConfig};
use spool_model::{TopicName as LogTopic, TopicPartition};
use spool_store::{MemoryStore, OpenMode, Store};
use spool_testkit::{BatchBuilder, TestRecord};

fn main() -> std::io::Result<()> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let batches = sample_batches();
    write_all(&root.join("request_decoding"), &request_seeds(&batches[1]))?;
    write_all(&root.join("batch_validation"), &batches)?;
    write_all(&root.join("log_recovery"), &log_seeds())?;
    write_all(&root.join("sasl_exchange"), &sasl_seeds())?;
    Ok(())
}

fn write_all(dir: &Path, seeds: &[Vec<u8>]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (i, seed) in seeds.iter().enumerate() {
        std::fs::write(dir.join(format!("seed-{i:04}")), seed)?;
    }
    println!("{}: {} seeds", dir.display(), seeds.len());
    Ok(())
}

/// Batches of several shapes: one small record, several records with keys and headers,
/// an idempotent producer's, one marked as compressed.
fn sample_batches() -> Vec<Vec<u8>> {
    let keyed = TestRecord {
        key: Some(b"key".to_vec()),
        value: Some(b"value".to_vec()),
        headers: vec![
            ("h".to_owned(), Some(b"v".to_vec())),
            ("n".to_owned(), None),
        ],
        timestamp_delta: 5,
    };
    vec![
        BatchBuilder::new()
            .record(TestRecord::value("hello"))
            .build(),
        BatchBuilder::new()
            .timestamp(1_700_000_000_000)
            .record(keyed.clone())
            .record(keyed)
            .values(3, 20)
            .build(),
        BatchBuilder::new().producer(7, 0, 0).values(5, 10).build(),
        BatchBuilder::new().attributes(1).values(2, 8).build(),
    ]
}

/// A default request of every API Spool decodes, at every version kafka-protocol knows,
/// plus a Produce request carrying a real batch.
fn request_seeds(batch: &[u8]) -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    for (key, request) in default_requests() {
        let versions = key.valid_versions();
        for version in versions.min..=versions.max {
            if let Some(frame) = encode(key, version, &request) {
                seeds.push(frame);
            }
        }
    }
    let produce = RequestKind::Produce(
        ProduceRequest::default()
            .with_acks(-1)
            .with_timeout_ms(5000)
            .with_topic_data(vec![
                TopicProduceData::default()
                    .with_name(TopicName(StrBytes::from_static_str("events")))
                    .with_partition_data(vec![
                        PartitionProduceData::default()
                            .with_index(0)
                            .with_records(Some(Bytes::copy_from_slice(batch))),
                    ]),
            ]),
    );
    for version in 3..=9 {
        seeds.extend(encode(ApiKey::Produce, version, &produce));
    }
    seeds
}

fn default_requests() -> Vec<(ApiKey, RequestKind)> {
    use RequestKind as R;
    vec![
        (ApiKey::Produce, R::Produce(ProduceRequest::default())),
        (ApiKey::Fetch, R::Fetch(FetchRequest::default())),
        (
            ApiKey::ListOffsets,
            R::ListOffsets(ListOffsetsRequest::default()),
        ),
        (ApiKey::Metadata, R::Metadata(MetadataRequest::default())),
        (
            ApiKey::ApiVersions,
            R::ApiVersions(ApiVersionsRequest::default()),
        ),
        (
            ApiKey::CreateTopics,
            R::CreateTopics(CreateTopicsRequest::default()),
        ),
        (
            ApiKey::DeleteTopics,
            R::DeleteTopics(DeleteTopicsRequest::default()),
        ),
        (
            ApiKey::DeleteRecords,
            R::DeleteRecords(DeleteRecordsRequest::default()),
        ),
        (
            ApiKey::DescribeConfigs,
            R::DescribeConfigs(DescribeConfigsRequest::default()),
        ),
        (
            ApiKey::AlterConfigs,
            R::AlterConfigs(AlterConfigsRequest::default()),
        ),
        (
            ApiKey::IncrementalAlterConfigs,
            R::IncrementalAlterConfigs(IncrementalAlterConfigsRequest::default()),
        ),
        (
            ApiKey::CreatePartitions,
            R::CreatePartitions(CreatePartitionsRequest::default()),
        ),
        (
            ApiKey::OffsetCommit,
            R::OffsetCommit(OffsetCommitRequest::default()),
        ),
        (
            ApiKey::OffsetFetch,
            R::OffsetFetch(OffsetFetchRequest::default()),
        ),
        (
            ApiKey::FindCoordinator,
            R::FindCoordinator(FindCoordinatorRequest::default()),
        ),
        (ApiKey::JoinGroup, R::JoinGroup(JoinGroupRequest::default())),
        (ApiKey::Heartbeat, R::Heartbeat(HeartbeatRequest::default())),
        (
            ApiKey::LeaveGroup,
            R::LeaveGroup(LeaveGroupRequest::default()),
        ),
        (ApiKey::SyncGroup, R::SyncGroup(SyncGroupRequest::default())),
        (
            ApiKey::DescribeGroups,
            R::DescribeGroups(DescribeGroupsRequest::default()),
        ),
        (
            ApiKey::ListGroups,
            R::ListGroups(ListGroupsRequest::default()),
        ),
        (
            ApiKey::DeleteGroups,
            R::DeleteGroups(DeleteGroupsRequest::default()),
        ),
        (
            ApiKey::OffsetDelete,
            R::OffsetDelete(OffsetDeleteRequest::default()),
        ),
        (
            ApiKey::InitProducerId,
            R::InitProducerId(InitProducerIdRequest::default()),
        ),
    ]
}

/// A request frame without its length prefix; `None` where the default request cannot
/// be encoded at that version.
fn encode(key: ApiKey, version: i16, request: &RequestKind) -> Option<Vec<u8>> {
    let header = RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(version)
        .with_correlation_id(1)
        .with_client_id(Some(StrBytes::from_static_str("seed")));
    let mut frame = BytesMut::new();
    header
        .encode(&mut frame, key.request_header_version(version))
        .ok()?;
    request.encode(&mut frame, version).ok()?;
    Some(frame.to_vec())
}

/// Segment files: three batches; the same torn in the last batch; and the state a
/// clean shutdown leaves, checkpoint included (length-prefixed, as the target reads it).
fn log_seeds() -> Vec<Vec<u8>> {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let partition =
        TopicPartition::new(LogTopic::new("seed").unwrap_or_else(|_| unreachable!()), 0);
    let manager = LogManager::open(store.clone(), ManagerConfig::default()).ok();
    let log = manager
        .as_ref()
        .and_then(|m| m.create_partition(&partition).ok());
    let Some((manager, log)) = manager.zip(log) else {
        return Vec::new();
    };
    for batch in sample_batches() {
        let _ = log.append(&[&batch]);
    }
    let dir = log.dir().to_path_buf();
    drop(log);
    let _ = manager.shutdown();
    let read = |name: &str| -> Vec<u8> {
        let Ok(file) = store.open(&dir.join(name), OpenMode::Read) else {
            return Vec::new();
        };
        let len = file.len().unwrap_or(0);
        let mut bytes = vec![0; usize::try_from(len).unwrap_or(0)];
        let _ = file.read_exact_at(&mut bytes, 0);
        bytes
    };
    let segment_name = store
        .list_dir(&dir)
        .ok()
        .and_then(|entries| entries.into_iter().find(|e| e.name.ends_with(".log")))
        .map(|e| e.name)
        .unwrap_or_default();
    let segment = read(&segment_name);
    let checkpoint = read("checkpoint");
    let no_checkpoint = |bytes: &[u8]| [&[0, 0][..], bytes].concat();
    let torn = segment
        .get(..segment.len().saturating_sub(7))
        .unwrap_or_default();
    let checkpoint_len = u16::try_from(checkpoint.len()).unwrap_or(0).to_be_bytes();
    vec![
        no_checkpoint(&segment),
        no_checkpoint(torn),
        [&checkpoint_len[..], &checkpoint, &segment].concat(),
    ]
}

/// A mode byte (0 PLAIN, 1 SCRAM, 2 OAUTHBEARER), then what a client sends.
fn sasl_seeds() -> Vec<Vec<u8>> {
    let now = spool_testkit::tokens::unix_seconds();
    let unsecured = spool_testkit::tokens::unsecured_token(
        &serde_json::json!({"sub": "alice", "iat": now, "exp": now + 3600}),
    );
    let signed = spool_testkit::tokens::SigningKey::ec("seed")
        .sign(&serde_json::json!({"sub": "alice", "exp": now + 3600, "aud": "spool"}));
    let mut seeds = vec![
        [&[0_u8][..], b"\0alice\0alice-secret"].concat(),
        [&[0_u8][..], b"alice\0alice\0alice-secret"].concat(),
        [&[1_u8][..], b"n,,n=alice,r=rOprNGfwEbeRWgbNEkqO"].concat(),
        [
            &[1_u8][..],
            b"n,a=alice,n=alice,r=abc\0c=biwsYT1hbGljZSw=,r=abcdef,p=dGhpcyBpcyBub3QgYSBwcm9vZg==",
        ]
        .concat(),
    ];
    for token in [unsecured, signed] {
        let response = spool_testkit::tokens::oauthbearer_response(&token);
        seeds.push([&[2_u8][..], &response].concat());
    }
    seeds.push(
        [
            &[2_u8][..],
            b"n,a=alice,\x01auth=Bearer x.y.\x01traceId=1\x01\x01",
        ]
        .concat(),
    );
    seeds
}
