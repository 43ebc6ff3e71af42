//! Membership and control of a cluster, on every backend (see `common`): leases and
//! incarnations, the controller lease and its epoch, partition moves fenced by it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    unreachable_pub
)]

use crate::common;

use std::collections::BTreeMap;

use spool_metadata::{
    BrokerEndpoint, BrokerLease, MetadataError, MetadataStore, PartitionKey, PartitionMove,
    TopicRecord,
};
use spool_model::TopicName;
use uuid::Uuid;

async fn topic(store: &dyn MetadataStore, partitions: i32) -> Uuid {
    let record = TopicRecord {
        name: TopicName::new(format!("t{}", Uuid::new_v4().simple())).unwrap(),
        id: Uuid::new_v4(),
        partitions,
        replication_factor: 1,
        replica_assignment: Vec::new(),
        configs: BTreeMap::new(),
    };
    store.create_topic(&record).await.unwrap();
    record.id
}

/// A new incarnation of node `node_id`, from the node's one data directory (every
/// lease of a node is a restart of the same broker).
fn lease(node_id: i32) -> BrokerLease {
    BrokerLease {
        node_id,
        incarnation: Uuid::new_v4(),
        instance: Uuid::from_u128(u128::from(node_id.unsigned_abs())),
        host: "127.0.0.1".to_owned(),
        port: 9000 + node_id,
        rack: None,
        reader: false,
        listeners: vec![
            BrokerEndpoint {
                listener: "PLAINTEXT".to_owned(),
                host: "127.0.0.1".to_owned(),
                port: 9000 + node_id,
            },
            BrokerEndpoint {
                listener: "SASL_SSL".to_owned(),
                host: "broker.example".to_owned(),
                port: 9100 + node_id,
            },
        ],
    }
}

#[tokio::test]
async fn a_brokers_endpoints_on_each_listener_are_kept() {
    for backend in common::backends().await {
        let store = backend.open().await;
        let registered = lease(3);
        store.register_broker(&registered, LEASE_MS).await.unwrap();
        let brokers = store.brokers().await.unwrap();
        let record = brokers.iter().find(|b| b.node_id == 3).unwrap().clone();
        assert_eq!(record.listeners, registered.listeners, "{}", backend.label);
        let on_sasl = record.clone().on_listener("SASL_SSL").unwrap();
        assert_eq!(
            (on_sasl.host.as_str(), on_sasl.port),
            ("broker.example", 9103)
        );
        assert!(record.clone().on_listener("SSL").is_none());
        assert_eq!((record.rack.as_deref(), record.reader), (None, false));
        // A reader in a rack, registered again as a writer elsewhere: both kept.
        let reader = BrokerLease {
            rack: Some("zone-b".to_owned()),
            reader: true,
            ..lease(5)
        };
        store.register_broker(&reader, LEASE_MS).await.unwrap();
        let find = |brokers: Vec<spool_metadata::BrokerRecord>| {
            let b = brokers.into_iter().find(|b| b.node_id == 5).unwrap();
            (b.rack.clone(), b.reader, b.takes_work())
        };
        assert_eq!(
            find(store.brokers().await.unwrap()),
            (Some("zone-b".to_owned()), true, false),
            "{}",
            backend.label
        );
        let writer = BrokerLease {
            rack: Some("zone-c".to_owned()),
            ..lease(5)
        };
        store.register_broker(&writer, LEASE_MS).await.unwrap();
        assert_eq!(
            find(store.brokers().await.unwrap()),
            (Some("zone-c".to_owned()), false, true),
            "{}",
            backend.label
        );
        // A broker registered before listeners were recorded: its one endpoint.
        let old = lease(4);
        let old = BrokerLease {
            listeners: Vec::new(),
            ..old
        };
        store.register_broker(&old, LEASE_MS).await.unwrap();
        let brokers = store.brokers().await.unwrap();
        let record = brokers.iter().find(|b| b.node_id == 4).unwrap().clone();
        let anywhere = record.on_listener("SASL_SSL").unwrap();
        assert_eq!((anywhere.host.as_str(), anywhere.port), ("127.0.0.1", 9004));
    }
}

