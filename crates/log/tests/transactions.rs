//! Transactions in the log: the last stable offset holds read_committed readers below
//! an open transaction, markers decide it once they are below the high watermark,
//! aborted transactions are listed, and all of it comes back after a reopen or a
//! crash. Retention and DeleteRecords stop at an open transaction.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use common::{open, small_config};
use spool_log::{AbortedTxn, Isolation, LogConfig, LogError, PartitionLog};
use spool_model::{Offset, Timestamp};
use spool_protocol::control::{Marker, marker_batch};
use spool_store::{MemoryStore, Store};
use spool_testkit::BatchBuilder;

const TRANSACTIONAL: i16 = 1 << 4;

fn txn_batch(producer: i64, epoch: i16, sequence: i32, records: usize) -> Vec<u8> {
    BatchBuilder::new()
        .producer(producer, epoch, sequence)
        .attributes(TRANSACTIONAL)
        .values(records, 10)
        .build()
}

fn plain(records: usize) -> Vec<u8> {
    BatchBuilder::new().values(records, 10).build()
}

/// A plain batch of one 400-byte record: a 1 KiB segment holds two.
fn big() -> Vec<u8> {
    BatchBuilder::new().values(1, 400).build()
}

fn marker(producer: i64, epoch: i16, commit: bool) -> Vec<u8> {
    marker_batch(
        producer,
        epoch,
        Marker::from_commit(commit),
        0,
        Timestamp(1),
    )
}

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 1 << 20,
        ..small_config()
    }
}

fn committed_offsets(log: &PartitionLog, from: Offset) -> (Vec<Offset>, Vec<AbortedTxn>) {
    let read = log
        .read_isolated(from, 1 << 20, true, Isolation::ReadCommitted)
        .unwrap();
    let bytes = read.to_vec().unwrap();
    let bases = spool_protocol::batch::BatchFrames::new(&bytes)
        .map(|frame| frame.unwrap().0.base_offset)
        .collect();
    (bases, read.aborted)
}

/// Producer 1 commits offsets 0-1 (marker 4), producer 2 aborts 2-3 (marker 5).
fn two_transactions(log: &PartitionLog) {
    log.append(&[&txn_batch(1, 0, 0, 2)]).unwrap();
    log.append(&[&txn_batch(2, 0, 0, 2)]).unwrap();
    log.sync().unwrap();
    assert_eq!(log.stable_offset(), Offset(0), "both open");
    let (read, _) = committed_offsets(log, Offset(0));
    assert!(read.is_empty(), "read_committed sees nothing open");
    assert_eq!(
        log.read(Offset(0), 1 << 20).unwrap().len(),
        log.read_isolated(Offset(0), 1 << 20, true, Isolation::ReadUncommitted)
            .unwrap()
            .len()
    );
    log.append(&[&marker(1, 0, true)]).unwrap();
    assert_eq!(
        log.stable_offset(),
        Offset(0),
        "a marker not yet durable decides nothing"
    );
    log.append(&[&marker(2, 0, false)]).unwrap();
    log.sync().unwrap();
    assert_eq!(log.stable_offset(), Offset(6));
}

#[test]
fn read_committed_stops_at_open_transactions_and_lists_aborted_ones() {
    let log = open(Arc::new(MemoryStore::new()), config());
    two_transactions(&log);
    let (read, aborted) = committed_offsets(&log, Offset(0));
    assert_eq!(read, vec![Offset(0), Offset(2), Offset(4), Offset(5)]);
    assert_eq!(
        aborted,
        vec![AbortedTxn {
            producer_id: 2,
            first_offset: Offset(2),
            last_offset: Offset(5)
        }]
    );
    // A third transaction holds readers at its first offset, plain data or not.
    log.append(&[&plain(1)]).unwrap();
    log.append(&[&txn_batch(1, 0, 2, 1)]).unwrap();
    log.append(&[&plain(1)]).unwrap();
    log.sync().unwrap();
    assert_eq!(log.offsets().high_watermark, Offset(9));
    assert_eq!(log.stable_offset(), Offset(7));
    let (read, aborted) = committed_offsets(&log, Offset(6));
    assert_eq!(read, vec![Offset(6)]);
    assert!(aborted.is_empty(), "nothing aborted from offset 6 on");
    assert_eq!(log.open_transactions(), vec![(1, Offset(7))]);
}

#[test]
fn transactions_come_back_after_a_reopen_and_after_a_crash() {
    for checkpointed in [true, false] {
        let memory = MemoryStore::new();
        let store: Arc<dyn Store> = Arc::new(memory.clone());
        {
            let log = open(store.clone(), config());
            two_transactions(&log);
            log.append(&[&txn_batch(1, 0, 2, 1)]).unwrap();
            log.sync().unwrap();
            if checkpointed {
                log.write_checkpoint().unwrap();
            }
            // Unsynced: lost in the crash.
            log.append(&[&marker(1, 0, true)]).unwrap();
        }
        memory.crash(
            spool_store::CrashMode::DropUnsynced,
            &mut fastrand::Rng::with_seed(3),
        );
        let log = open(store, config());
        assert_eq!(log.offsets().log_end, Offset(7), "the marker was lost");
        assert_eq!(log.stable_offset(), Offset(6), "{checkpointed}");
        let (_, aborted) = committed_offsets(&log, Offset(0));
        assert_eq!(aborted.len(), 1, "{checkpointed}");
        assert_eq!(log.open_transactions(), vec![(1, Offset(6))]);
        log.append(&[&marker(1, 0, true)]).unwrap();
        log.sync().unwrap();
        assert_eq!(log.stable_offset(), Offset(8));
    }
}

