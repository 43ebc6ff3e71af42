//! One conformance suite over `dyn MetadataStore`, run against every backend: SQLite
//! in a temp dir, and PostgreSQL when `SPOOL_TEST_POSTGRES_URL` names a server
//! (`scripts/test` starts a throwaway one and sets it; each test gets a database of
//! its own). Without it the PostgreSQL half is skipped with a line on stderr, unless
//! `SPOOL_REQUIRE_POSTGRES=1` (set by `scripts/test`), which makes that a failure.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    unreachable_pub
)]

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use spool_metadata::{
    CommittedOffset, ConfigChange, MetadataError, MetadataStore, MetadataUrl, TopicRecord,
};
use spool_model::TopicName;
use uuid::Uuid;

fn topic(name: &str, partitions: i32) -> TopicRecord {
    TopicRecord {
        name: TopicName::new(name).unwrap(),
        id: Uuid::new_v4(),
        partitions,
        replication_factor: 1,
        replica_assignment: Vec::new(),
        configs: BTreeMap::from([("retention.ms".to_owned(), "1000".to_owned())]),
    }
}

fn set(key: &str, value: &str) -> ConfigChange {
    ConfigChange::Set {
        key: key.to_owned(),
        value: value.to_owned(),
    }
}

fn offset(group: &str, topic: &TopicRecord, partition: i32, at: i64) -> CommittedOffset {
    CommittedOffset {
        group: group.to_owned(),
        topic: topic.name.to_string(),
        topic_id: topic.id,
        partition,
        offset: at,
        leader_epoch: -1,
        metadata: Some(format!("at {at}")),
        commit_ms: 1000 + at,
    }
}

async fn sorted_offsets(store: &dyn MetadataStore) -> Vec<CommittedOffset> {
    let mut offsets = store.committed_offsets().await.unwrap();
    offsets
        .sort_by(|x, y| (&x.group, &x.topic, x.partition).cmp(&(&y.group, &y.topic, y.partition)));
    offsets
}

#[tokio::test]
async fn topics_are_created_grown_altered_and_deleted_by_id() {
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        // A replication factor is kept as created (shared storage names that many
        // replicas).
        let orders = TopicRecord {
            replication_factor: 2,
            replica_assignment: vec![vec![1, 2], vec![2, 3], vec![3, 1]],
            ..topic("orders", 3)
        };
        let version = store.topics_version().await.unwrap();
        store.create_topic(&orders).await.unwrap();
        store.create_topic(&topic("payments", 1)).await.unwrap();
        let renamed_twin = TopicRecord {
            id: Uuid::new_v4(),
            ..orders.clone()
        };
        assert!(
            matches!(
                store.create_topic(&renamed_twin).await,
                Err(MetadataError::TopicExists(_))
            ),
            "{label}: a second topic of the same name"
        );
        let topics = store.topics().await.unwrap();
        assert_eq!(topics.len(), 2, "{label}");
        assert_eq!(topics[0], orders, "{label}");

        store.add_partitions(orders.id, 5).await.unwrap();
        let assigned = vec![vec![1, 2], vec![2, 3], vec![3, 1], vec![], vec![2, 1]];
        store
            .set_replica_assignment(orders.id, &assigned)
            .await
            .unwrap();
        assert_eq!(
            store.topics().await.unwrap()[0].replica_assignment,
            assigned,
            "{label}: an assignment kept as given, a partition Spool placed empty"
        );
        assert!(
            matches!(
                store.add_partitions(orders.id, 4).await,
                Err(MetadataError::Conflict(_))
            ),
            "{label}: never lowered (another broker grew it further)"
        );
        assert_eq!(
            store.topics().await.unwrap()[0].partitions,
            5,
            "{label}: only ever raised"
        );
        store
            .alter_topic_configs(
                orders.id,
                &[
                    set("segment.bytes", "4096"),
                    ConfigChange::Delete {
                        key: "retention.ms".to_owned(),
                    },
                ],
            )
            .await
            .unwrap();
        assert_eq!(
            store.topics().await.unwrap()[0].configs,
            BTreeMap::from([("segment.bytes".to_owned(), "4096".to_owned())]),
            "{label}"
        );
        store.delete_topic(orders.id).await.unwrap();
        for result in [
            store.delete_topic(orders.id).await,
            store.add_partitions(orders.id, 9).await,
            store.alter_topic_configs(orders.id, &[]).await,
            store.bump_leader_epochs(orders.id).await.map(|_| ()),
        ] {
            assert!(
                matches!(result, Err(MetadataError::UnknownTopic(_))),
                "{label}: {result:?}"
            );
        }
        assert_eq!(store.topics().await.unwrap().len(), 1, "{label}");
        assert!(
            store.topics_version().await.unwrap() >= version + 5,
            "{label}: every change raises the version"
        );
        drop(store);
        let reopened = backend.open().await;
        assert_eq!(
            reopened.topics().await.unwrap()[0].name.as_str(),
            "payments",
            "{label}: survives a reopen"
        );
    }
}