const LEASE_MS: i64 = 60_000;

/// Brokers 1 and 2 registered, and partition 0 of a new topic of `partitions`.
async fn two_brokers_and_a_partition(
    store: &dyn MetadataStore,
    partitions: i32,
) -> (PartitionKey, BrokerLease, BrokerLease) {
    let key = PartitionKey {
        topic_id: topic(store, partitions).await,
        partition: 0,
    };
    let (a, b) = (lease(1), lease(2));
    store.register_broker(&a, LEASE_MS).await.unwrap();
    store.register_broker(&b, LEASE_MS).await.unwrap();
    (key, a, b)
}

#[tokio::test]
async fn another_instance_may_not_take_a_live_node_id() {
    for backend in common::backends().await {
        let store = backend.open().await;
        let holder = lease(1);
        store.register_broker(&holder, LEASE_MS).await.unwrap();
        let intruder = BrokerLease {
            instance: Uuid::new_v4(),
            port: 9999,
            ..lease(1)
        };
        let refused = store.register_broker(&intruder, LEASE_MS).await;
        match refused {
            Err(MetadataError::NodeInUse {
                node_id: 1,
                ref holder,
                expires_in_ms,
            }) => {
                assert_eq!(holder, "127.0.0.1:9001", "{}", backend.label);
                assert!(
                    expires_in_ms > 0 && expires_in_ms <= LEASE_MS,
                    "{expires_in_ms}"
                );
            }
            other => panic!("{}: {other:?}", backend.label),
        }
        assert!(
            store
                .renew_lease(1, holder.incarnation, LEASE_MS)
                .await
                .unwrap(),
            "{}: the live broker keeps its lease",
            backend.label
        );
        // A restart of the holder (same data directory) replaces it at once.
        let restarted = lease(1);
        store.register_broker(&restarted, LEASE_MS).await.unwrap();
        // Once the lease lapses, another instance may take the node id (a replaced
        // machine after a crash).
        let lapsed = lease(2);
        store.register_broker(&lapsed, -1).await.unwrap();
        let replacement = BrokerLease {
            instance: Uuid::new_v4(),
            ..lease(2)
        };
        store.register_broker(&replacement, LEASE_MS).await.unwrap();
        let brokers = store.brokers().await.unwrap();
        let two = brokers.iter().find(|b| b.node_id == 2).unwrap();
        assert_eq!(
            two.incarnation, replacement.incarnation,
            "{}",
            backend.label
        );
    }
}

#[tokio::test]
async fn a_store_keeps_to_the_object_storage_it_was_bound_to() {
    for backend in common::backends().await {
        let store = backend.open().await;
        assert_eq!(
            store.bound_storage().await.unwrap(),
            None,
            "{}",
            backend.label
        );
        store.bind_storage("s3://bucket/cluster-a").await.unwrap();
        assert_eq!(
            store.bound_storage().await.unwrap().as_deref(),
            Some("s3://bucket/cluster-a")
        );
        store.bind_storage("s3://bucket/cluster-a").await.unwrap();
        match store.bind_storage("s3://bucket/cluster-b").await {
            Err(MetadataError::OtherStorage { cluster, asked }) => {
                assert_eq!(cluster, "s3://bucket/cluster-a");
                assert_eq!(asked, "s3://bucket/cluster-b");
            }
            other => panic!("{}: {other:?}", backend.label),
        }
    }
}

fn moved(key: PartitionKey, from: i32, to: i32) -> PartitionMove {
    PartitionMove { key, from, to }
}

