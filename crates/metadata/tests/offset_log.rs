//! `__consumer_offsets` as the offset store feeds it, on both backends: each commit
//! takes the head of its group's partition, a newer commit of a key moves it to the
//! head (compaction), deleted offsets leave the log, and it all survives a reopen.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    unreachable_pub
)]

use crate::common;

use std::collections::BTreeMap;

use spool_metadata::{CommittedOffset, TopicRecord, offsets_topic_partition};
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

fn offset(group: &str, topic: &TopicRecord, partition: i32, at: i64) -> CommittedOffset {
    CommittedOffset {
        group: group.to_owned(),
        topic: topic.name.to_string(),
        topic_id: topic.id,
        partition,
        offset: at,
        leader_epoch: 3,
        metadata: Some(format!("at {at}")),
        commit_ms: 1000 + at,
    }
}

#[tokio::test]
async fn commits_are_logged_in_their_groups_partition_and_compacted() {
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        let orders = topic("orders");
        store.create_topic(&orders).await.unwrap();
        let (a, b) = ("a", "b");
        let (pa, pb) = (offsets_topic_partition(a), offsets_topic_partition(b));
        assert_ne!(pa, pb);
        assert_eq!(store.offset_log_head(pa).await.unwrap(), 0, "{label}");
        let epoch_a = store.claim_group(a, 1).await.unwrap();
        let epoch_b = store.claim_group(b, 1).await.unwrap();
        store
            .commit_offsets(
                a,
                epoch_a,
                &[offset(a, &orders, 0, 5), offset(a, &orders, 1, 7)],
            )
            .await
            .unwrap();
        store
            .commit_offsets(b, epoch_b, &[offset(b, &orders, 0, 1)])
            .await
            .unwrap();
        store
            .commit_offsets(a, epoch_a, &[offset(a, &orders, 0, 9)])
            .await
            .unwrap();

        let logged = |store: std::sync::Arc<dyn spool_metadata::MetadataStore>, partition| async move {
            let head = store.offset_log_head(partition).await.unwrap();
            let records = store.offset_log(partition, 0, head, 100).await.unwrap();
            let records: Vec<(i64, CommittedOffset)> = records
                .into_iter()
                .map(|record| (record.log_offset, record.committed))
                .collect();
            // Where the oldest record kept is (the head when none is).
            let oldest = records.first().map_or(head, |(at, _)| *at);
            (oldest, head, records)
        };
        let expected_a = (
            1,
            3,
            vec![(1, offset(a, &orders, 1, 7)), (2, offset(a, &orders, 0, 9))],
        );
        assert_eq!(logged(store.clone(), pa).await, expected_a, "{label}");
        assert_eq!(
            logged(store.clone(), pb).await,
            (0, 1, vec![(0, offset(b, &orders, 0, 1))]),
            "{label}"
        );
        // A read from an offset, below a head read earlier, with a limit.
        let from_two = store.offset_log(pa, 2, 3, 10).await.unwrap();
        assert_eq!(from_two.len(), 1, "{label}");
        assert!(
            store.offset_log(pa, 0, 2, 1).await.unwrap().len() == 1,
            "{label}"
        );

        // Metadata may hold NUL (confluent-kafka sends its C terminator).
        let mut with_nul = offset(b, &orders, 1, 2);
        with_nul.metadata = Some("nul\0inside".to_owned());
        store
            .commit_offsets(b, epoch_b, &[with_nul.clone()])
            .await
            .unwrap();
        let stored = store.group_offsets(b).await.unwrap();
        assert!(
            stored.contains(&with_nul),
            "{label}: metadata with NUL is kept: {stored:?}"
        );
        assert_eq!(
            store.offset_log(pb, 1, 2, 1).await.unwrap()[0].committed,
            with_nul,
            "{label}"
        );

        drop(store);
        let store = backend.open().await;
        assert_eq!(
            logged(store.clone(), pa).await,
            expected_a,
            "{label}: after a reopen"
        );
        store
            .delete_offsets(a, epoch_a, Some(&[(orders.id, 1)]))
            .await
            .unwrap();
        assert_eq!(
            logged(store.clone(), pa).await,
            (2, 3, vec![(2, offset(a, &orders, 0, 9))]),
            "{label}: a deleted offset leaves the log"
        );
        store.delete_topic(orders.id).await.unwrap();
        assert_eq!(
            logged(store.clone(), pa).await,
            (3, 3, vec![]),
            "{label}: and so do a deleted topic's"
        );
    }
}