#[tokio::test]
async fn the_store_id_is_made_once_and_kept() {
    for backend in common::backends().await {
        let label = backend.label;
        let (one, other) = (backend.open().await, backend.open().await);
        let id = one.store_id().await.unwrap();
        assert_eq!(other.store_id().await.unwrap(), id, "{label}");
        drop((one, other));
        assert_eq!(
            backend.open().await.store_id().await.unwrap(),
            id,
            "{label}"
        );
    }
    let (one, other) = (common::backends().await, common::backends().await);
    assert_ne!(
        one[0].open().await.store_id().await.unwrap(),
        other[0].open().await.store_id().await.unwrap(),
        "another store, another id"
    );
}

#[tokio::test]
async fn a_change_through_one_store_is_seen_by_another_on_the_same_database() {
    for backend in common::backends().await {
        let label = backend.label;
        let (one, other) = (backend.open().await, backend.open().await);
        let before = other.topics_version().await.unwrap();
        let orders = topic("orders", 2);
        one.create_topic(&orders).await.unwrap();
        let after_create = other.topics_version().await.unwrap();
        assert!(after_create > before, "{label}");
        assert_eq!(
            other.topics().await.unwrap(),
            vec![orders.clone()],
            "{label}"
        );
        one.alter_topic_configs(orders.id, &[set("cleanup.policy", "compact")])
            .await
            .unwrap();
        assert!(
            other.topics_version().await.unwrap() > after_create,
            "{label}"
        );
        assert_eq!(
            other.topics().await.unwrap()[0].configs["cleanup.policy"],
            "compact",
            "{label}"
        );
    }
}

#[tokio::test]
async fn leader_epochs_rise_with_every_bump_and_new_partitions_start_at_zero() {
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        let orders = topic("orders", 2);
        store.create_topic(&orders).await.unwrap();
        assert_eq!(
            store.bump_leader_epochs(orders.id).await.unwrap(),
            vec![1, 1]
        );
        assert_eq!(
            store.bump_leader_epochs(orders.id).await.unwrap(),
            vec![2, 2]
        );
        store.add_partitions(orders.id, 3).await.unwrap();
        assert_eq!(
            store.bump_leader_epochs(orders.id).await.unwrap(),
            vec![3, 3, 1],
            "{label}"
        );
        drop(store);
        let reopened = backend.open().await;
        assert_eq!(
            reopened.bump_leader_epochs(orders.id).await.unwrap(),
            vec![4, 4, 2],
            "{label}: never reused after a reopen"
        );
        let payments = topic("payments", 2);
        reopened.create_topic(&payments).await.unwrap();
        let all = reopened.bump_all_leader_epochs().await.unwrap();
        assert_eq!(all.len(), 2, "{label}");
        assert_eq!(all[&orders.id], vec![5, 5, 3], "{label}");
        assert_eq!(
            all[&payments.id],
            vec![1, 1],
            "{label}: every topic at once"
        );
    }
}

