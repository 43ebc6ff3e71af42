//! Log compaction against a model, and through crashes.
//!
//! The model's rules, after any number of cleaning passes:
//! - every record read back is one that was written, at the offset it was given;
//! - the latest record of every key is there (a tombstone may go only once it was
//!   cleaned before and its batch is older than `delete.retention.ms`);
//! - the active segment is never touched;
//! - below where the log was cleaned, each key has one record at most;
//! - the log reads the same after a reopen that scans it whole (gaps and all).
//!
//! The crash test fails the Nth write of a pass (for every N until the pass gets
//! through), crashes the machine (unsynced bytes dropped, torn or garbled, and a
//! random prefix of the unsynced renames and deletions kept), reopens,
//! and holds the log to the same rules: old segments or new ones, never a mix, and
//! never a lost latest value.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use common::{DIR, open, read_all};
use proptest::prelude::*;
use spool_log::{CleanerSettings, Cleanup, LogConfig, PartitionLog};
use spool_model::{CompressionCodec, Offset, Timestamp};
use spool_protocol::keyed::BatchRecords;
use spool_protocol::recompress::recompress;
use spool_store::{CrashMode, FaultyStore, MemoryStore, Store};
use spool_testkit::{BatchBuilder, TestRecord};

const NOW: i64 = 1_000_000;

fn compacted() -> LogConfig {
    LogConfig {
        segment_bytes: 2048,
        index_interval_bytes: 256,
        retention_ms: None,
        cleanup: Cleanup {
            delete: false,
            compact: true,
            min_dirty_ratio_ppm: 0,
            min_lag_ms: 0,
            max_lag_ms: u64::MAX,
            delete_retention_ms: 1000,
        },
        ..LogConfig::default()
    }
}

/// One record as written: key, value (None: a tombstone).
type Written = (Vec<u8>, Option<Vec<u8>>);

/// A batch of keyed records, compressed with `codec`.
fn keyed_batch(records: &[Written], codec: CompressionCodec) -> Vec<u8> {
    let mut builder = BatchBuilder::new().timestamp(NOW);
    for (key, value) in records {
        builder = builder.record(TestRecord {
            key: Some(key.clone()),
            value: value.clone(),
            ..TestRecord::default()
        });
    }
    let plain = builder.build();
    recompress(&plain, codec, None, 1 << 20)
        .unwrap()
        .unwrap_or(plain)
}

/// Every record of the log: offset → (key, value).
fn records_of(log: &PartitionLog) -> BTreeMap<i64, Written> {
    let mut out = BTreeMap::new();
    let start = log.offsets().log_start;
    for (base, bytes) in read_all(log, start) {
        let read = BatchRecords::read(&bytes, 1 << 24).unwrap();
        for record in read.records().unwrap() {
            out.insert(
                base.0 + record.offset_delta,
                (
                    record.key.unwrap().to_vec(),
                    record.value.map(<[u8]>::to_vec),
                ),
            );
        }
    }
    out
}

/// The model: everything written, by offset.
#[derive(Debug, Default)]
struct Model {
    written: BTreeMap<i64, Written>,
}

impl Model {
    fn latest(&self) -> BTreeMap<Vec<u8>, (i64, bool)> {
        let mut latest = BTreeMap::new();
        for (offset, (key, value)) in &self.written {
            latest.insert(key.clone(), (*offset, value.is_none()));
        }
        latest
    }

