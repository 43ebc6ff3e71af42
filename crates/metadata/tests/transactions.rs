//! The transaction coordinator's state, against every backend (see `conformance.rs`):
//! changes are compare-and-set on the version, deciding queues markers and settles
//! offsets in the same store transaction, and offsets are added only to an ongoing
//! transaction of the right producer that has their group.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    unreachable_pub
)]

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use spool_metadata::{
    CommittedOffset, MetadataError, SettleOffsets, TopicRecord, TransactionRecord, TxnMarker,
    TxnState, TxnUpdate,
};
use spool_model::TopicName;
use uuid::Uuid;

fn topic(name: &str) -> TopicRecord {
    TopicRecord {
        name: TopicName::new(name).unwrap(),
        id: Uuid::new_v4(),
        partitions: 2,
        replication_factor: 1,
        replica_assignment: Vec::new(),
        configs: BTreeMap::new(),
    }
}

fn empty(id: &str) -> TransactionRecord {
    TransactionRecord {
        transactional_id: id.to_owned(),
        producer_id: 7,
        producer_epoch: 0,
        last_producer_epoch: -1,
        state: TxnState::Empty,
        timeout_ms: 60_000,
        partitions: BTreeSet::new(),
        groups: BTreeSet::new(),
        started_ms: -1,
        updated_ms: 1,
        version: 0,
    }
}

fn update(record: &TransactionRecord) -> TxnUpdate {
    TxnUpdate {
        record: record.clone(),
        create: false,
        markers: Vec::new(),
        clear_markers: false,
        offsets: SettleOffsets::Keep,
    }
}

fn offset(group: &str, topic: &TopicRecord, at: i64) -> CommittedOffset {
    CommittedOffset {
        group: group.to_owned(),
        topic: topic.name.to_string(),
        topic_id: topic.id,
        partition: 0,
        offset: at,
        leader_epoch: -1,
        metadata: None,
        commit_ms: 5,
    }
}