#[test]
fn a_marker_of_a_newer_epoch_fences_the_older_one() {
    let log = open(Arc::new(MemoryStore::new()), config());
    log.append(&[&txn_batch(1, 0, 0, 1)]).unwrap();
    log.append(&[&marker(1, 1, false)]).unwrap();
    assert!(matches!(
        log.append(&[&txn_batch(1, 0, 1, 1)]).unwrap_err(),
        LogError::Producer(spool_log::ProducerError::InvalidEpoch { current: 1, .. })
    ));
    log.append(&[&txn_batch(1, 1, 0, 1)]).unwrap();
    assert!(
        matches!(
            log.append(&[&marker(1, 0, true)]).unwrap_err(),
            LogError::Producer(spool_log::ProducerError::InvalidEpoch { .. })
        ),
        "a stale marker would end the newer epoch's transaction"
    );
    assert_eq!(log.open_transactions(), vec![(1, Offset(2))]);
}

#[test]
fn delete_records_and_retention_stop_at_an_open_transaction() {
    let log = open(
        Arc::new(MemoryStore::new()),
        LogConfig {
            segment_bytes: 1024,
            retention_ms: Some(1),
            ..small_config()
        },
    );
    log.append(&[&big()]).unwrap();
    log.append(&[&txn_batch(1, 0, 0, 1)]).unwrap();
    for _ in 0..5 {
        log.append(&[&big()]).unwrap();
    }
    log.sync().unwrap();
    assert_eq!(log.stable_offset(), Offset(1));
    assert!(matches!(
        log.advance_log_start(Offset(3)),
        Err(LogError::OffsetBeyondStableOffset { .. })
    ));
    assert_eq!(log.advance_log_start(Offset(1)).unwrap(), Offset(1));
    log.enforce_retention(Timestamp::now()).unwrap();
    assert!(log.offsets().log_start <= Offset(1), "{:?}", log.offsets());
    log.append(&[&marker(1, 0, true)]).unwrap();
    log.append(&[&big()]).unwrap();
    log.append(&[&big()]).unwrap();
    log.sync().unwrap();
    log.enforce_retention(Timestamp::now()).unwrap();
    assert!(log.offsets().log_start > Offset(1), "{:?}", log.offsets());
}

fn keyed(key: &str, value: &str, producer: Option<(i64, i32)>) -> Vec<u8> {
    let mut builder = BatchBuilder::new().record(spool_testkit::TestRecord {
        key: Some(key.as_bytes().to_vec()),
        value: Some(value.as_bytes().to_vec()),
        ..spool_testkit::TestRecord::default()
    });
    if let Some((id, sequence)) = producer {
        builder = builder.producer(id, 0, sequence).attributes(TRANSACTIONAL);
    }
    builder.build()
}

/// The values of `key` left in the log, oldest first.
fn values_of(log: &PartitionLog, key: &str) -> Vec<String> {
    let mut values = Vec::new();
    let mut offset = log.offsets().log_start;
    while offset < log.offsets().high_watermark {
        let bytes = log.read(offset, 1 << 20).unwrap().to_vec().unwrap();
        for frame in spool_protocol::batch::BatchFrames::new(&bytes) {
            let (header, batch) = frame.unwrap();
            offset = header.next_offset();
            if header.is_control() {
                continue;
            }
            let records = spool_protocol::keyed::BatchRecords::read(batch, 1 << 20).unwrap();
            for record in records.records().unwrap() {
                if record.key == Some(key.as_bytes()) {
                    let value = record.value.unwrap_or_default().to_vec();
                    values.push(String::from_utf8(value).unwrap());
                }
            }
        }
    }
    values
}

#[test]
fn the_cleaner_keeps_committed_values_over_aborted_ones_and_stops_at_open_transactions() {
    let log = open(
        Arc::new(MemoryStore::new()),
        LogConfig {
            segment_bytes: 1024,
            cleanup: spool_log::Cleanup {
                delete: false,
                compact: true,
                min_dirty_ratio_ppm: 0,
                min_lag_ms: 0,
                max_lag_ms: u64::MAX,
                delete_retention_ms: 1000,
            },
            ..small_config()
        },
    );
    let settings = spool_log::CleanerSettings {
        dedupe_buffer_bytes: 1 << 20,
        io_bytes_per_second: None,
    };
    let clean = || {
        log.clean(
            Timestamp(2_000_000_000_000),
            &settings,
            &std::sync::atomic::AtomicBool::new(false),
        )
        .unwrap()
    };
    let fill = |round: usize| {
        // Enough plain records to close the segments before them.
        for i in 0..30 {
            log.append(&[&keyed(&format!("filler-{round}-{i}"), "x", None)])
                .unwrap();
        }
        log.sync().unwrap();
    };
    log.append(&[&keyed("k", "committed", None)]).unwrap();
    log.append(&[&keyed("k", "aborted", Some((1, 0)))]).unwrap();
    log.append(&[&marker(1, 0, false)]).unwrap();
    fill(0);
    assert!(clean().is_some(), "a pass ran");
    assert!(
        values_of(&log, "k").contains(&"committed".to_owned()),
        "an aborted record never replaces the committed one: {:?}",
        values_of(&log, "k")
    );

    log.append(&[&keyed("o", "old", None)]).unwrap();
    log.append(&[&keyed("o", "open", Some((2, 0)))]).unwrap();
    fill(1);
    clean();
    assert_eq!(
        values_of(&log, "o"),
        vec!["old", "open"],
        "nothing at or past an open transaction is cleaned"
    );
}
