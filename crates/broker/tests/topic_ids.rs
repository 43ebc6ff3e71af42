//! Topics are their ids: partition data lives in `topics/<id>/`, and committed offsets
//! go with the topic. A delete cut short by a crash (the metadata delete committed, the
//! data directory still there) is finished at the next start, so a topic created again
//! under the same name is empty, starts at offset 0, and no group sees old offsets for
//! it. A data directory from before topic ids (`topics/<name>/`) is moved, not lost.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::{
    GroupId, OffsetCommitRequest, OffsetFetchRequest, RequestKind, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;
use spool_testkit::{BatchBuilder, FetchAt, RawClient, TestBroker, topic_name};

fn group() -> GroupId {
    GroupId(StrBytes::from_static_str("readers"))
}

async fn commit(client: &mut RawClient, topic: &str, offset: i64) -> i16 {
    let request = OffsetCommitRequest::default()
        .with_group_id(group())
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![
            OffsetCommitRequestTopic::default()
                .with_name(topic_name(topic))
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

async fn committed(client: &mut RawClient, topic: &str) -> i64 {
    let request = OffsetFetchRequest::default()
        .with_group_id(group())
        .with_topics(Some(vec![
            OffsetFetchRequestTopic::default()
                .with_name(topic_name(topic))
                .with_partition_indexes(vec![0]),
        ]));
    let ResponseKind::OffsetFetch(response) =
        client.call(RequestKind::OffsetFetch(request), 3).await
    else {
        panic!("not an OffsetFetch response")
    };
    response.topics[0].partitions[0].committed_offset
}

/// The values fetched from partition 0, from offset 0.
async fn values(client: &mut RawClient, topic: &str) -> usize {
    let at = FetchAt {
        partition: 0,
        offset: 0,
        max_bytes: 1 << 20,
    };
    let partitions = client.fetch(11, topic, &[at], 0, 0, 1 << 20).await;
    let records = partitions[0].records.clone().unwrap_or_default();
    let mut count = 0;
    let mut rest = &records[..];
    while rest.len() >= 61 {
        count += usize::try_from(i32::from_be_bytes(rest[57..61].try_into().unwrap())).unwrap();
        let length = usize::try_from(i32::from_be_bytes(rest[8..12].try_into().unwrap())).unwrap();
        rest = &rest[12 + length..];
    }
    count
}

fn topic_dirs(data: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(data.join("topics"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    dirs.sort();
    dirs
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[tokio::test]
async fn a_delete_cut_short_is_finished_at_the_next_start_and_a_recreated_topic_starts_empty() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("orders", 2).await, 0);
    let batch = BatchBuilder::new().values(5, 10).build();
    assert_eq!(client.produce("orders", 0, batch).await, (0, 0));
    assert_eq!(commit(&mut client, "orders", 4).await, 0);
    assert_eq!(committed(&mut client, "orders").await, 4);
    let dirs = topic_dirs(broker.data_dir());
    assert_eq!(
        dirs.len(),
        1,
        "one directory, named by the topic's id: {dirs:?}"
    );
    let old = dirs[0].clone();
    let name = old.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.len() == 32 && name.chars().all(|c| c.is_ascii_hexdigit()),
        "{name}"
    );

    // What a crash right after the metadata delete leaves: the data still there.
    let aside = tempfile::tempdir().unwrap();
    copy_dir(&old, aside.path());
    assert_eq!(client.delete_topic("orders").await, 0);
    assert!(!old.exists());
    let data = broker.stop().await;
    copy_dir(aside.path(), &old);

    let broker = TestBroker::start_in(data).await;
    assert!(!old.exists(), "data that no topic owns is removed at start");
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("orders", 2).await, 0);
    assert_ne!(topic_dirs(broker.data_dir()), vec![old], "a new id");
    assert_eq!(
        values(&mut client, "orders").await,
        0,
        "the new topic is empty"
    );
    assert_eq!(committed(&mut client, "orders").await, -1, "no old offsets");
    let batch = BatchBuilder::new().values(1, 10).build();
    assert_eq!(
        client.produce("orders", 0, batch).await,
        (0, 0),
        "and starts at offset 0"
    );
    assert_eq!(values(&mut client, "orders").await, 1);
    drop(broker);
}

#[tokio::test]
async fn a_data_directory_keyed_by_topic_name_is_moved_to_topic_ids() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("legacy", 1).await, 0);
    let batch = BatchBuilder::new().values(3, 10).build();
    assert_eq!(client.produce("legacy", 0, batch).await, (0, 0));
    let by_id = topic_dirs(broker.data_dir())[0].clone();
    let data = broker.stop().await;
    // The layout of the versions before topic ids.
    let by_name = data.path().join("topics").join("legacy");
    std::fs::rename(&by_id, &by_name).unwrap();

    let broker = TestBroker::start_in(data).await;
    let mut client = broker.client().await;
    assert_eq!(values(&mut client, "legacy").await, 3, "nothing lost");
    assert!(by_id.exists() && !by_name.exists());
    drop(broker);
}