#[tokio::test]
async fn a_new_incarnation_replaces_the_old_and_raises_its_partitions_epochs() {
    for backend in common::backends().await {
        let store = backend.open().await;
        let id = topic(store.as_ref(), 3).await;
        let first = lease(1);
        assert!(
            store
                .register_broker(&first, LEASE_MS)
                .await
                .unwrap()
                .is_empty()
        );
        assert!(
            store
                .renew_lease(1, first.incarnation, LEASE_MS)
                .await
                .unwrap()
        );
        let controller = store
            .claim_controller(1, first.incarnation, LEASE_MS)
            .await
            .unwrap()
            .unwrap();
        let key = |partition| PartitionKey {
            topic_id: id,
            partition,
        };
        let moved = store
            .move_partitions(
                controller.epoch,
                &[
                    moved(key(0), -1, 1),
                    moved(key(1), -1, 1),
                    moved(key(2), -1, 2),
                ],
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(moved.len(), 3, "{}", backend.label);
        assert!(
            moved.iter().all(|l| l.leader_epoch == 0),
            "{}: a first leader keeps the epoch a new partition starts at",
            backend.label
        );

        let second = lease(1);
        let mut raised = store.register_broker(&second, LEASE_MS).await.unwrap();
        raised.sort_by_key(|l| l.key.partition);
        let raised: Vec<(i32, i32, i32)> = raised
            .iter()
            .map(|l| (l.key.partition, l.leader, l.leader_epoch))
            .collect();
        assert_eq!(raised, vec![(0, 1, 1), (1, 1, 1)], "{}", backend.label);
        assert!(
            !store
                .renew_lease(1, first.incarnation, LEASE_MS)
                .await
                .unwrap(),
            "{}: the old incarnation learns it was replaced",
            backend.label
        );
        assert!(
            store
                .renew_lease(1, second.incarnation, LEASE_MS)
                .await
                .unwrap()
        );
        let brokers = store.brokers().await.unwrap();
        assert_eq!(brokers.len(), 1);
        assert_eq!(brokers[0].incarnation, second.incarnation);
        let epochs: Vec<(i32, i32)> = store
            .leaderships()
            .await
            .unwrap()
            .iter()
            .filter(|l| l.key.topic_id == id)
            .map(|l| (l.leader, l.leader_epoch))
            .collect();
        assert_eq!(epochs, vec![(1, 1), (1, 1), (2, 0)], "{}", backend.label);

        // A clean stop removes only its own incarnation's row.
        store.deregister_broker(1, first.incarnation).await.unwrap();
        assert_eq!(store.brokers().await.unwrap().len(), 1);
        store
            .deregister_broker(1, second.incarnation)
            .await
            .unwrap();
        assert!(store.brokers().await.unwrap().is_empty());
    }
}

#[tokio::test]
async fn one_controller_at_a_time_and_its_moves_are_fenced_by_its_epoch() {
    for backend in common::backends().await {
        let store = backend.open().await;
        let (key, a, b) = two_brokers_and_a_partition(store.as_ref(), 2).await;
        let version = store.assignments_version().await.unwrap();
        let held = store
            .claim_controller(1, a.incarnation, LEASE_MS)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(held.node_id, 1);
        let refused = store
            .claim_controller(2, b.incarnation, LEASE_MS)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (refused.node_id, refused.epoch),
            (1, held.epoch),
            "{}: a live lease is not taken",
            backend.label
        );
        let renewed = store
            .claim_controller(1, a.incarnation, LEASE_MS)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(renewed.epoch, held.epoch, "renewing keeps the epoch");
        assert!(
            store
                .move_partitions(held.epoch, &[moved(key, -1, 2)])
                .await
                .unwrap()
                .is_some()
        );
        assert!(store.assignments_version().await.unwrap() > version);

        // The controller's lease lapses (renewed with a lease already over): another
        // broker takes it, and the old controller's moves are refused.
        store
            .claim_controller(1, a.incarnation, -1_000)
            .await
            .unwrap();
        let taken = store
            .claim_controller(2, b.incarnation, LEASE_MS)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(taken.node_id, 2, "{}", backend.label);
        assert_eq!(
            store.controller().await.unwrap(),
            Some(taken),
            "{}",
            backend.label
        );
        assert!(taken.epoch > held.epoch);
        assert!(
            store
                .move_partitions(held.epoch, &[moved(key, 2, 1)])
                .await
                .unwrap()
                .is_none(),
            "{}: a deposed controller moves nothing",
            backend.label
        );
        let leader = |store: std::sync::Arc<dyn MetadataStore>| async move {
            store
                .leaderships()
                .await
                .unwrap()
                .into_iter()
                .find(|l| l.key == key)
                .unwrap()
        };
        let stale = store
            .move_partitions(taken.epoch, &[moved(key, -1, 1)])
            .await
            .unwrap()
            .unwrap();
        assert!(
            stale.is_empty(),
            "{}: a move planned from a leader the partition no longer has is dropped",
            backend.label
        );
        assert_eq!(leader(store.clone()).await.leader, 2);
        assert_eq!(leader(store.clone()).await.leader_epoch, 0);
        // A move from one leader to another raises the epoch.
        let moved = store
            .move_partitions(taken.epoch, &[moved(key, 2, 1)])
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (moved[0].leader, moved[0].leader_epoch),
            (1, 1),
            "{}",
            backend.label
        );

        // A controller whose process was replaced loses the lease at once.
        let b_again = lease(2);
        store.register_broker(&b_again, LEASE_MS).await.unwrap();
        let after = store
            .claim_controller(1, a.incarnation, LEASE_MS)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(after.node_id, 1, "{}", backend.label);
        assert!(after.epoch > taken.epoch);
    }
}

