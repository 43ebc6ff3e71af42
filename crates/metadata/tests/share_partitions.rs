//! Share-partition states against every backend (see `conformance.rs`): written and
//! replaced, fenced by the state epoch (a claim at a later epoch shuts out earlier
//! writers; a claim at an earlier one is refused), listed by group, deleted, and
//! gone with their topic; dead letters queued with a state (not when it is fenced),
//! once per record, listed in order, taken off when written.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    unreachable_pub
)]

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use spool_metadata::{
    MetadataError, MetadataStore, QueuedDeadLetter, SharePartitionRecord, TopicRecord,
};
use spool_model::TopicName;
use uuid::Uuid;

async fn topic(store: &Arc<dyn MetadataStore>) -> Uuid {
    let record = TopicRecord {
        name: TopicName::new(format!("t{}", Uuid::new_v4().simple())).unwrap(),
        id: Uuid::new_v4(),
        partitions: 2,
        replication_factor: 1,
        replica_assignment: Vec::new(),
        configs: BTreeMap::new(),
    };
    store.create_topic(&record).await.unwrap();
    record.id
}

fn record(group: &str, topic_id: Uuid, epoch: i32, start: i64) -> SharePartitionRecord {
    SharePartitionRecord {
        group: group.to_owned(),
        topic_id,
        partition: 0,
        state_epoch: epoch,
        start_offset: start,
        state: format!("{{\"start\":{start}}}"),
    }
}

#[tokio::test]
async fn a_share_partition_is_saved_claimed_fenced_and_deleted() {
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        let t = topic(&store).await;
        assert_eq!(
            store.claim_share_partition("g", t, 0, 1).await.unwrap(),
            None,
            "{label}"
        );
        store
            .save_share_partition(&record("g", t, 1, 5), &[])
            .await
            .unwrap();
        store
            .save_share_partition(&record("g", t, 1, 7), &[])
            .await
            .unwrap();

        let claimed = store.claim_share_partition("g", t, 0, 3).await.unwrap();
        assert_eq!(claimed, Some(record("g", t, 3, 7)), "{label}");
        let stale = store.save_share_partition(&record("g", t, 2, 9), &[]).await;
        assert!(
            matches!(stale, Err(MetadataError::Fenced { .. })),
            "{label}: {stale:?}"
        );
        let stale = store.claim_share_partition("g", t, 0, 2).await;
        assert!(
            matches!(stale, Err(MetadataError::Fenced { .. })),
            "{label}: {stale:?}"
        );
        store
            .save_share_partition(&record("g", t, 3, 9), &[])
            .await
            .unwrap();
        store
            .save_share_partition(&record("h", t, 1, 1), &[])
            .await
            .unwrap();
        drop(store);

        let store = backend.open().await;
        let of_g = store.share_partitions(Some("g")).await.unwrap();
        assert_eq!(of_g, vec![record("g", t, 3, 9)], "{label}");
        assert_eq!(
            store.share_partitions(None).await.unwrap().len(),
            2,
            "{label}"
        );
        store
            .delete_share_partitions("g", Some(&[(t, 0)]))
            .await
            .unwrap();
        assert!(
            store.share_partitions(Some("g")).await.unwrap().is_empty(),
            "{label}"
        );
        store.delete_topic(t).await.unwrap();
        assert!(
            store.share_partitions(None).await.unwrap().is_empty(),
            "{label}: gone with the topic"
        );
    }
}

fn letter(topic_id: Uuid, offset: i64, target_partition: i32) -> QueuedDeadLetter {
    QueuedDeadLetter {
        group: "g".to_owned(),
        topic_id,
        partition: 0,
        offset,
        dead_letter_topic: "dlq".to_owned(),
        target_partition,
        batch: vec![u8::try_from(offset).unwrap(); 3],
    }
}

#[tokio::test]
async fn dead_letters_are_queued_with_the_state_and_taken_off_when_written() {
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        let t = topic(&store).await;
        let (five, six, seven) = (letter(t, 5, 1), letter(t, 6, 0), letter(t, 7, 0));
        store
            .save_share_partition(&record("g", t, 2, 6), &[five.clone(), six.clone()])
            .await
            .unwrap();
        // Queued again (a state written again after a failure): once.
        store
            .save_share_partition(&record("g", t, 2, 7), &[six.clone(), seven.clone()])
            .await
            .unwrap();
        // A fenced writer queues nothing.
        let stale = store
            .save_share_partition(&record("g", t, 1, 9), &[letter(t, 8, 0)])
            .await;
        assert!(
            matches!(stale, Err(MetadataError::Fenced { .. })),
            "{label}: {stale:?}"
        );
        drop(store);

        let store = backend.open().await;
        let queued = store.queued_dead_letters(100).await.unwrap();
        assert_eq!(
            queued,
            vec![six.clone(), seven.clone(), five.clone()],
            "{label}: by target partition, then source offset"
        );
        assert_eq!(
            store.queued_dead_letters(1).await.unwrap(),
            vec![six.clone()],
            "{label}"
        );
        store
            .dead_letters_written(&[six.clone(), five.clone()])
            .await
            .unwrap();
        assert_eq!(
            store.queued_dead_letters(100).await.unwrap(),
            vec![seven.clone()],
            "{label}"
        );
        // A letter outlives its source topic.
        store.delete_topic(t).await.unwrap();
        assert_eq!(
            store.queued_dead_letters(100).await.unwrap(),
            vec![seven],
            "{label}"
        );
    }
}
