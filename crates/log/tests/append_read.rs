//! Appending, reading, rolling, retention, lookups by timestamp.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use common::{batch, open, read_all, small_config, unpatched};
use spool_log::{FlushPolicy, LogConfig, LogError, ReadChunk};
use spool_model::{Offset, Timestamp, TimestampType};
use spool_store::{MemoryStore, Store};

fn memory() -> Arc<dyn Store> {
    Arc::new(MemoryStore::new())
}

#[test]
fn offsets_are_assigned_in_order_and_reads_return_the_same_bytes() {
    let log = open(memory(), small_config());
    let batches: Vec<Vec<u8>> = (0..20)
        .map(|i| batch(i % 4 + 1, 50, 1000 + i as i64))
        .collect();
    let mut expected = Vec::new();
    let mut next = Offset(0);
    for chunk in batches.chunks(3) {
        let slices: Vec<&[u8]> = chunk.iter().map(Vec::as_slice).collect();
        let info = log.append(&slices).unwrap();
        assert_eq!(info.base_offset, next);
        for b in chunk {
            expected.push((next, b.clone()));
            next = next.plus(
                spool_model::RecordBatchHeader::parse(b)
                    .unwrap()
                    .record_count
                    .into(),
            );
        }
        assert_eq!(info.next_offset(), next);
    }
    log.sync().unwrap();
    let offsets = log.offsets();
    assert_eq!(offsets.log_end, next);
    assert_eq!(offsets.high_watermark, next);
    assert_eq!(read_all(&log, Offset(0)), expected);
}

#[test]
fn durable_policy_hides_data_until_synced() {
    let log = open(memory(), small_config());
    log.append(&[&batch(3, 10, 1)]).unwrap();
    let offsets = log.offsets();
    assert_eq!(
        (offsets.log_end, offsets.high_watermark, offsets.durable),
        (Offset(3), Offset(0), Offset(0))
    );
    assert!(log.read(Offset(0), 1 << 20).unwrap().is_empty());
    assert_eq!(log.sync().unwrap(), Offset(3));
    assert_eq!(log.offsets().high_watermark, Offset(3));
    assert!(!log.read(Offset(0), 1 << 20).unwrap().is_empty());
}

#[test]
fn interval_policy_shows_data_before_it_is_durable() {
    let config = LogConfig {
        flush: FlushPolicy::Interval {
            ms: Some(60_000),
            messages: None,
        },
        ..small_config()
    };
    let log = open(memory(), config);
    log.append(&[&batch(3, 10, 1)]).unwrap();
    let offsets = log.offsets();
    assert_eq!(
        (offsets.high_watermark, offsets.durable),
        (Offset(3), Offset(0))
    );
}

#[test]
fn a_read_reaching_into_a_batch_starts_at_that_batch() {
    let log = open(memory(), small_config());
    log.append(&[&batch(5, 10, 1), &batch(5, 10, 2)]).unwrap();
    log.sync().unwrap();
    let read = log.read(Offset(7), 1 << 20).unwrap();
    let bytes = read.to_vec().unwrap();
    let header = spool_model::RecordBatchHeader::parse(&bytes).unwrap();
    assert_eq!(header.base_offset, Offset(5));
    assert_eq!(bytes.len(), header.total_len());
}

#[test]
fn the_byte_budget_counts_whole_batches_and_always_returns_the_first() {
    let log = open(
        memory(),
        LogConfig {
            segment_bytes: 1 << 20,
            ..small_config()
        },
    );
    let big = batch(1, 3000, 1);
    let small = batch(1, 100, 1);
    log.append(&[&big, &small, &small]).unwrap();
    log.sync().unwrap();
    let read = log.read(Offset(0), 10).unwrap();
    assert_eq!(
        read.len(),
        big.len() as u64,
        "first batch is whole even if over budget"
    );
    let read = log.read(Offset(1), small.len() as u64 * 2 - 1).unwrap();
    assert_eq!(
        read.len(),
        small.len() as u64,
        "second batch would pass the budget"
    );
    let read = log.read(Offset(1), small.len() as u64 * 2).unwrap();
    assert_eq!(read.len(), small.len() as u64 * 2);
}

