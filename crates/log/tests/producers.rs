//! Idempotent producers in the log: a retried batch is answered with its original
//! offsets and not written again, gaps and old epochs are refused, and the state is
//! rebuilt from the log when the partition is reopened.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use common::{open, small_config};
use spool_log::{LogConfig, LogError, ProducerError};
use spool_model::Offset;
use spool_store::{MemoryStore, Store};
use spool_testkit::BatchBuilder;

fn idempotent(producer: i64, epoch: i16, sequence: i32, records: usize) -> Vec<u8> {
    BatchBuilder::new()
        .producer(producer, epoch, sequence)
        .values(records, 10)
        .build()
}

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 1 << 20,
        ..small_config()
    }
}

#[test]
fn retries_are_not_written_twice_and_gaps_are_refused() {
    let log = open(Arc::new(MemoryStore::new()), config());
    let first = idempotent(5, 0, 0, 3);
    let appended = log.append(&[&first]).unwrap();
    assert_eq!(
        (appended.base_offset, appended.duplicate),
        (Offset(0), false)
    );
    log.append(&[&idempotent(5, 0, 3, 2)]).unwrap();
    let retried = log.append(&[&first]).unwrap();
    assert!(retried.duplicate);
    assert_eq!(
        (retried.base_offset, retried.last_offset),
        (Offset(0), Offset(2))
    );
    assert_eq!(
        log.offsets().log_end,
        Offset(5),
        "nothing written for the retry"
    );

    let gap = log.append(&[&idempotent(5, 0, 9, 1)]).unwrap_err();
    assert!(matches!(
        gap,
        LogError::Producer(ProducerError::OutOfOrderSequence {
            expected: 5,
            received: 9,
            ..
        })
    ));
    log.append(&[&idempotent(5, 1, 0, 1)]).unwrap();
    let fenced = log.append(&[&idempotent(5, 0, 5, 1)]).unwrap_err();
    assert!(matches!(
        fenced,
        LogError::Producer(ProducerError::InvalidEpoch { .. })
    ));
    let stranger = log.append(&[&idempotent(6, 0, 40, 1)]).unwrap_err();
    assert!(matches!(
        stranger,
        LogError::Producer(ProducerError::UnknownProducer { .. })
    ));
    let plain = BatchBuilder::new().values(1, 10).build();
    let crowded = log.append(&[&idempotent(5, 1, 1, 1), &plain]).unwrap_err();
    assert!(matches!(
        crowded,
        LogError::Producer(ProducerError::NotAlone { .. })
    ));
    log.append(&[&plain, &plain]).unwrap();
}

#[test]
fn producer_state_is_rebuilt_when_the_log_is_reopened() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let first = idempotent(9, 2, 0, 4);
    {
        let log = open(store.clone(), config());
        log.append(&[&first]).unwrap();
        log.append(&[&idempotent(9, 2, 4, 1)]).unwrap();
        log.sync().unwrap();
        log.close().unwrap();
    }
    let log = open(store, config());
    let retried = log.append(&[&first]).unwrap();
    assert!(retried.duplicate, "recognised after the reopen");
    assert_eq!(retried.base_offset, Offset(0));
    let next = log.append(&[&idempotent(9, 2, 5, 1)]).unwrap();
    assert_eq!((next.base_offset, next.duplicate), (Offset(5), false));
    assert!(matches!(
        log.append(&[&idempotent(9, 2, 7, 1)]).unwrap_err(),
        LogError::Producer(ProducerError::OutOfOrderSequence { expected: 6, .. })
    ));
}

/// Idempotent batches of producer 9, then enough plain ones to roll a few segments,
/// so that the producer's newest batch lies in an old segment.
fn producer_then_other_traffic(log: &spool_log::PartitionLog) -> Vec<u8> {
    let first = idempotent(9, 2, 0, 4);
    log.append(&[&first]).unwrap();
    log.append(&[&idempotent(9, 2, 4, 1)]).unwrap();
    for _ in 0..40 {
        log.append(&[&BatchBuilder::new().values(4, 100).build()])
            .unwrap();
    }
    first
}

fn small_segments() -> LogConfig {
    LogConfig {
        segment_bytes: 2048,
        ..small_config()
    }
}

fn segment_zero() -> std::path::PathBuf {
    std::path::Path::new(common::DIR).join("00000000000000000000.log")
}