#[tokio::test]
async fn any_broker_gives_new_partitions_a_first_leader_but_moves_none() {
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        let (key, a, _) = two_brokers_and_a_partition(store.as_ref(), 2).await;
        let other = PartitionKey {
            partition: 1,
            ..key
        };
        let version = store.assignments_version().await.unwrap();
        let assigned = store
            .assign_new_partitions(&[(key, 2), (other, 1)])
            .await
            .unwrap();
        assert_eq!(assigned.len(), 2, "{label}");
        assert!(
            assigned.iter().all(|l| l.leader_epoch == 0),
            "{label}: no earlier leader to fence"
        );
        assert!(store.assignments_version().await.unwrap() > version);
        // Led now: neither a second assignment nor one racing it moves it.
        let again = store.assign_new_partitions(&[(key, 1)]).await.unwrap();
        assert!(again.is_empty(), "{label}: {again:?}");
        let controller = store
            .claim_controller(1, a.incarnation, LEASE_MS)
            .await
            .unwrap()
            .unwrap();
        let stale = store
            .move_partitions(controller.epoch, &[moved(other, -1, 2)])
            .await
            .unwrap()
            .unwrap();
        assert!(stale.is_empty(), "{label}: planned before the assignment");
        let leaders: Vec<(i32, i32)> = store
            .leaderships()
            .await
            .unwrap()
            .into_iter()
            .filter(|l| l.key.topic_id == key.topic_id)
            .map(|l| (l.key.partition, l.leader))
            .collect();
        assert_eq!(leaders, vec![(0, 2), (1, 1)], "{label}");
    }
}

#[tokio::test]
async fn what_a_broker_followed_only_rises_and_starts_over_with_a_new_process() {
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        let first = lease(1);
        store.register_broker(&first, LEASE_MS).await.unwrap();
        let followed = |store: std::sync::Arc<dyn MetadataStore>| async move {
            let me = store.brokers().await.unwrap().remove(0);
            (me.topics_seen, me.assignments_seen)
        };
        assert_eq!(followed(store.clone()).await, (0, 0), "{label}");
        store
            .note_followed(1, first.incarnation, 7, 0)
            .await
            .unwrap();
        store
            .note_followed(1, first.incarnation, 5, 3)
            .await
            .unwrap();
        assert_eq!(
            followed(store.clone()).await,
            (7, 3),
            "{label}: never lowered"
        );
        store.note_followed(1, Uuid::new_v4(), 9, 9).await.unwrap();
        assert_eq!(
            followed(store.clone()).await,
            (7, 3),
            "{label}: another process's"
        );
        store.register_broker(&lease(1), LEASE_MS).await.unwrap();
        assert_eq!(
            followed(store.clone()).await,
            (0, 0),
            "{label}: a new process has followed nothing yet"
        );
    }
}