#[test]
fn out_of_range_offsets_are_distinct_errors() {
    let log = open(memory(), small_config());
    log.append(&[&batch(4, 10, 1)]).unwrap();
    log.sync().unwrap();
    assert!(
        log.read(Offset(4), 100).unwrap().is_empty(),
        "reading at the end is empty, not an error"
    );
    assert!(matches!(
        log.read(Offset(5), 100),
        Err(LogError::OffsetBeyondHighWatermark {
            requested: Offset(5),
            high_watermark: Offset(4)
        })
    ));
    log.advance_log_start(Offset(2)).unwrap();
    assert!(matches!(
        log.read(Offset(1), 100),
        Err(LogError::OffsetBelowLogStart {
            requested: Offset(1),
            log_start: Offset(2)
        })
    ));
    assert!(matches!(
        log.advance_log_start(Offset(9)),
        Err(LogError::OffsetBeyondHighWatermark { .. })
    ));
}

#[test]
fn segments_roll_on_size_and_reads_cross_them() {
    let store = memory();
    let log = open(store.clone(), small_config());
    for i in 0..40 {
        log.append(&[&batch(2, 200, i)]).unwrap();
    }
    log.sync().unwrap();
    let files = segments_in(&store);
    assert!(files.len() >= 4, "4 KiB segments must roll: {files:?}");
    assert!(files.iter().all(|(_, size)| *size <= 4096));
    let all = read_all(&log, Offset(0));
    assert_eq!(all.len(), 40);
    for (i, (offset, _)) in all.iter().enumerate() {
        assert_eq!(*offset, Offset(2 * i as i64));
    }
}

#[test]
fn segments_roll_on_age() {
    let store = memory();
    let log = open(
        store.clone(),
        LogConfig {
            segment_ms: Some(1),
            ..small_config()
        },
    );
    log.append(&[&batch(1, 10, 1)]).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    log.append(&[&batch(1, 10, 2)]).unwrap();
    assert_eq!(
        segments_in(&store).iter().map(|s| s.0).collect::<Vec<_>>(),
        vec![0, 1]
    );
}

#[test]
fn retention_by_size_deletes_oldest_closed_segments_but_never_the_active_one() {
    let store = memory();
    let log = open(
        store.clone(),
        LogConfig {
            retention_bytes: Some(8192),
            ..small_config()
        },
    );
    for i in 0..60 {
        log.append(&[&batch(1, 300, i)]).unwrap();
    }
    log.sync().unwrap();
    let before = segments_in(&store);
    let deleted = log.enforce_retention(Timestamp::now()).unwrap();
    let after = segments_in(&store);
    assert!(deleted > 0);
    assert_eq!(before.len() - deleted, after.len());
    let sizes: u64 = after.iter().map(|(_, size)| size).sum();
    let active = after.last().unwrap().1;
    assert!(
        sizes - active <= 8192 + 4096,
        "closed segments trimmed near the limit: {sizes}"
    );
    assert_eq!(log.offsets().log_start.0, after.first().unwrap().0);
    assert!(log.read(Offset(0), 10).is_err());
    assert!(!read_all(&log, log.offsets().log_start).is_empty());

    let tiny = open(
        memory(),
        LogConfig {
            retention_bytes: Some(1),
            ..small_config()
        },
    );
    tiny.append(&[&batch(1, 100, 1)]).unwrap();
    tiny.sync().unwrap();
    assert_eq!(
        tiny.enforce_retention(Timestamp::now()).unwrap(),
        0,
        "the active segment stays"
    );
}