#[tokio::test]
async fn a_transaction_moves_by_compare_and_set_and_commits_its_markers_and_offsets() {
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        let orders = topic("orders");
        store.create_topic(&orders).await.unwrap();
        assert_eq!(store.transaction("t").await.unwrap(), None, "{label}");
        let created = store
            .update_transaction(&TxnUpdate {
                create: true,
                ..update(&empty("t"))
            })
            .await
            .unwrap();
        assert_eq!(created.version, 1, "{label}");
        let again = store
            .update_transaction(&TxnUpdate {
                create: true,
                ..update(&empty("t"))
            })
            .await;
        assert!(
            matches!(again, Err(MetadataError::Conflict(_))),
            "{label}: {again:?}"
        );

        let mut ongoing = created.clone();
        ongoing.state = TxnState::Ongoing;
        ongoing.partitions = BTreeSet::from([(orders.id, 0), (orders.id, 1)]);
        ongoing.groups = BTreeSet::from(["g".to_owned()]);
        ongoing.started_ms = 10;
        let ongoing = store.update_transaction(&update(&ongoing)).await.unwrap();
        assert_eq!(ongoing.version, 2, "{label}");
        let stale = store.update_transaction(&update(&created)).await;
        assert!(
            matches!(stale, Err(MetadataError::Conflict(_))),
            "{label}: a change from an old version is refused"
        );
        assert_eq!(
            store.transaction("t").await.unwrap().as_ref(),
            Some(&ongoing),
            "{label}"
        );

        // Offsets only into the ongoing transaction, of its producer and group.
        for (producer, epoch, group) in [(8, 0, "g"), (7, 1, "g"), (7, 0, "other")] {
            let refused = store
                .add_txn_offsets("t", producer, epoch, &[offset(group, &orders, 3)])
                .await;
            assert!(
                matches!(refused, Err(MetadataError::Conflict(_))),
                "{label}: {producer} {epoch} {group}: {refused:?}"
            );
        }
        store
            .add_txn_offsets("t", 7, 0, &[offset("g", &orders, 3)])
            .await
            .unwrap();
        assert_eq!(
            store.pending_txn_offsets("g").await.unwrap(),
            vec![(orders.id, 0)],
            "{label}"
        );
        assert!(
            store.group_offsets("g").await.unwrap().is_empty(),
            "{label}"
        );

        let markers: Vec<TxnMarker> = ongoing
            .partitions
            .iter()
            .map(|(topic_id, partition)| TxnMarker {
                transactional_id: "t".to_owned(),
                topic_id: *topic_id,
                partition: *partition,
                producer_id: 7,
                producer_epoch: 0,
                commit: true,
            })
            .collect();
        let mut prepared = ongoing.clone();
        prepared.state = TxnState::PrepareCommit;
        let prepared = store
            .update_transaction(&TxnUpdate {
                record: prepared,
                markers: markers.clone(),
                offsets: SettleOffsets::Commit,
                ..update(&ongoing)
            })
            .await
            .unwrap();
        assert!(
            store.pending_txn_offsets("g").await.unwrap().is_empty(),
            "{label}"
        );
        let committed = store.group_offsets("g").await.unwrap();
        assert_eq!(committed, vec![offset("g", &orders, 3)], "{label}");
        let log_partition = spool_metadata::offsets_topic_partition("g");
        let head = store.offset_log_head(log_partition).await.unwrap();
        let logged = store.offset_log(log_partition, 0, head, 10).await.unwrap();
        assert_eq!(
            logged.into_iter().map(|l| l.committed).collect::<Vec<_>>(),
            vec![offset("g", &orders, 3)],
            "{label}: the transaction's offsets have their place in __consumer_offsets"
        );
        let mut pending = store.pending_markers().await.unwrap();
        pending.sort_by_key(|m| m.partition);
        let mut expected = markers.clone();
        expected.sort_by_key(|m| m.partition);
        assert_eq!(pending, expected, "{label}");
        assert!(store.marker_pending(&markers[0]).await.unwrap(), "{label}");
        store.markers_written(&markers[..1]).await.unwrap();
        assert!(!store.marker_pending(&markers[0]).await.unwrap(), "{label}");
        assert_eq!(store.pending_markers().await.unwrap().len(), 1, "{label}");
        let mut newer = markers[1].clone();
        newer.producer_epoch = 1;
        store.markers_written(&[newer]).await.unwrap();
        assert_eq!(
            store.pending_markers().await.unwrap().len(),
            1,
            "{label}: only the marker as queued goes"
        );

        // The topic going takes its markers with it; expiry takes the rest.
        store.delete_topic(orders.id).await.unwrap();
        assert!(store.pending_markers().await.unwrap().is_empty(), "{label}");
        assert_eq!(
            store.transaction("t").await.unwrap().unwrap().partitions,
            BTreeSet::new(),
            "{label}"
        );
        // A decision naming partitions of a topic deleted meanwhile still stores:
        // they are left out, and no marker is queued for them.
        let mut retried = prepared.clone();
        retried.partitions = BTreeSet::from([(orders.id, 0)]);
        let retried = store
            .update_transaction(&TxnUpdate {
                markers: markers.clone(),
                ..update(&retried)
            })
            .await
            .unwrap();
        assert!(retried.version > prepared.version, "{label}");
        assert!(store.pending_markers().await.unwrap().is_empty(), "{label}");
        assert!(
            store
                .transaction("t")
                .await
                .unwrap()
                .unwrap()
                .partitions
                .is_empty(),
            "{label}"
        );
        let prepared = retried;
        assert!(
            !store
                .delete_transaction("t", prepared.version - 1)
                .await
                .unwrap(),
            "{label}"
        );
        assert!(
            store
                .delete_transaction("t", prepared.version)
                .await
                .unwrap(),
            "{label}"
        );
        assert!(store.transactions().await.unwrap().is_empty(), "{label}");
    }
}

