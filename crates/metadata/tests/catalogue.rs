//! The catalogue of shared-storage mode, on every backend (see `common`): commits
//! fenced by leader epoch and high watermark, bounded range lookups, timestamps, the
//! log start, producer state and the epoch history.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    unreachable_pub
)]

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use spool_metadata::{MetadataStore, ObjectCommit, PartitionKey, RangeCommit, TopicRecord};
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

fn range(key: PartitionKey, epoch: i32, base: i64, records: i64, position: i64) -> RangeCommit {
    RangeCommit {
        key,
        leader_epoch: epoch,
        from_offset: base,
        base_offset: base,
        last_offset: base + records - 1,
        max_timestamp: 1_000 + base + records - 1,
        position,
        length: 100 * records,
        producer_state: Some(format!("producers@{}", base + records).into_bytes()),
    }
}

fn object(name: &str, ranges: Vec<RangeCommit>) -> ObjectCommit {
    ObjectCommit {
        name: name.to_owned(),
        size: ranges.iter().map(|r| r.length).sum(),
        ranges,
    }
}

#[tokio::test]
async fn committed_marks_of_many_partitions_in_one_lookup() {
    for backend in common::backends().await {
        let store = backend.open().await;
        let id = topic(store.as_ref(), 3).await;
        let key = |partition| PartitionKey {
            topic_id: id,
            partition,
        };
        let epoch = store.bump_leader_epochs(id).await.unwrap()[0];
        let commit = object(
            "wal/m",
            vec![
                range(key(0), epoch, 0, 10, 0),
                range(key(2), epoch, 0, 4, 1_000),
            ],
        );
        store.commit_object(&commit).await.unwrap();
        store.advance_log_start(key(0), 3).await.unwrap();
        // Partition 9 does not exist: left out.
        let mut marks = store
            .committed_marks(&[key(0), key(1), key(2), key(9)], false)
            .await
            .unwrap();
        marks.sort_by_key(|m| m.key.partition);
        let seen: Vec<(i32, i32, i64, i64, bool)> = marks
            .iter()
            .map(|m| {
                (
                    m.key.partition,
                    m.leader_epoch,
                    m.log_start,
                    m.high_watermark,
                    m.producer_state.is_some(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            vec![
                (0, epoch, 3, 10, false),
                (1, epoch, 0, 0, false),
                (2, epoch, 0, 4, false)
            ],
            "{}",
            backend.label
        );
        let with_states = store.committed_marks(&[key(2)], true).await.unwrap();
        assert_eq!(
            with_states[0].producer_state.as_deref(),
            Some(&b"producers@4"[..]),
            "{}",
            backend.label
        );
        // More partitions than one statement holds.
        let many: Vec<PartitionKey> = (0..600).map(|p| key(p % 3)).collect();
        assert_eq!(
            store.committed_marks(&many, true).await.unwrap().len(),
            600,
            "{}",
            backend.label
        );
    }
}

#[tokio::test]
async fn a_commit_moves_the_high_watermark_only_of_partitions_at_their_epoch_and_end() {
    for backend in common::backends().await {
        let store = backend.open().await;
        let id = topic(store.as_ref(), 3).await;
        let key = |partition| PartitionKey {
            topic_id: id,
            partition,
        };
        let epoch = store.bump_leader_epochs(id).await.unwrap()[0];
        let first = object(
            "wal/1",
            vec![
                range(key(0), epoch, 0, 10, 0),
                range(key(1), epoch, 0, 5, 1_000),
            ],
        );
        assert_eq!(
            store.commit_object(&first).await.unwrap(),
            vec![true, true],
            "{}",
            backend.label
        );
        // Partition 0 at the wrong end (a range committed twice), partition 1 at an
        // old epoch (another leader took it), partition 2 right.
        let second = object(
            "wal/2",
            vec![
                range(key(0), epoch, 0, 10, 0),
                range(key(1), epoch - 1, 5, 5, 1_000),
                range(key(2), epoch, 0, 7, 1_500),
            ],
        );
        assert_eq!(
            store.commit_object(&second).await.unwrap(),
            vec![false, false, true],
            "{}",
            backend.label
        );
        let state = store.partition_state(key(0)).await.unwrap().unwrap();
        assert_eq!((state.log_start, state.high_watermark), (0, 10));
        assert_eq!(state.producer_state.as_deref(), Some(&b"producers@10"[..]));
        let state = store.partition_state(key(1)).await.unwrap().unwrap();
        assert_eq!(state.high_watermark, 5, "{}: fenced", backend.label);
        assert_eq!(
            store
                .partition_state(key(2))
                .await
                .unwrap()
                .unwrap()
                .high_watermark,
            7
        );
        // Nothing of a refused range is visible.
        let ranges = store.ranges_from(key(0), 0, i64::MAX, 100).await.unwrap();
        assert_eq!(ranges.len(), 1, "{}", backend.label);
        assert_eq!(ranges[0].object, "wal/1");
        let ranges = store.ranges_from(key(1), 0, i64::MAX, 100).await.unwrap();
        assert_eq!(ranges.len(), 1, "{}", backend.label);
        // A state without producers keeps the previous one.
        let mut next = range(key(0), epoch, 10, 1, 0);
        next.producer_state = None;
        assert_eq!(
            store
                .commit_object(&object("wal/3", vec![next]))
                .await
                .unwrap(),
            vec![true]
        );
        let state = store.partition_state(key(0)).await.unwrap().unwrap();
        assert_eq!(state.producer_state.as_deref(), Some(&b"producers@10"[..]));
        assert!(
            store
                .partition_state(PartitionKey {
                    topic_id: id,
                    partition: 3
                })
                .await
                .unwrap()
                .is_none()
        );
    }
}

#[tokio::test]
async fn a_range_past_a_gap_commits_where_it_continues_the_high_watermark() {
    for backend in common::backends().await {
        let label = backend.label;
        let store = backend.open().await;
        let id = topic(store.as_ref(), 1).await;
        let key = PartitionKey {
            topic_id: id,
            partition: 0,
        };
        let epoch = store.bump_leader_epochs(id).await.unwrap()[0];
        // A mirror's batches at 100..=104, continuing a partition that ends at 0.
        let past_gap = |from: i64| RangeCommit {
            from_offset: from,
            ..range(key, epoch, 100, 5, 0)
        };
        assert_eq!(
            store
                .commit_object(&object("wal/1", vec![past_gap(3)]))
                .await
                .unwrap(),
            vec![false],
            "{label}: it does not continue 0"
        );
        assert_eq!(
            store
                .commit_object(&object("wal/2", vec![past_gap(0)]))
                .await
                .unwrap(),
            vec![true],
            "{label}"
        );
        let state = store.partition_state(key).await.unwrap().unwrap();
        assert_eq!(state.high_watermark, 105, "{label}");
        let found = store.ranges_from(key, 40, i64::MAX, 10).await.unwrap();
        assert_eq!(
            found.len(),
            1,
            "{label}: a read in the gap finds the range after it"
        );
        assert_eq!(found[0].base_offset, 100, "{label}");
    }
}

#[tokio::test]
async fn a_thousand_partitions_commit_in_one_object() {
    for backend in common::backends().await {
        let store = backend.open().await;
        let id = topic(store.as_ref(), 1_000).await;
        let epoch = store.bump_leader_epochs(id).await.unwrap()[0];
        let ranges = (0..1_000)
            .map(|p| {
                range(
                    PartitionKey {
                        topic_id: id,
                        partition: p,
                    },
                    epoch,
                    0,
                    2,
                    i64::from(p) * 200,
                )
            })
            .collect();
        let accepted = store
            .commit_object(&object("wal/big", ranges))
            .await
            .unwrap();
        assert!(accepted.iter().all(|a| *a), "{}", backend.label);
        assert_eq!(accepted.len(), 1_000);
        let last = PartitionKey {
            topic_id: id,
            partition: 999,
        };
        let found = store.ranges_from(last, 1, i64::MAX, 10).await.unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].position, 999 * 200, "{}", backend.label);
    }
}

#[tokio::test]
async fn ranges_are_found_from_any_offset_bounded_by_bytes_and_count() {
    for backend in common::backends().await {
        let store = backend.open().await;
        let id = topic(store.as_ref(), 1).await;
        let key = PartitionKey {
            topic_id: id,
            partition: 0,
        };
        let epoch = store.bump_leader_epochs(id).await.unwrap()[0];
        // 50 objects of 10 records each (1,000 bytes each).
        for n in 0..50 {
            let commit = object(&format!("wal/{n}"), vec![range(key, epoch, n * 10, 10, 0)]);
            assert_eq!(store.commit_object(&commit).await.unwrap(), vec![true]);
        }
        let found = store.ranges_from(key, 234, 2_500, 100).await.unwrap();
        let bases: Vec<i64> = found.iter().map(|r| r.base_offset).collect();
        assert_eq!(
            bases,
            vec![230, 240, 250],
            "{}: covers 2,500 bytes",
            backend.label
        );
        let found = store.ranges_from(key, 0, 1, 100).await.unwrap();
        assert_eq!(found.len(), 1, "{}: at least one range", backend.label);
        let found = store.ranges_from(key, 0, i64::MAX, 4).await.unwrap();
        assert_eq!(found.len(), 4, "{}: at most the limit", backend.label);
        assert!(
            store
                .ranges_from(key, 500, i64::MAX, 4)
                .await
                .unwrap()
                .is_empty()
        );

        let at = store
            .range_for_timestamp(key, 1_000 + 137)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(at.base_offset, 130, "{}", backend.label);
        assert!(
            store
                .range_for_timestamp(key, 5_000)
                .await
                .unwrap()
                .is_none()
        );
        let max = store.range_with_max_timestamp(key).await.unwrap().unwrap();
        assert_eq!(max.base_offset, 490, "{}", backend.label);

        // The log start moves up, never past the high watermark, never back; the
        // ranges wholly below it go.
        assert_eq!(store.advance_log_start(key, 235).await.unwrap(), 235);
        assert_eq!(store.advance_log_start(key, 100).await.unwrap(), 235);
        let found = store.ranges_from(key, 0, i64::MAX, 100).await.unwrap();
        assert_eq!(
            found.first().map(|r| r.base_offset),
            Some(230),
            "{}",
            backend.label
        );
        assert_eq!(
            store
                .range_for_timestamp(key, 0)
                .await
                .unwrap()
                .unwrap()
                .base_offset,
            230
        );
        assert_eq!(store.advance_log_start(key, 9_999).await.unwrap(), 500);
        assert!(
            store
                .ranges_from(key, 0, i64::MAX, 100)
                .await
                .unwrap()
                .is_empty()
        );
    }
}

#[tokio::test]
async fn the_epoch_history_keeps_the_first_start_of_each_epoch() {
    for backend in common::backends().await {
        let store = backend.open().await;
        let id = topic(store.as_ref(), 1).await;
        let key = PartitionKey {
            topic_id: id,
            partition: 0,
        };
        store.begin_epoch(key, 1, 0).await.unwrap();
        store.begin_epoch(key, 3, 40).await.unwrap();
        store.begin_epoch(key, 3, 45).await.unwrap();
        let state = store.partition_state(key).await.unwrap().unwrap();
        assert_eq!(state.epochs, vec![(1, 0), (3, 40)], "{}", backend.label);
        // Everything goes with the topic.
        store.delete_topic(id).await.unwrap();
        assert!(store.partition_state(key).await.unwrap().is_none());
    }
}

#[tokio::test]
async fn concurrent_commits_of_one_range_accept_exactly_one() {
    for backend in common::backends().await {
        let first = backend.open().await;
        let second = backend.open().await;
        let id = topic(first.as_ref(), 1).await;
        let key = PartitionKey {
            topic_id: id,
            partition: 0,
        };
        let epoch = first.bump_leader_epochs(id).await.unwrap()[0];
        let mut accepted = 0;
        for round in 0..20 {
            let base = i64::from(accepted) * 3;
            let stores: [Arc<dyn MetadataStore>; 2] = [first.clone(), second.clone()];
            let tasks: Vec<_> = stores
                .into_iter()
                .enumerate()
                .map(|(n, store)| {
                    let commit = object(
                        &format!("wal/{round}-{n}"),
                        vec![range(key, epoch, base, 3, 0)],
                    );
                    tokio::spawn(async move { store.commit_object(&commit).await })
                })
                .collect();
            let mut won = 0;
            for task in tasks {
                // A conflict (a serialization failure) is a refusal too.
                if let Ok(answer) = task.await.unwrap() {
                    won += answer.iter().filter(|a| **a).count();
                }
            }
            assert!(
                won <= 1,
                "{}: round {round}: {won} commits of one range",
                backend.label
            );
            accepted += u32::try_from(won).unwrap();
        }
        let state = first.partition_state(key).await.unwrap().unwrap();
        assert_eq!(
            state.high_watermark,
            i64::from(accepted) * 3,
            "{}",
            backend.label
        );
        let ranges = first.ranges_from(key, 0, i64::MAX, 100).await.unwrap();
        assert_eq!(ranges.len(), accepted as usize, "{}", backend.label);
    }
}

#[tokio::test]
async fn objects_without_ranges_are_noted_then_listed_after_the_grace_and_forgotten() {
    for backend in common::backends().await {
        let store = backend.open().await;
        let id = topic(store.as_ref(), 2).await;
        let key = |partition| PartitionKey {
            topic_id: id,
            partition,
        };
        let epoch = store.bump_leader_epochs(id).await.unwrap()[0];
        let kept = object("wal/kept", vec![range(key(0), epoch, 0, 10, 0)]);
        let emptied = object("wal/emptied", vec![range(key(1), epoch, 0, 10, 0)]);
        // Every range refused: the object is recorded with nothing in it.
        let refused = object("wal/refused", vec![range(key(1), epoch - 1, 10, 1, 0)]);
        for commit in [&kept, &emptied, &refused] {
            store.commit_object(commit).await.unwrap();
        }
        assert_eq!(store.advance_log_start(key(1), 10).await.unwrap(), 10);
        assert_eq!(
            store.note_unreferenced_objects(1_000).await.unwrap(),
            2,
            "{}",
            backend.label
        );
        assert_eq!(
            store.note_unreferenced_objects(2_000).await.unwrap(),
            0,
            "noted once"
        );
        assert!(
            store
                .unreferenced_objects(1_000, 10)
                .await
                .unwrap()
                .is_empty(),
            "grace"
        );
        let mut doomed = store.unreferenced_objects(1_001, 10).await.unwrap();
        doomed.sort();
        assert_eq!(
            doomed,
            vec!["wal/emptied".to_owned(), "wal/refused".to_owned()]
        );
        let names = ["wal/kept", "wal/emptied", "wal/never"].map(str::to_owned);
        let mut known = store.known_objects(&names).await.unwrap();
        known.sort();
        assert_eq!(known, vec!["wal/emptied".to_owned(), "wal/kept".to_owned()]);
        store.forget_objects(&doomed).await.unwrap();
        assert_eq!(
            store.known_objects(&names).await.unwrap(),
            vec!["wal/kept".to_owned()]
        );
        assert!(
            store
                .unreferenced_objects(i64::MAX, 10)
                .await
                .unwrap()
                .is_empty()
        );
    }
}

#[tokio::test]
async fn compaction_swaps_ranges_only_while_they_are_all_there_at_the_epoch() {
    for backend in common::backends().await {
        let store = backend.open().await;
        let id = topic(store.as_ref(), 1).await;
        let key = PartitionKey {
            topic_id: id,
            partition: 0,
        };
        let epoch = store.bump_leader_epochs(id).await.unwrap()[0];
        for n in 0..6 {
            let commit = object(&format!("wal/{n}"), vec![range(key, epoch, n * 10, 10, 0)]);
            store.commit_object(&commit).await.unwrap();
        }
        // Blocks of 30 offsets each replace ranges 0-29 and 30-59.
        let block = |base: i64, position: i64| RangeCommit {
            producer_state: None,
            ..range(key, epoch, base, 30, position)
        };
        let segment = object("seg/1", vec![block(0, 100), block(30, 3_100)]);
        let all = store.ranges_from(key, 0, i64::MAX, 100).await.unwrap();
        assert_eq!(all.len(), 6);
        assert!(
            !store
                .replace_ranges(key, epoch + 1, &all, &segment)
                .await
                .unwrap(),
            "{}: epoch",
            backend.label
        );
        let mut missing = all.clone();
        missing[5].base_offset = 60;
        missing[5].last_offset = 69;
        assert!(
            !store
                .replace_ranges(key, epoch, &missing, &segment)
                .await
                .unwrap(),
            "a range missing"
        );
        let mut elsewhere = all.clone();
        elsewhere[5].object = "wal/other".to_owned();
        assert!(
            !store
                .replace_ranges(key, epoch, &elsewhere, &segment)
                .await
                .unwrap(),
            "{}: a range at the same offsets in another object is not the one",
            backend.label
        );
        let mut longer = all.clone();
        longer[5].last_offset += 5;
        assert!(
            !store
                .replace_ranges(key, epoch, &longer, &segment)
                .await
                .unwrap(),
            "{}: nor one with other offsets",
            backend.label
        );
        assert_eq!(
            store
                .ranges_from(key, 0, i64::MAX, 100)
                .await
                .unwrap()
                .len(),
            6,
            "nothing changed"
        );
        assert!(
            store
                .replace_ranges(key, epoch, &all, &segment)
                .await
                .unwrap(),
            "{}",
            backend.label
        );
        let ranges = store.ranges_from(key, 0, i64::MAX, 100).await.unwrap();
        let found: Vec<(i64, i64, &str)> = ranges
            .iter()
            .map(|r| (r.base_offset, r.position, r.object.as_str()))
            .collect();
        assert_eq!(
            found,
            vec![(0, 100, "seg/1"), (30, 3_100, "seg/1")],
            "{}",
            backend.label
        );
        let found = store.ranges_from(key, 45, 1, 100).await.unwrap();
        assert_eq!(
            found[0].base_offset, 30,
            "{}: lookups find blocks",
            backend.label
        );
        // The WAL objects are no longer referenced.
        assert_eq!(
            store.note_unreferenced_objects(1).await.unwrap(),
            6,
            "{}",
            backend.label
        );
        assert_eq!(
            store
                .partition_state(key)
                .await
                .unwrap()
                .unwrap()
                .high_watermark,
            60
        );
    }
}

#[tokio::test]
async fn the_cleaned_offset_moves_up_only_at_the_epoch() {
    for backend in common::backends().await {
        let store = backend.open().await;
        let id = topic(store.as_ref(), 1).await;
        let key = PartitionKey {
            topic_id: id,
            partition: 0,
        };
        let epoch = store.bump_leader_epochs(id).await.unwrap()[0];
        let cleaned = |state: Option<spool_metadata::PartitionState>| state.unwrap().cleaned_offset;
        assert_eq!(cleaned(store.partition_state(key).await.unwrap()), 0);
        assert!(store.advance_cleaned_offset(key, epoch, 40).await.unwrap());
        assert!(
            !store
                .advance_cleaned_offset(key, epoch + 1, 90)
                .await
                .unwrap(),
            "{}: another epoch",
            backend.label
        );
        assert!(store.advance_cleaned_offset(key, epoch, 20).await.unwrap());
        assert_eq!(
            cleaned(store.partition_state(key).await.unwrap()),
            40,
            "{}: never back",
            backend.label
        );
    }
}