#[test]
fn retention_by_time_uses_the_newest_record_of_each_segment() {
    let store = memory();
    let log = open(
        store.clone(),
        LogConfig {
            retention_ms: Some(1000),
            ..small_config()
        },
    );
    let now = 1_000_000;
    for i in 0..30 {
        // Old records first, then new ones.
        let timestamp = if i < 20 { now - 5000 } else { now };
        log.append(&[&batch(1, 300, timestamp)]).unwrap();
    }
    log.sync().unwrap();
    let deleted = log.enforce_retention(Timestamp(now)).unwrap();
    assert!(deleted > 0);
    let start = log.offsets().log_start;
    // 11 batches fit a segment: [0, 11) is all old and goes; [11, 22) holds new ones.
    assert_eq!(start, Offset(11), "exactly the all-old segments deleted");
    let survivors = read_all(&log, start);
    assert!(survivors.iter().any(|(o, _)| *o == Offset(29)));
}

#[test]
fn delete_records_moves_the_start_and_survives_reopen() {
    let store = memory();
    let log = open(store.clone(), small_config());
    for i in 0..30 {
        log.append(&[&batch(1, 300, i)]).unwrap();
    }
    log.sync().unwrap();
    assert_eq!(log.advance_log_start(Offset(17)).unwrap(), Offset(17));
    assert_eq!(
        log.advance_log_start(Offset(3)).unwrap(),
        Offset(17),
        "never moves back"
    );
    assert!(
        segments_in(&store).first().unwrap().0 > 0,
        "whole segments below the start are gone"
    );
    drop(log);
    let log = open(store, small_config());
    assert_eq!(log.offsets().log_start, Offset(17));
    assert_eq!(read_all(&log, Offset(17)).first().unwrap().0, Offset(17));
}

#[test]
fn offset_for_timestamp_finds_the_first_record_at_or_after() {
    let log = open(memory(), small_config());
    // 50 batches of 3 records, batch i at 1000 + 10 i, records +0, +1, +2 ms.
    for i in 0..50i64 {
        let mut builder = spool_testkit::BatchBuilder::new().timestamp(1000 + 10 * i);
        for delta in 0..3 {
            builder = builder.record(spool_testkit::TestRecord {
                timestamp_delta: delta,
                ..spool_testkit::TestRecord::value(vec![0u8; 100])
            });
        }
        log.append(&[&builder.build()]).unwrap();
    }
    log.sync().unwrap();
    let lookup = |t: i64| log.offset_for_timestamp(Timestamp(t)).unwrap();
    assert_eq!(lookup(0), Some((Offset(0), Timestamp(1000))));
    assert_eq!(lookup(1000), Some((Offset(0), Timestamp(1000))));
    assert_eq!(lookup(1001), Some((Offset(1), Timestamp(1001))));
    assert_eq!(lookup(1003), Some((Offset(3), Timestamp(1010))));
    assert_eq!(lookup(1252), Some((Offset(77), Timestamp(1252))));
    assert_eq!(lookup(1492), Some((Offset(149), Timestamp(1492))));
    assert_eq!(lookup(1493), None);
    for t in (1000..1493).step_by(7) {
        let (offset, found) = lookup(t).unwrap();
        let i = (t - 1000) / 10;
        let within = (t - 1000) % 10;
        let expected = if within <= 2 {
            3 * i + within
        } else {
            3 * (i + 1)
        };
        assert_eq!(offset, Offset(expected), "target {t}");
        assert!(found >= Timestamp(t));
    }
}