/// The same with the machine crashing: the topic's directory removal never reached
/// the disk (its parent directory's sync failed), so after the crash the old data is
/// back, owned by no topic.
#[tokio::test]
async fn a_delete_cut_short_by_a_machine_crash_is_finished_at_the_next_start() {
    use spool_broker::{Broker, BrokerConfig};
    use spool_store::{CrashMode, FaultyStore};
    use std::sync::Arc;

    let data = tempfile::tempdir().unwrap();
    let config = BrokerConfig {
        listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        data_dir: data.path().to_path_buf(),
        ..BrokerConfig::default()
    };
    let store = FaultyStore::new(7);
    let broker = Broker::builder(config.clone())
        .log_store(Arc::new(store.clone()))
        .start()
        .await
        .unwrap();
    let mut client = RawClient::connect(broker.local_addr()).await;
    assert_eq!(client.create_topic("orders", 2).await, 0);
    let batch = BatchBuilder::new().values(5, 10).build();
    assert_eq!(client.produce("orders", 0, batch).await, (0, 0));
    assert_eq!(commit(&mut client, "orders", 4).await, 0);

    store.fail_after(0);
    assert_eq!(
        client.delete_topic("orders").await,
        0,
        "deleted for clients: the metadata store says so"
    );
    drop(client);
    let _ = broker.shutdown().await;
    store.crash(CrashMode::DropUnsynced);
    let topics = spool_store::Store::list_dir(&store, std::path::Path::new("topics")).unwrap();
    assert_eq!(topics.len(), 1, "the crash brought the old directory back");

    let broker = Broker::builder(config)
        .log_store(Arc::new(store.clone()))
        .start()
        .await
        .unwrap();
    let topics = spool_store::Store::list_dir(&store, std::path::Path::new("topics")).unwrap();
    assert!(topics.is_empty(), "removed at start: {topics:?}");
    let mut client = RawClient::connect(broker.local_addr()).await;
    assert_eq!(client.create_topic("orders", 2).await, 0);
    assert_eq!(
        values(&mut client, "orders").await,
        0,
        "the new topic is empty"
    );
    assert_eq!(committed(&mut client, "orders").await, -1, "no old offsets");
    let batch = BatchBuilder::new().values(1, 10).build();
    assert_eq!(client.produce("orders", 0, batch).await, (0, 0));
    broker.shutdown().await.unwrap();
}

/// A data directory records its metadata store: started with another store (a
/// mistyped `--metadata-url`, a switch of backend), the broker refuses to start instead
/// of taking every topic's data for data that no topic owns.
#[tokio::test]
async fn a_data_directory_refuses_another_metadata_store_and_loses_nothing() {
    use spool_broker::{Broker, BrokerConfig, BrokerError, MetadataUrl};

    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("kept", 1).await, 0);
    let batch = BatchBuilder::new().values(3, 10).build();
    assert_eq!(client.produce("kept", 0, batch).await, (0, 0));
    let data = broker.stop().await;

    let elsewhere = tempfile::tempdir().unwrap();
    let config = BrokerConfig {
        listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        data_dir: data.path().to_path_buf(),
        metadata_url: Some(MetadataUrl::Sqlite(elsewhere.path().join("other.db"))),
        ..BrokerConfig::default()
    };
    match Broker::builder(config).start().await {
        Err(error @ BrokerError::WrongMetadataStore { .. }) => {
            let message = error.to_string();
            assert!(
                message.contains(&data.path().display().to_string()),
                "{message}"
            );
        }
        other => panic!("started on another store: {other:?}"),
    }

    let broker = TestBroker::start_in(data).await;
    let mut client = broker.client().await;
    assert_eq!(values(&mut client, "kept").await, 3, "nothing removed");
    drop(broker);
}