#[tokio::test]
async fn an_abort_drops_the_pending_offsets() {
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        let orders = topic("orders");
        store.create_topic(&orders).await.unwrap();
        let mut record = store
            .update_transaction(&TxnUpdate {
                create: true,
                ..update(&empty("t"))
            })
            .await
            .unwrap();
        record.state = TxnState::Ongoing;
        record.groups = BTreeSet::from(["g".to_owned()]);
        let record = store.update_transaction(&update(&record)).await.unwrap();
        store
            .add_txn_offsets("t", 7, 0, &[offset("g", &orders, 9)])
            .await
            .unwrap();
        let mut aborting = record.clone();
        aborting.state = TxnState::PrepareAbort;
        let marker = TxnMarker {
            transactional_id: "t".to_owned(),
            topic_id: orders.id,
            partition: 1,
            producer_id: 7,
            producer_epoch: 0,
            commit: false,
        };
        let aborting = store
            .update_transaction(&TxnUpdate {
                offsets: SettleOffsets::Abort,
                markers: vec![marker],
                ..update(&aborting)
            })
            .await
            .unwrap();
        assert_eq!(store.pending_markers().await.unwrap().len(), 1, "{label}");
        assert!(
            store.pending_txn_offsets("g").await.unwrap().is_empty(),
            "{label}"
        );
        assert!(
            store.group_offsets("g").await.unwrap().is_empty(),
            "{label}"
        );
        let listed = store.transactions().await.unwrap();
        assert_eq!(listed.len(), 1, "{label}");
        assert_eq!(listed[0].state, TxnState::PrepareAbort, "{label}");
        assert_eq!(listed[0].groups.len(), 1, "{label}");
        let mut done = aborting.clone();
        done.state = TxnState::CompleteAbort;
        store
            .update_transaction(&TxnUpdate {
                clear_markers: true,
                ..update(&done)
            })
            .await
            .unwrap();
        assert!(
            store.pending_markers().await.unwrap().is_empty(),
            "{label}: completed with its markers taken off the queue"
        );
    }
}

#[tokio::test]
async fn transaction_checkers_are_added_replaced_listed_and_removed() {
    use spool_metadata::{TxnCheckerRecord, checker_of};
    let checker = |prefix: &str, url: &str| TxnCheckerRecord {
        prefix: prefix.to_owned(),
        url: url.to_owned(),
        headers: vec![
            ("Authorization".to_owned(), "Bearer t: x".to_owned()),
            ("X-Team".to_owned(), "orders".to_owned()),
        ],
        timeout_ms: 3000,
        ca_pem: None,
    };
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        store
            .put_txn_checker(&checker("orders-", "http://a"))
            .await
            .unwrap();
        store
            .put_txn_checker(&checker("orders-eu-", "http://b"))
            .await
            .unwrap();
        let replaced = TxnCheckerRecord {
            ca_pem: Some("-----BEGIN CERTIFICATE-----\n...".to_owned()),
            headers: Vec::new(),
            ..checker("orders-", "https://c")
        };
        store.put_txn_checker(&replaced).await.unwrap();
        drop(store);

        let store = backend.open().await;
        let all = store.txn_checkers().await.unwrap();
        assert_eq!(
            all,
            vec![replaced.clone(), checker("orders-eu-", "http://b")],
            "{label}"
        );
        assert_eq!(
            checker_of(&all, "orders-eu-7").unwrap().url,
            "http://b",
            "{label}: the longest prefix"
        );
        assert_eq!(
            checker_of(&all, "orders-us-1").unwrap().url,
            "https://c",
            "{label}"
        );
        assert!(checker_of(&all, "billing-1").is_none(), "{label}");
        assert!(
            store.remove_txn_checker("orders-").await.unwrap(),
            "{label}"
        );
        assert!(
            !store.remove_txn_checker("orders-").await.unwrap(),
            "{label}"
        );
        assert_eq!(store.txn_checkers().await.unwrap().len(), 1, "{label}");
    }
}