    /// Checks `log` against the rules; `tombstones_may_go` allows latest tombstones
    /// below `cleaned` to be gone.
    fn check(&self, log: &PartitionLog, cleaned: Offset, tombstones_may_go: bool) {
        let got = records_of(log);
        for (offset, (key, value)) in &got {
            let (written_key, written_value) = self
                .written
                .get(offset)
                .unwrap_or_else(|| panic!("offset {offset} was never written"));
            assert_eq!(key, written_key, "offset {offset}: another key");
            assert_eq!(value, written_value, "offset {offset}: another value");
        }
        for (key, (offset, tombstone)) in self.latest() {
            let may_go = tombstone && tombstones_may_go && offset < cleaned.0;
            assert!(
                got.contains_key(&offset) || may_go,
                "the latest record of {key:?} at {offset} is gone"
            );
        }
        let mut seen = BTreeMap::new();
        for (offset, (key, _)) in got.range(..cleaned.0) {
            if let Some(earlier) = seen.insert(key.clone(), *offset) {
                panic!("{key:?} twice below {cleaned}: {earlier} and {offset}");
            }
        }
        assert_eq!(log.offsets().log_end.0, self.next_offset());
    }

    fn next_offset(&self) -> i64 {
        self.written.keys().next_back().map_or(0, |o| o + 1)
    }
}

/// Appends `records` as one batch compressed with `codec` and makes it durable.
fn append(log: &PartitionLog, model: &mut Model, records: Vec<Written>, codec: CompressionCodec) {
    let batch = keyed_batch(&records, codec);
    let info = log.append(&[&batch]).unwrap();
    for (i, record) in records.into_iter().enumerate() {
        model
            .written
            .insert(info.base_offset.0 + i64::try_from(i).unwrap(), record);
    }
    log.sync().unwrap();
}

/// Appends one uncompressed record of `key` with `value`.
fn put(log: &PartitionLog, model: &mut Model, key: Vec<u8>, value: Vec<u8>) {
    append(log, model, vec![(key, Some(value))], CompressionCodec::None);
}

fn clean(log: &PartitionLog, now: i64, buffer: u64) -> Option<spool_log::CleanStats> {
    let settings = CleanerSettings {
        dedupe_buffer_bytes: buffer,
        io_bytes_per_second: None,
    };
    log.clean(Timestamp(now), &settings, &AtomicBool::new(false))
        .unwrap()
}

fn key(n: u8) -> Vec<u8> {
    format!("key-{n}").into_bytes()
}

#[test]
fn the_latest_record_of_each_key_stays_and_offsets_never_change() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let log = open(store.clone(), compacted());
    let mut model = Model::default();
    for round in 0..40u32 {
        let records: Vec<Written> = (0..5u8)
            .map(|i| {
                let k = key((u8::try_from(round % 7).unwrap() + i) % 6);
                let value =
                    (round % 9 != 4).then(|| format!("v{round}-{i}").repeat(10).into_bytes());
                (k, value)
            })
            .collect();
        let codec = [
            CompressionCodec::None,
            CompressionCodec::Zstd,
            CompressionCodec::Gzip,
        ][round as usize % 3];
        append(&log, &mut model, records, codec);
    }
    let before = log.offsets();
    let stats = clean(&log, NOW, 1 << 20).expect("a pass");
    assert!(stats.records_removed > 100, "{stats:?}");
    assert!(stats.bytes_written < stats.bytes_read);
    assert_eq!(log.offsets(), before, "offsets and watermarks unchanged");
    model.check(&log, stats.cleaned_up_to, false);
    // Tombstones stay on the pass that first cleans them, and go on a later one past
    // delete.retention.ms.
    let tombstones = |log: &PartitionLog| {
        records_of(log)
            .values()
            .filter(|(_, v)| v.is_none())
            .count()
    };
    let kept = tombstones(&log);
    put(&log, &mut model, key(0), b"new".to_vec());
    let _ = clean(&log, NOW + 10_000, 1 << 20);
    model.check(&log, stats.cleaned_up_to, true);
    assert!(tombstones(&log) <= kept);

    // A reopen that scans the whole log (no checkpoint) reads the same, gaps and all.
    let expected = records_of(&log);
    drop(log);
    store
        .remove_file(&std::path::Path::new(DIR).join("checkpoint"))
        .unwrap();
    let log = open(store, compacted());
    assert_eq!(records_of(&log), expected);
    assert_eq!(log.offsets().log_end.0, model.next_offset());
}