#[tokio::test]
async fn broker_configs_change_key_by_key_per_scope_and_concurrent_changes_all_land() {
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        assert!(store.broker_configs().await.unwrap().is_empty(), "{label}");
        let version = store.topics_version().await.unwrap();
        store
            .alter_broker_configs("", &[set("log.retention.ms", "60000")])
            .await
            .unwrap();
        assert!(
            store.topics_version().await.unwrap() > version,
            "{label}: brokers following the store see the change"
        );
        store
            .alter_broker_configs("1", &[set("num.partitions", "3")])
            .await
            .unwrap();
        let writers: Vec<_> = (0..16)
            .map(|i| {
                let store = store.clone();
                tokio::spawn(async move {
                    let change = set(&format!("key.{i}"), &i.to_string());
                    store.alter_broker_configs("1", &[change]).await
                })
            })
            .collect();
        for writer in writers {
            writer.await.unwrap().unwrap();
        }
        let stored = store.broker_configs().await.unwrap();
        assert_eq!(stored[""].len(), 1, "{label}: other scopes untouched");
        assert_eq!(
            stored["1"].len(),
            17,
            "{label}: no concurrent change lost: {:?}",
            stored["1"]
        );
        store
            .alter_broker_configs(
                "1",
                &stored["1"]
                    .keys()
                    .map(|key| ConfigChange::Delete { key: key.clone() })
                    .collect::<Vec<_>>(),
            )
            .await
            .unwrap();
        assert_eq!(
            store.broker_configs().await.unwrap().get("1"),
            None,
            "{label}"
        );
    }
}

#[tokio::test]
async fn concurrent_topic_changes_of_different_keys_all_land() {
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        let orders = topic("orders", 1);
        store.create_topic(&orders).await.unwrap();
        let writers: Vec<_> = (0..16)
            .map(|i| {
                let store = store.clone();
                tokio::spawn(async move {
                    let change = set(&format!("key.{i}"), &i.to_string());
                    store.alter_topic_configs(orders.id, &[change]).await
                })
            })
            .collect();
        for writer in writers {
            writer.await.unwrap().unwrap();
        }
        assert_eq!(
            store.topics().await.unwrap()[0].configs.len(),
            17,
            "{label}"
        );
    }
}

#[tokio::test]
async fn committed_offsets_are_fenced_by_the_coordinator_epoch() {
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        let orders = topic("orders", 2);
        store.create_topic(&orders).await.unwrap();
        assert_eq!(store.group_claimant("g").await.unwrap(), None, "{label}");
        let deposed = store.claim_group("g", 1).await.unwrap();
        let current = store.claim_group("g", 2).await.unwrap();
        assert!(current > deposed, "{label}");
        assert_eq!(store.group_claimant("g").await.unwrap(), Some(2), "{label}");
        let refused = store
            .commit_offsets("g", deposed, &[offset("g", &orders, 0, 5)])
            .await;
        assert!(
            matches!(refused, Err(MetadataError::Fenced { .. })),
            "{label}: {refused:?}"
        );
        store
            .commit_offsets("g", current, &[offset("g", &orders, 0, 7)])
            .await
            .unwrap();
        let refused = store.delete_offsets("g", deposed, None).await;
        assert!(
            matches!(refused, Err(MetadataError::Fenced { .. })),
            "{label}"
        );
        let unclaimed = store
            .commit_offsets(
                "never-claimed",
                1,
                &[offset("never-claimed", &orders, 0, 1)],
            )
            .await;
        assert!(
            matches!(unclaimed, Err(MetadataError::Fenced { .. })),
            "{label}"
        );
        assert_eq!(
            sorted_offsets(store.as_ref()).await,
            vec![offset("g", &orders, 0, 7)],
            "{label}: only the current coordinator's write"
        );
        assert_eq!(
            store.group_offsets("g").await.unwrap(),
            vec![offset("g", &orders, 0, 7)],
            "{label}"
        );
        assert!(
            store.group_offsets("other").await.unwrap().is_empty(),
            "{label}"
        );
    }
}

