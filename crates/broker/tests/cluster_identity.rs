//! Who may join a cluster as which node (issue 32): a broker restarting from its own
//! data directory takes its node id back at once; another process claiming a live
//! node id (another data directory) is refused with a message and the live broker
//! keeps serving; a broker given another object store than the cluster's is refused.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::messages::{MetadataRequest, RequestKind, ResponseKind};
use object_store::memory::InMemory;
use spool_broker::{Broker, BrokerConfig, BrokerError, MetadataUrl, ObjectStorage, StorageUrl};
use spool_testkit::RawClient;

/// A test's shared metadata store and object store, and the brokers' lease.
struct Stores {
    objects: Arc<InMemory>,
    metadata: MetadataUrl,
    lease_ms: &'static str,
    _dir: tempfile::TempDir,
}

impl Stores {
    /// Stores for brokers with a lease of 1 s.
    fn new() -> Stores {
        Stores::with_lease("1000")
    }

    fn with_lease(lease_ms: &'static str) -> Stores {
        let dir = tempfile::tempdir().unwrap();
        Stores {
            objects: Arc::new(InMemory::new()),
            metadata: MetadataUrl::Sqlite(dir.path().join("catalogue.db")),
            lease_ms,
            _dir: dir,
        }
    }

    /// Starts node `node_id` on `data_dir`, its object storage named `storage_url`.
    async fn start(
        &self,
        node_id: i32,
        data_dir: &Path,
        storage_url: &str,
    ) -> Result<Broker, BrokerError> {
        let mut config = BrokerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            data_dir: data_dir.to_path_buf(),
            metadata_url: Some(self.metadata.clone()),
            node_id,
            ..BrokerConfig::default()
        };
        config.storage.url = Some(StorageUrl::parse(storage_url).unwrap());
        for (name, value) in [
            ("storage.flush.ms", "5"),
            ("cluster.lease.ms", self.lease_ms),
            ("cluster.heartbeat.ms", "100"),
        ] {
            config.set(name, value).unwrap();
        }
        let objects = ObjectStorage::new(self.objects.clone(), "spool".into());
        Broker::builder(config).objects(objects).start().await
    }
}

/// The node ids broker `addr` names in Metadata.
async fn brokers_named(addr: SocketAddr) -> Vec<i32> {
    let mut client = RawClient::connect(addr).await;
    let request = MetadataRequest::default().with_topics(Some(Vec::new()));
    let ResponseKind::Metadata(response) = client.call(RequestKind::Metadata(request), 12).await
    else {
        panic!("not a Metadata response")
    };
    response.brokers.iter().map(|b| b.node_id.0).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_process_may_not_take_a_live_node_id() {
    let stores = Stores::new();
    let first_dir = tempfile::tempdir().unwrap();
    let first = stores
        .start(1, first_dir.path(), "s3://bucket/spool")
        .await
        .unwrap();

    let other_dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let refused = stores
        .start(1, other_dir.path(), "s3://bucket/spool")
        .await
        .expect_err("a duplicate node id is refused");
    let message = refused.to_string();
    assert!(
        message.contains("node id 1 is held by a live broker")
            && message.contains(&first.local_addr().port().to_string()),
        "{message}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "refused after a lease or so, not hanging: {:?}",
        started.elapsed()
    );
    // The live broker was not replaced: it still renews and names itself.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(brokers_named(first.local_addr()).await, [1]);
    first.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restart_from_the_same_data_directory_takes_the_node_id_back_at_once() {
    // A long lease: waiting for it would take 30 s and more.
    let stores = Stores::with_lease("30000");
    let dir = tempfile::tempdir().unwrap();
    let crashed = stores
        .start(1, dir.path(), "s3://bucket/spool")
        .await
        .unwrap();
    // A crash: the process is gone without deregistering, its lease still live.
    drop(crashed);
    let started = Instant::now();
    let restarted = stores
        .start(1, dir.path(), "s3://bucket/spool")
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "no wait for the old lease (30 s) to lapse: {:?}",
        started.elapsed()
    );
    assert_eq!(brokers_named(restarted.local_addr()).await, [1]);
    restarted.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dead_brokers_node_id_is_taken_once_its_lease_lapses() {
    let stores = Stores::new();
    let dir = tempfile::tempdir().unwrap();
    let crashed = stores
        .start(1, dir.path(), "s3://bucket/spool")
        .await
        .unwrap();
    drop(crashed);
    // Its machine is replaced: an empty data directory under the same node id.
    let replacement_dir = tempfile::tempdir().unwrap();
    let replacement = stores
        .start(1, replacement_dir.path(), "s3://bucket/spool")
        .await
        .expect("the lapsed lease is taken over");
    assert_eq!(brokers_named(replacement.local_addr()).await, [1]);
    replacement.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broker_with_another_object_store_is_refused() {
    let stores = Stores::new();
    let first_dir = tempfile::tempdir().unwrap();
    let first = stores
        .start(1, first_dir.path(), "s3://bucket/spool")
        .await
        .unwrap();
    let other_dir = tempfile::tempdir().unwrap();
    let refused = stores
        .start(2, other_dir.path(), "s3://bucket/other-prefix")
        .await
        .expect_err("another object store is refused");
    let message = refused.to_string();
    assert!(
        message.contains("s3://bucket/spool") && message.contains("s3://bucket/other-prefix"),
        "{message}"
    );
    assert_eq!(brokers_named(first.local_addr()).await, [1]);
    first.shutdown().await.unwrap();
}