#[test]
fn a_small_offset_map_cleans_in_steps() {
    let log = open(Arc::new(MemoryStore::new()), compacted());
    let mut model = Model::default();
    for round in 0..60u8 {
        put(&log, &mut model, key(round % 20), vec![round; 40]);
    }
    // Room for 8 keys a pass: each pass cleans a little further.
    let mut cleaned = Offset::ZERO;
    let mut passes = 0;
    while let Some(stats) = clean(&log, NOW, 8 * 32) {
        assert!(stats.cleaned_up_to > cleaned, "progress");
        cleaned = stats.cleaned_up_to;
        model.check(&log, Offset::ZERO, false);
        passes += 1;
        assert!(passes < 50);
    }
    assert!(passes > 1, "the map filled: {passes} passes");
}

#[test]
fn nothing_is_cleaned_before_it_is_due() {
    let mut config = compacted();
    config.cleanup.min_dirty_ratio_ppm = 900_000;
    let log = open(Arc::new(MemoryStore::new()), config.clone());
    let mut model = Model::default();
    // Distinct keys: cleaning removes nothing, the clean part stays large.
    for round in 0..60u8 {
        put(&log, &mut model, key(round), vec![round; 100]);
    }
    assert!(clean(&log, NOW, 1 << 20).is_some(), "all dirty: due");
    // One more segment's worth: dirty, but far less than 90% of the log.
    for round in 60..75u8 {
        put(&log, &mut model, key(round), vec![round; 100]);
    }
    // min.compaction.lag.ms keeps recent records out of reach.
    config.cleanup.min_dirty_ratio_ppm = 0;
    config.cleanup.min_lag_ms = 60_000;
    log.set_config(config).unwrap();
    assert!(clean(&log, NOW + 1000, 1 << 20).is_none(), "too recent");
    assert!(clean(&log, NOW + 120_000, 1 << 20).is_some(), "old enough");
    model.check(&log, Offset::ZERO, false);
}

fn build_crash_log(seed: u64) -> (Arc<FaultyStore>, Model) {
    let store = Arc::new(FaultyStore::new(seed));
    let log = open(store.clone(), compacted());
    let mut model = Model::default();
    for round in 0..30u8 {
        let records = vec![
            (key(round % 5), Some(vec![round; 60])),
            (
                key(round % 3 + 5),
                (round % 4 != 0).then(|| vec![round; 30]),
            ),
        ];
        let codec = if round % 2 == 0 {
            CompressionCodec::Lz4
        } else {
            CompressionCodec::None
        };
        append(&log, &mut model, records, codec);
    }
    log.close().unwrap();
    (store, model)
}

#[test]
fn a_crash_at_any_write_of_a_pass_leaves_the_old_log_or_the_new_one() {
    let mut completed = false;
    for n in 0..400u64 {
        for mode in [
            CrashMode::DropUnsynced,
            CrashMode::TearUnsynced,
            CrashMode::GarbleUnsynced,
        ] {
            let (store, mut model) = build_crash_log(n);
            let log = open(store.clone(), compacted());
            // More records after the open's checkpoint: the checkpoint on disk now
            // names a position in a segment the pass will rewrite.
            for round in 0..20u8 {
                put(&log, &mut model, key(round % 4), vec![round; 50]);
            }
            // A crash may keep some of the renames and deletions not yet synced.
            store.tear_names_on_crash(true);
            store.fail_after(n);
            let outcome = log.clean(
                Timestamp(NOW),
                &CleanerSettings::default(),
                &AtomicBool::new(false),
            );
            if matches!(outcome, Ok(Some(_))) {
                completed = true;
            }
            drop(log);
            store.crash(mode);
            let log = open(store.clone(), compacted());
            // Below the cleaner offset on disk, each key once: it never runs ahead
            // of the segments it describes.
            let cleaned = log.cleaned_up_to().unwrap();
            model.check(&log, cleaned, false);
            // And read whole, without the checkpoint's help: gaps and all.
            drop(log);
            let checkpoint = std::path::Path::new(DIR).join("checkpoint");
            store.remove_file(&checkpoint).unwrap();
            let log = open(store.clone(), compacted());
            model.check(&log, cleaned, false);
            // And the next pass gets through, and compacts everything it may.
            let _ = clean(&log, NOW, 1 << 20);
            let cleaned = log.cleaned_up_to().unwrap();
            assert!(cleaned > Offset::ZERO);
            model.check(&log, cleaned, false);
            drop(log);
            store.crash(mode);
            let log = open(store.clone(), compacted());
            model.check(&log, cleaned, false);
        }
        if completed {
            return;
        }
    }
    panic!("no pass got through 400 writes");
}