#[test]
fn producers_in_older_segments_come_back_from_the_checkpoint_snapshot() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let first;
    {
        let log = open(store.clone(), small_segments());
        first = producer_then_other_traffic(&log);
        log.close().unwrap();
    }
    // Change the producer id in the first segment's header: the reopened log must
    // take the producer from the snapshot, not from reading that segment again.
    let file = store
        .open(&segment_zero(), spool_store::OpenMode::ReadWrite)
        .unwrap();
    file.write_at(&77i64.to_be_bytes(), 43).unwrap();

    let log = open(store, small_segments());
    assert!(log.offsets().log_end > Offset(40), "segments rolled");
    let retried = log.append(&[&first]).unwrap();
    assert!(retried.duplicate, "recognised after the reopen");
    assert_eq!(retried.base_offset, Offset(0));
    let next = log.append(&[&idempotent(9, 2, 5, 1)]).unwrap();
    assert!(!next.duplicate);
    assert!(matches!(
        log.append(&[&idempotent(77, 0, 9, 1)]).unwrap_err(),
        LogError::Producer(ProducerError::UnknownProducer { .. })
    ));
}

#[test]
fn without_a_checkpoint_every_segment_is_read() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let first;
    {
        let log = open(store.clone(), small_segments());
        first = producer_then_other_traffic(&log);
        log.close().unwrap();
    }
    store
        .remove_file(&std::path::Path::new(common::DIR).join("checkpoint"))
        .unwrap();
    let log = open(store, small_segments());
    assert!(log.append(&[&first]).unwrap().duplicate);
    assert!(!log.append(&[&idempotent(9, 2, 5, 1)]).unwrap().duplicate);
}

/// Writes with `write` to a new log and crashes the machine (unsynced bytes are lost,
/// nothing is closed); returns the store to reopen.
fn crash_after(write: impl FnOnce(&spool_log::PartitionLog)) -> Arc<dyn Store> {
    let store = MemoryStore::new();
    let shared: Arc<dyn Store> = Arc::new(store.clone());
    write(&open(shared.clone(), config()));
    store.crash(
        spool_store::CrashMode::DropUnsynced,
        &mut fastrand::Rng::with_seed(1),
    );
    shared
}

/// Producer 4's batch at offset 0 synced, then `second` (producer 4, sequences 1–2)
/// appended, synced or not, and a checkpoint written before or after it.
fn producer_four_then(second: &[u8], sync_second: bool, checkpoint_first: bool) -> Arc<dyn Store> {
    crash_after(|log| {
        log.append(&[&idempotent(4, 0, 0, 1)]).unwrap();
        log.sync().unwrap();
        if checkpoint_first {
            log.write_checkpoint().unwrap();
        }
        log.append(&[second]).unwrap();
        if sync_second {
            log.sync().unwrap();
        }
        if !checkpoint_first {
            log.write_checkpoint().unwrap();
        }
    })
}

#[test]
fn batches_after_the_snapshot_are_read_after_a_crash() {
    let late = idempotent(4, 0, 1, 2);
    let store = producer_four_then(&late, true, true);
    let log = open(store, config());
    let retried = log.append(&[&late]).unwrap();
    assert!(retried.duplicate, "read from the log after the snapshot");
    assert_eq!(retried.base_offset, Offset(1));
}

#[test]
fn a_snapshot_beyond_what_survived_a_crash_is_not_trusted() {
    let lost = idempotent(4, 0, 1, 2);
    // The snapshot (at the log end) has seen a batch that was never synced.
    let store = producer_four_then(&lost, false, false);
    let log = open(store, config());
    assert_eq!(
        log.offsets().log_end,
        Offset(1),
        "the unsynced batch is gone"
    );
    let resent = log.append(&[&lost]).unwrap();
    assert!(
        !resent.duplicate,
        "the lost batch is written again, not answered from a stale snapshot"
    );
    assert_eq!(resent.base_offset, Offset(1));
}

#[test]
fn a_refused_snapshot_is_replaced_before_the_log_grows_past_it_again() {
    let lost = idempotent(4, 0, 1, 2);
    let shared = producer_four_then(&lost, false, false);
    // Another producer's batch of the same size puts a batch boundary exactly where
    // the refused snapshot was taken; then the broker dies before any new checkpoint.
    let other = idempotent(5, 0, 0, 2);
    {
        let log = open(shared.clone(), config());
        assert_eq!(log.offsets().log_end, Offset(1));
        log.append(&[&other]).unwrap();
        log.sync().unwrap();
    }
    let log = open(shared, config());
    assert!(
        log.append(&[&other]).unwrap().duplicate,
        "the other producer's batch is remembered"
    );
    assert!(
        !log.append(&[&lost]).unwrap().duplicate,
        "the lost batch is not taken for written"
    );
}