#[tokio::test]
async fn committed_offsets_are_upserted_deleted_and_go_with_their_topic() {
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        let orders = topic("orders", 2);
        store.create_topic(&orders).await.unwrap();
        let (a, b) = (
            store.claim_group("a", 1).await.unwrap(),
            store.claim_group("b", 1).await.unwrap(),
        );
        store
            .commit_offsets(
                "a",
                a,
                &[offset("a", &orders, 0, 5), offset("a", &orders, 1, 7)],
            )
            .await
            .unwrap();
        store
            .commit_offsets("a", a, &[offset("a", &orders, 0, 9)])
            .await
            .unwrap();
        store
            .commit_offsets("b", b, &[offset("b", &orders, 0, 1)])
            .await
            .unwrap();
        let gone = topic("gone", 1);
        let unknown = store
            .commit_offsets("a", a, &[offset("a", &gone, 0, 1)])
            .await;
        assert!(
            matches!(unknown, Err(MetadataError::UnknownTopic(_))),
            "{label}: {unknown:?}"
        );
        drop(store);
        let store = backend.open().await;
        assert_eq!(
            sorted_offsets(store.as_ref()).await,
            vec![
                offset("a", &orders, 0, 9),
                offset("a", &orders, 1, 7),
                offset("b", &orders, 0, 1)
            ],
            "{label}: all or none, and they survive a reopen"
        );
        store
            .delete_offsets("a", a, Some(&[(orders.id, 1)]))
            .await
            .unwrap();
        store.delete_offsets("b", b, None).await.unwrap();
        assert_eq!(
            sorted_offsets(store.as_ref()).await,
            vec![offset("a", &orders, 0, 9)],
            "{label}"
        );

        store.delete_topic(orders.id).await.unwrap();
        let recreated = topic("orders", 2);
        store.create_topic(&recreated).await.unwrap();
        assert!(
            store.committed_offsets().await.unwrap().is_empty(),
            "{label}: a recreated topic has none of the old topic's offsets"
        );
        assert_eq!(
            store.topics().await.unwrap()[0].configs,
            recreated.configs,
            "{label}"
        );
    }
}

#[tokio::test]
async fn concurrent_producer_id_allocators_never_share_a_block() {
    for backend in common::backends().await {
        let label = backend.label;
        let (one, other) = (backend.open().await, backend.open().await);
        let allocators: Vec<_> = (0..8)
            .map(|i| {
                let store = if i % 2 == 0 {
                    one.clone()
                } else {
                    other.clone()
                };
                tokio::spawn(async move {
                    let mut firsts = Vec::new();
                    for _ in 0..20 {
                        firsts.push(store.allocate_producer_ids(1000).await.unwrap());
                    }
                    firsts
                })
            })
            .collect();
        let mut firsts = BTreeSet::new();
        for allocator in allocators {
            for first in allocator.await.unwrap() {
                assert!(
                    firsts.insert(first),
                    "{label}: block {first} handed out twice"
                );
            }
        }
        let blocks: Vec<i64> = firsts.into_iter().collect();
        assert_eq!(blocks.len(), 160, "{label}");
        assert!(
            blocks.windows(2).all(|pair| pair[1] - pair[0] >= 1000),
            "{label}: blocks overlap"
        );
        drop((one, other));
        let reopened = backend.open().await;
        assert_eq!(
            reopened.allocate_producer_ids(10).await.unwrap(),
            blocks.last().unwrap() + 1000,
            "{label}: after a reopen too"
        );
    }
}

#[tokio::test]
async fn concurrent_creations_of_one_name_make_one_topic() {
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        let creators: Vec<_> = (0..8)
            .map(|_| {
                let store = store.clone();
                tokio::spawn(async move { store.create_topic(&topic("contended", 2)).await })
            })
            .collect();
        let mut created = 0;
        for creator in creators {
            match creator.await.unwrap() {
                Ok(()) => created += 1,
                Err(MetadataError::TopicExists(_)) => {}
                Err(other) => panic!("{label}: {other}"),
            }
        }
        assert_eq!(created, 1, "{label}");
        let topics = store.topics().await.unwrap();
        assert_eq!(topics.len(), 1, "{label}");
        assert_eq!(
            store.bump_leader_epochs(topics[0].id).await.unwrap().len(),
            2,
            "{label}: the winner's partitions only"
        );
    }
}

#[tokio::test]
async fn an_unreachable_server_is_a_retriable_error() {
    let url = MetadataUrl::Postgres("postgres://spool:x@127.0.0.1:1/none".to_owned());
    match spool_metadata::open(&url).await {
        Err(error) => assert!(error.is_retriable(), "{error:?}"),
        Ok(store) => panic!("connected to nothing: {store:?}"),
    }
}