#[test]
fn the_max_timestamp_is_found_across_segments_to_the_record() {
    let store = memory();
    let log = open(store.clone(), small_config());
    assert_eq!(log.max_timestamp_offset().unwrap(), None, "empty log");
    // Timestamps rise to a peak of 9_000 at offset 61 (batch 20, record 1), which two
    // later records repeat, then fall: the first record with the peak is the answer.
    for i in 0..40i64 {
        let base = if i < 20 { 1000 + i } else { 8998 - i };
        let mut builder = spool_testkit::BatchBuilder::new().timestamp(base);
        for delta in 0..3 {
            let peak = (i == 20 && delta >= 1) || (i == 21 && delta == 0);
            builder = builder.record(spool_testkit::TestRecord {
                timestamp_delta: if peak { 9000 - base } else { delta },
                ..spool_testkit::TestRecord::value(vec![0u8; 100])
            });
        }
        log.append(&[&builder.build()]).unwrap();
    }
    log.sync().unwrap();
    assert!(segments_in(&store).len() > 2, "spans segments");
    assert_eq!(
        log.max_timestamp_offset().unwrap(),
        Some((Offset(61), Timestamp(9000)))
    );
}

#[test]
fn the_max_timestamp_counts_only_visible_records_at_or_after_the_log_start() {
    let config = LogConfig {
        segment_bytes: 1 << 20,
        ..small_config()
    };
    let log = open(memory(), config);
    let at = |t: i64| {
        spool_testkit::BatchBuilder::new()
            .timestamp(t)
            .values(2, 10)
            .build()
    };
    log.append(&[&at(9000), &at(2000), &at(3000), &at(1000)])
        .unwrap();
    log.sync().unwrap();
    assert_eq!(
        log.max_timestamp_offset().unwrap(),
        Some((Offset(0), Timestamp(9000)))
    );
    // The newest batch is below the log start now, in the same segment.
    log.advance_log_start(Offset(2)).unwrap();
    assert_eq!(
        log.max_timestamp_offset().unwrap(),
        Some((Offset(4), Timestamp(3000)))
    );
    // Written but not yet durable, so not visible: it does not count.
    log.append(&[&at(99_000)]).unwrap();
    assert_eq!(log.offsets().high_watermark, Offset(8));
    assert_eq!(
        log.max_timestamp_offset().unwrap(),
        Some((Offset(4), Timestamp(3000)))
    );
    log.sync().unwrap();
    assert_eq!(
        log.max_timestamp_offset().unwrap(),
        Some((Offset(8), Timestamp(99_000)))
    );
}

#[test]
fn offset_for_timestamp_is_batch_granular_for_compressed_batches() {
    let log = open(memory(), small_config());
    let compressed = spool_testkit::BatchBuilder::new()
        .timestamp(500)
        .values(4, 10)
        .attributes(1)
        .build();
    log.append(&[&batch(2, 10, 100), &compressed]).unwrap();
    log.sync().unwrap();
    assert_eq!(
        log.offset_for_timestamp(Timestamp(400)).unwrap(),
        Some((Offset(2), Timestamp(500)))
    );
}

#[test]
fn log_append_time_overwrites_the_max_timestamp_and_keeps_the_crc_valid() {
    let config = LogConfig {
        timestamp_type: TimestampType::LogAppendTime,
        ..small_config()
    };
    let log = open(memory(), config);
    let before = Timestamp::now();
    let info = log.append(&[&batch(2, 10, 5)]).unwrap();
    log.sync().unwrap();
    let stamped = info.log_append_time.unwrap();
    assert!(stamped >= before);
    let bytes = log.read(Offset(0), 1 << 20).unwrap().to_vec().unwrap();
    let header =
        spool_protocol::batch::validate_batch(&bytes, spool_protocol::batch::BatchRules::Stored)
            .unwrap();
    assert_eq!(header.max_timestamp, stamped);
    assert_eq!(header.timestamp_type(), TimestampType::LogAppendTime);
}

#[test]
fn malformed_input_to_append_is_refused_and_writes_nothing() {
    let log = open(memory(), small_config());
    let good = batch(1, 10, 1);
    let mut extra = good.clone();
    extra.push(0);
    assert!(matches!(
        log.append(&[&good, &extra]),
        Err(LogError::InvalidBatch { index: 1, .. })
    ));
    let unknown_codec = spool_testkit::BatchBuilder::new()
        .values(1, 10)
        .attributes(7)
        .build();
    assert!(matches!(
        log.append(&[&unknown_codec]),
        Err(LogError::InvalidBatch { index: 0, .. })
    ));
    assert!(matches!(
        log.append(&[&good[..40]]),
        Err(LogError::InvalidBatch { index: 0, .. })
    ));
    assert_eq!(log.offsets().log_end, Offset(0));
}

