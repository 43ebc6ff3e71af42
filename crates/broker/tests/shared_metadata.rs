//! Two brokers sharing one metadata store: topics created, altered and deleted through
//! one reach the other's topic table within a second. Runs on a shared SQLite file,
//! and on PostgreSQL when `SPOOL_TEST_POSTGRES_URL` names a server (`scripts/test`
//! starts one).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{MetadataRequest, RequestKind, ResponseKind};
use spool_broker::{Broker, BrokerConfig, MetadataUrl};
use spool_testkit::{RawClient, topic_name};
use sqlx::Connection;

/// The partition count the broker reports for `topic` (0: unknown).
async fn partitions(client: &mut RawClient, topic: &str) -> usize {
    let request = MetadataRequest::default()
        .with_allow_auto_topic_creation(false)
        .with_topics(Some(vec![
            MetadataRequestTopic::default().with_name(Some(topic_name(topic))),
        ]));
    let ResponseKind::Metadata(response) = client.call(RequestKind::Metadata(request), 9).await
    else {
        panic!("not a Metadata response")
    };
    let topic = &response.topics[0];
    if topic.error_code == 0 {
        topic.partitions.len()
    } else {
        0
    }
}

/// Waits (up to a generous deadline) until `client` reports `want` partitions for
/// `topic`; returns how long that took.
async fn until_partitions(client: &mut RawClient, topic: &str, want: usize) -> Duration {
    let started = Instant::now();
    while partitions(client, topic).await != want {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{topic} never had {want} partitions"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    started.elapsed()
}

async fn start(data: &std::path::Path, url: &MetadataUrl) -> Broker {
    let config = BrokerConfig {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        data_dir: data.to_path_buf(),
        metadata_url: Some(url.clone()),
        ..BrokerConfig::default()
    };
    Broker::builder(config).start().await.unwrap()
}

async fn metadata_urls(shared: &std::path::Path) -> Vec<MetadataUrl> {
    let mut urls = vec![MetadataUrl::Sqlite(shared.join("shared.db"))];
    if let Ok(server) = std::env::var("SPOOL_TEST_POSTGRES_URL") {
        let name = format!("shared_metadata_{}", std::process::id());
        let mut connection = sqlx::PgConnection::connect(&server).await.unwrap();
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut connection)
            .await
            .unwrap();
        let (base, _) = server.rsplit_once('/').unwrap();
        urls.push(MetadataUrl::Postgres(format!("{base}/{name}")));
    }
    urls
}

#[tokio::test]
async fn topic_changes_through_one_broker_reach_the_other_within_a_second() {
    let dirs = tempfile::tempdir().unwrap();
    for (n, url) in metadata_urls(dirs.path()).await.into_iter().enumerate() {
        let label = url.redacted();
        let one = start(&dirs.path().join(format!("one-{n}")), &url).await;
        let other = start(&dirs.path().join(format!("other-{n}")), &url).await;
        let mut to_one = RawClient::connect(one.local_addr()).await;
        let mut to_other = RawClient::connect(other.local_addr()).await;

        assert_eq!(to_one.create_topic("shared", 2).await, 0, "{label}");
        let seen = until_partitions(&mut to_other, "shared", 2).await;
        assert!(
            seen < Duration::from_secs(1),
            "{label}: created, seen after {seen:?}"
        );
        assert_eq!(
            to_other.create_topic("shared", 2).await,
            36,
            "{label}: TOPIC_ALREADY_EXISTS through the other broker"
        );

        // Grown through the other broker, seen by the first.
        let request = kafka_protocol::messages::CreatePartitionsRequest::default()
            .with_timeout_ms(5000)
            .with_topics(vec![
                kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic::default()
                    .with_name(topic_name("shared"))
                    .with_count(3),
            ]);
        let ResponseKind::CreatePartitions(response) = to_other
            .call(RequestKind::CreatePartitions(request), 1)
            .await
        else {
            panic!("not a CreatePartitions response")
        };
        assert_eq!(response.results[0].error_code, 0, "{label}");
        let seen = until_partitions(&mut to_one, "shared", 3).await;
        assert!(
            seen < Duration::from_secs(1),
            "{label}: grown, seen after {seen:?}"
        );

        let request = kafka_protocol::messages::DeleteTopicsRequest::default()
            .with_timeout_ms(5000)
            .with_topic_names(vec![topic_name("shared")]);
        let ResponseKind::DeleteTopics(response) =
            to_one.call(RequestKind::DeleteTopics(request), 4).await
        else {
            panic!("not a DeleteTopics response")
        };
        assert_eq!(response.responses[0].error_code, 0, "{label}");
        let seen = until_partitions(&mut to_other, "shared", 0).await;
        assert!(
            seen < Duration::from_secs(1),
            "{label}: deleted, seen after {seen:?}"
        );

        one.shutdown().await.unwrap();
        other.shutdown().await.unwrap();
    }
}
