//! A log at its own offsets (a mirror's copy of another cluster's log): batches keep
//! the offsets they carry, gaps included, across segment rolls and a reopen; a batch
//! before the log end is refused; nothing the source stamped is restamped.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use common::{open, read_all, small_config};
use spool_log::{LogConfig, LogError, PartitionLog};
use spool_model::{Offset, RecordBatchHeader, TimestampType};
use spool_store::{MemoryStore, Store};
use spool_testkit::BatchBuilder;

fn config() -> LogConfig {
    LogConfig {
        own_offsets: true,
        ..small_config()
    }
}

fn at(offset: i64, records: usize) -> Vec<u8> {
    BatchBuilder::new()
        .base_offset(offset)
        .timestamp(1_234)
        .values(records, 300)
        .build()
}

fn append(log: &PartitionLog, batches: &[Vec<u8>]) {
    let slices: Vec<&[u8]> = batches.iter().map(Vec::as_slice).collect();
    log.append_at_own_offsets(&slices).unwrap();
    log.sync().unwrap();
}

fn bases(log: &PartitionLog, from: i64) -> Vec<i64> {
    read_all(log, Offset(from))
        .into_iter()
        .map(|(base, _)| base.0)
        .collect()
}

#[test]
fn batches_keep_their_offsets_and_gaps_across_rolls_and_a_reopen() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let log = open(store.clone(), config());
    // 4 KiB segments, ~1 KiB batches: several rolls, with gaps inside and across.
    let wanted: Vec<i64> = vec![0, 10, 13, 100, 103, 250, 400, 403, 406, 1_000];
    let batches: Vec<Vec<u8>> = wanted.iter().map(|&offset| at(offset, 3)).collect();
    append(&log, &batches[..4]);
    append(&log, &batches[4..]);
    assert_eq!(log.offsets().log_end, Offset(1_003));
    assert_eq!(bases(&log, 0), wanted);
    assert_eq!(
        bases(&log, 200),
        vec![250, 400, 403, 406, 1_000],
        "a read in a gap"
    );
    log.close().unwrap();

    // Without a checkpoint, recovery scans every batch: the gaps must pass its checks.
    store.remove_file(&checkpoint()).unwrap();
    let reopened = open(store.clone(), config());
    assert_eq!(
        reopened.offsets().log_end,
        Offset(1_003),
        "recovery kept the gaps"
    );
    assert_eq!(bases(&reopened, 0), wanted);
    reopened.close().unwrap();

    // What the flag is for: a log that assigns its offsets takes a gap for a lost tail.
    store.remove_file(&checkpoint()).unwrap();
    let assigning = open(store, small_config());
    assert_eq!(assigning.offsets().log_end, Offset(3));
}

fn checkpoint() -> std::path::PathBuf {
    std::path::Path::new(common::DIR).join("checkpoint")
}

#[test]
fn a_batch_before_the_log_end_is_refused_and_nothing_is_written() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let log = open(store, config());
    append(&log, &[at(50, 5)]);
    let overlapping = at(52, 1);
    let later = at(60, 1);
    let refused = log.append_at_own_offsets(&[later.as_slice(), overlapping.as_slice()]);
    assert!(
        matches!(
            refused,
            Err(LogError::OffsetBeforeLogEnd {
                offset: Offset(52),
                log_end: Offset(61)
            })
        ),
        "{refused:?}"
    );
    assert_eq!(log.offsets().log_end, Offset(55));
    assert_eq!(bases(&log, 0), vec![50]);
}

#[test]
fn a_first_batch_far_past_an_empty_log_and_the_sources_timestamps_are_kept() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let far = 5_000_000_000;
    let config = LogConfig {
        timestamp_type: TimestampType::LogAppendTime,
        ..config()
    };
    let log = open(store.clone(), config.clone());
    append(&log, &[at(far, 2), at(far + 2, 1)]);
    assert_eq!(log.offsets().log_end, Offset(far + 3));
    let read = read_all(&log, Offset(far));
    assert_eq!(read.len(), 2);
    let header = RecordBatchHeader::parse(&read[0].1).unwrap();
    assert_eq!(header.max_timestamp.0, 1_234, "not restamped");
    assert_eq!(
        header.attributes, 0,
        "still CreateTime, as the source wrote it"
    );
    log.close().unwrap();
    let reopened = open(store, config);
    assert_eq!(reopened.offsets().log_end, Offset(far + 3));
    assert_eq!(bases(&reopened, far), vec![far, far + 2]);
}