#[tokio::test]
async fn a_live_leader_hands_over_only_what_it_was_asked_and_only_once() {
    for backend in common::backends().await {
        let store = backend.open().await;
        let label = backend.label;
        let (key, a, b) = two_brokers_and_a_partition(store.as_ref(), 1).await;
        let controller = store
            .claim_controller(1, a.incarnation, LEASE_MS)
            .await
            .unwrap()
            .unwrap();
        store
            .move_partitions(controller.epoch, &[moved(key, -1, 1)])
            .await
            .unwrap();
        let complete = |node: i32, incarnation: Uuid, epoch: i32| {
            let store = store.clone();
            async move {
                store
                    .complete_handover(node, incarnation, key, epoch)
                    .await
                    .unwrap()
            }
        };
        assert!(
            complete(1, a.incarnation, 0).await.is_none(),
            "{label}: nothing was asked"
        );

        let asked = store
            .request_handovers(controller.epoch, &[moved(key, 1, 2)])
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (asked[0].leader, asked[0].leader_epoch, asked[0].handover_to),
            (1, 0, 2),
            "{label}"
        );
        let version = store.assignments_version().await.unwrap();
        assert!(
            complete(2, b.incarnation, 0).await.is_none(),
            "{label}: not its leader"
        );
        assert!(
            complete(1, a.incarnation, 1).await.is_none(),
            "{label}: another epoch"
        );
        assert!(
            complete(1, Uuid::new_v4(), 0).await.is_none(),
            "{label}: another process of the node"
        );
        store.set_draining(2, true).await.unwrap();
        assert!(
            complete(1, a.incarnation, 0).await.is_none(),
            "{label}: not to a draining broker"
        );
        store.set_draining(2, false).await.unwrap();
        assert_eq!(store.assignments_version().await.unwrap(), version);
        let handed = complete(1, a.incarnation, 0).await.unwrap();
        assert_eq!(
            (handed.leader, handed.leader_epoch, handed.handover_to),
            (2, 1, -1),
            "{label}"
        );
        assert!(store.assignments_version().await.unwrap() > version);
        assert!(
            complete(1, a.incarnation, 0).await.is_none(),
            "{label}: once"
        );

        // An operator's move, then a controller's move that overtakes it.
        assert!(
            store.request_move(key, 2).await.unwrap().is_none(),
            "{label}: node 2 leads it already"
        );
        let requested = store.request_move(key, 1).await.unwrap().unwrap();
        assert_eq!((requested.leader, requested.handover_to), (2, 1), "{label}");
        let overtaken = store
            .move_partitions(controller.epoch, &[moved(key, 2, 3)])
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (
                overtaken[0].leader,
                overtaken[0].leader_epoch,
                overtaken[0].handover_to
            ),
            (3, 2, -1),
            "{label}: a move forgets the handover asked"
        );
        assert!(complete(2, b.incarnation, 1).await.is_none(), "{label}");

        // A deposed controller asks nothing.
        store
            .claim_controller(1, a.incarnation, -1_000)
            .await
            .unwrap();
        store
            .claim_controller(2, b.incarnation, LEASE_MS)
            .await
            .unwrap();
        assert!(
            store
                .request_handovers(controller.epoch, &[moved(key, 3, 1)])
                .await
                .unwrap()
                .is_none(),
            "{label}"
        );
    }
}