#[test]
fn tail_reads_come_from_memory_and_older_reads_from_the_file() {
    let log = open(
        memory(),
        LogConfig {
            segment_bytes: 1 << 20,
            tail_cache_bytes: 2048,
            ..small_config()
        },
    );
    for i in 0..20 {
        log.append(&[&batch(1, 500, i)]).unwrap();
    }
    log.sync().unwrap();
    let tail = log.read(Offset(19), 1 << 20).unwrap();
    assert!(
        matches!(tail.chunks.as_slice(), [ReadChunk::Memory(_)]),
        "{:?}",
        tail.chunks
    );
    let old = log.read(Offset(0), 1 << 20).unwrap();
    assert!(matches!(old.chunks.as_slice(), [ReadChunk::File { .. }]));
    assert_eq!(unpatched(&tail.to_vec().unwrap()), batch(1, 500, 19));
}

#[test]
fn a_failed_write_closes_the_log_for_writes_until_reopened() {
    let store = spool_store::FaultyStore::new(3);
    let shared: Arc<dyn Store> = Arc::new(store.clone());
    let log = open(shared.clone(), small_config());
    log.append(&[&batch(1, 10, 1)]).unwrap();
    log.sync().unwrap();
    store.fail_after(0);
    assert!(log.append(&[&batch(1, 10, 2)]).is_err());
    store.heal();
    assert!(matches!(
        log.append(&[&batch(1, 10, 3)]),
        Err(LogError::Failed { .. })
    ));
    drop(log);
    let log = open(shared, small_config());
    assert_eq!(log.offsets().log_end, Offset(1));
    log.append(&[&batch(1, 10, 4)]).unwrap();
}

#[test]
fn a_failed_fsync_is_not_retried_into_a_false_success() {
    let store = spool_store::FaultyStore::new(4);
    let log = open(Arc::new(store.clone()), small_config());
    log.append(&[&batch(1, 10, 1)]).unwrap();
    store.fail_after(0);
    assert!(log.sync().is_err());
    store.heal();
    assert!(matches!(log.sync(), Err(LogError::Failed { .. })));
    assert_eq!(log.offsets().durable, Offset(0));
}

/// Segment base offsets and sizes in the partition directory.
fn segments_in(store: &Arc<dyn Store>) -> Vec<(i64, u64)> {
    let dir = std::path::Path::new(common::DIR);
    store
        .list_dir(dir)
        .unwrap()
        .into_iter()
        .filter_map(|e| {
            e.name
                .strip_suffix(".log")
                .map(|n| n.parse::<i64>().unwrap())
        })
        .map(|base| {
            let file = store
                .open(
                    &dir.join(format!("{base:020}.log")),
                    spool_store::OpenMode::Read,
                )
                .unwrap();
            (base, file.len().unwrap())
        })
        .collect()
}

#[test]
fn a_failed_fsync_wakes_the_waiters_with_the_error() {
    let store = spool_store::FaultyStore::new(5);
    let log = Arc::new(open(Arc::new(store.clone()), small_config()));
    let info = log.append(&[&batch(1, 10, 1)]).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async {
        let waiter = {
            let log = log.clone();
            tokio::spawn(async move { log.wait_durable(info.next_offset()).await })
        };
        tokio::task::yield_now().await;
        store.fail_after(0);
        assert!(log.sync().is_err());
        let outcome = tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
            .await
            .expect("the waiter wakes")
            .unwrap();
        assert!(matches!(outcome, Err(LogError::Failed { .. })));
    });
}