#[derive(Debug, Clone)]
enum Op {
    Append(Vec<(u8, bool)>, u8),
    Clean {
        later_ms: u16,
        small_map: bool,
    },
    Reopen,
    /// A pass whose `writes`-th write fails, then a machine crash.
    CrashWhileCleaning {
        writes: u8,
        mode: u8,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (proptest::collection::vec((0u8..12, any::<bool>()), 1..6), 0u8..3)
            .prop_map(|(records, codec)| Op::Append(records, codec)),
        2 => (any::<u16>(), any::<bool>()).prop_map(|(later_ms, small_map)| Op::Clean { later_ms, small_map }),
        1 => Just(Op::Reopen),
        2 => (any::<u8>(), 0u8..3).prop_map(|(writes, mode)| Op::CrashWhileCleaning { writes, mode }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn compaction_keeps_to_the_model(ops in proptest::collection::vec(op(), 1..60)) {
        let faulty = Arc::new(FaultyStore::new(7));
        faulty.tear_names_on_crash(true);
        let store: Arc<dyn Store> = faulty.clone();
        let mut log = open(store.clone(), compacted());
        let mut model = Model::default();
        let mut cleaned = Offset::ZERO;
        let mut now = NOW;
        let mut tombstones_may_go = false;
        let mut serial = 0u32;
        for op in ops {
            match op {
                Op::Append(records, codec) => {
                    let records: Vec<Written> = records
                        .into_iter()
                        .map(|(k, tombstone)| {
                            serial += 1;
                            (key(k), (!tombstone).then(|| format!("value {serial}").repeat(8).into_bytes()))
                        })
                        .collect();
                    let codec = [CompressionCodec::None, CompressionCodec::Snappy, CompressionCodec::Zstd][usize::from(codec)];
                    append(&log, &mut model, records, codec);
                }
                Op::Clean { later_ms, small_map } => {
                    now += i64::from(later_ms);
                    tombstones_may_go = now - NOW > 1000;
                    let buffer = if small_map { 6 * 32 } else { 1 << 20 };
                    if let Some(stats) = clean(&log, now, buffer) {
                        cleaned = cleaned.max(stats.cleaned_up_to);
                    }
                }
                Op::Reopen => {
                    drop(log);
                    log = open(store.clone(), compacted());
                }
                Op::CrashWhileCleaning { writes, mode } => {
                    // Everything appended so far is durable (appends sync).
                    faulty.fail_after(u64::from(writes));
                    if let Ok(Some(stats)) = log.clean(
                        Timestamp(now),
                        &CleanerSettings::default(),
                        &AtomicBool::new(false),
                    ) {
                        cleaned = cleaned.max(stats.cleaned_up_to);
                    }
                    drop(log);
                    faulty.crash([CrashMode::DropUnsynced, CrashMode::TearUnsynced, CrashMode::GarbleUnsynced][usize::from(mode)]);
                    log = open(store.clone(), compacted());
                }
            }
            model.check(&log, cleaned, tombstones_may_go);
        }
    }
}
