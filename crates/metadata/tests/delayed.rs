//! Delayed delivery's timer, against every backend (see `conformance.rs`): holds are
//! noted once, come out by due time, carry a delivery's intent, and go when
//! delivered or with their topic; the searched-through mark never moves back.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    unreachable_pub
)]

use crate::common;

use std::collections::BTreeMap;

use spool_metadata::{DelayedRecord, PartitionKey, PendingHolds, TopicRecord};
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

#[tokio::test]
async fn holds_come_out_by_due_time_and_go_when_delivered() {
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        let orders = topic("orders");
        store.create_topic(&orders).await.unwrap();
        let key = PartitionKey {
            topic_id: orders.id,
            partition: 1,
        };
        let other = PartitionKey {
            topic_id: orders.id,
            partition: 0,
        };
        assert_eq!(store.holds_noted_through(key).await.unwrap(), 0, "{label}");
        assert_eq!(
            store.pending_holds(key).await.unwrap(),
            PendingHolds::default(),
            "{label}"
        );
        store
            .note_holds(key, &[(10, 5_000), (11, 3_000), (12, 3_000)], 13)
            .await
            .unwrap();
        // Noted again (a leader that took over searched the same log): once.
        store.note_holds(key, &[(11, 3_000)], 12).await.unwrap();
        store.note_holds(other, &[(4, 1_000)], 5).await.unwrap();
        assert_eq!(
            store.holds_noted_through(key).await.unwrap(),
            13,
            "{label}: the mark never moves back"
        );
        assert_eq!(
            store.pending_holds(key).await.unwrap(),
            PendingHolds {
                count: 3,
                next_due_ms: Some(3_000)
            },
            "{label}"
        );
        let due = store.due_holds(key, 4_000, 10).await.unwrap();
        let offsets: Vec<i64> = due.iter().map(|hold| hold.hold_offset).collect();
        assert_eq!(offsets, vec![11, 12], "{label}: by due time, then offset");
        assert_eq!(
            store.due_holds(key, 10_000, 1).await.unwrap().len(),
            1,
            "{label}: limited"
        );

        store.begin_delivery(key, &[11], 40).await.unwrap();
        let due = store.due_holds(key, 4_000, 10).await.unwrap();
        assert_eq!(
            due.first(),
            Some(&DelayedRecord {
                key,
                hold_offset: 11,
                due_ms: 3_000,
                delivering_from: Some(40),
            }),
            "{label}"
        );
        assert_eq!(due[1].delivering_from, None, "{label}");
        store.holds_delivered(key, &[11, 12]).await.unwrap();
        assert_eq!(
            store.pending_holds(key).await.unwrap(),
            PendingHolds {
                count: 1,
                next_due_ms: Some(5_000)
            },
            "{label}"
        );
        assert_eq!(
            store.pending_holds(other).await.unwrap().count,
            1,
            "{label}: partitions apart"
        );

        // A deleted topic takes its holds along; noting one of it is no error.
        store.delete_topic(orders.id).await.unwrap();
        assert_eq!(store.pending_holds(key).await.unwrap().count, 0, "{label}");
        store.note_holds(key, &[(20, 1)], 21).await.unwrap();
        assert_eq!(store.pending_holds(key).await.unwrap().count, 0, "{label}");
        assert_eq!(store.holds_noted_through(key).await.unwrap(), 0, "{label}");
    }
}

#[tokio::test]
async fn many_holds_are_noted_marked_and_forgotten_in_chunks() {
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        let orders = topic("many");
        store.create_topic(&orders).await.unwrap();
        let key = PartitionKey {
            topic_id: orders.id,
            partition: 0,
        };
        // More than one statement's worth (200) of each.
        let holds: Vec<(i64, i64)> = (0..450).map(|i| (i, 10_000 - i)).collect();
        store.note_holds(key, &holds, 450).await.unwrap();
        assert_eq!(
            store.pending_holds(key).await.unwrap().count,
            450,
            "{label}"
        );
        assert_eq!(
            store.next_hold_due(key).await.unwrap(),
            Some(10_000 - 449),
            "{label}"
        );
        let offsets: Vec<i64> = (0..450).collect();
        store.begin_delivery(key, &offsets, 900).await.unwrap();
        let due = store.due_holds(key, 20_000, 1_000).await.unwrap();
        assert!(
            due.iter().all(|hold| hold.delivering_from == Some(900)),
            "{label}"
        );
        store.holds_delivered(key, &offsets[..401]).await.unwrap();
        assert_eq!(store.pending_holds(key).await.unwrap().count, 49, "{label}");
        assert_eq!(
            store.next_hold_due(key).await.unwrap(),
            Some(10_000 - 449),
            "{label}"
        );
        store.holds_delivered(key, &offsets[401..]).await.unwrap();
        assert_eq!(store.next_hold_due(key).await.unwrap(), None, "{label}");
    }
}
