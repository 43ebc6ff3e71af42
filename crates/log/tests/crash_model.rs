//! A property test: random appends, syncs, reads, clean reopens and machine crashes
//! (through the faulty store) checked against a plain in-memory model of the log.
//!
//! The model's rules:
//! - every batch reported durable (a `sync` returned past it) is readable after any
//!   crash, at the same offset, with the same bytes;
//! - after a crash the log holds the durable batches, then possibly some of the
//!   batches appended later, in order, whole — and nothing that was never written;
//! - a read returns whole batches, starting with the one holding the offset asked for.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use common::{open, read_all};
use proptest::prelude::*;
use spool_log::{FlushPolicy, LogConfig, PartitionLog};
use spool_model::{Offset, RecordBatchHeader};
use spool_store::{CrashMode, FaultyStore, Store};
use spool_testkit::BatchBuilder;

#[derive(Debug, Clone)]
enum Op {
    /// Batches of (records, value size), appended with one call.
    Append(Vec<(usize, usize)>),
    Sync,
    Read {
        at: u16,
        budget: u16,
    },
    Reopen,
    Crash(CrashMode),
    Retain,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => proptest::collection::vec((1usize..5, 0usize..400), 1..5).prop_map(Op::Append),
        3 => Just(Op::Sync),
        3 => (any::<u16>(), any::<u16>()).prop_map(|(at, budget)| Op::Read { at, budget }),
        1 => Just(Op::Reopen),
        2 => prop_oneof![
            Just(CrashMode::DropUnsynced),
            Just(CrashMode::TearUnsynced),
            Just(CrashMode::GarbleUnsynced)
        ]
        .prop_map(Op::Crash),
        1 => Just(Op::Retain),
    ]
}

/// What the log must hold: batches (offset, bytes as produced), and how many of them
/// are durable.
#[derive(Debug, Default)]
struct Model {
    batches: Vec<(Offset, Vec<u8>)>,
    durable: usize,
    next_offset: Offset,
    log_start: Offset,
}

fn config(interval: bool) -> LogConfig {
    LogConfig {
        segment_bytes: 2048,
        index_interval_bytes: 200,
        retention_ms: None,
        retention_bytes: Some(6000),
        tail_cache_bytes: 1500,
        flush: if interval {
            FlushPolicy::Interval {
                ms: None,
                messages: None,
            }
        } else {
            FlushPolicy::Durable
        },
        ..LogConfig::default()
    }
}

fn check_read(log: &PartitionLog, model: &Model, at: u16, budget: u16) {
    let visible_end = log.offsets().high_watermark;
    let span = visible_end.distance_from(model.log_start) + 1;
    let offset = model.log_start.plus(i64::from(at) % span.max(1));
    let result = log.read(offset, u64::from(budget)).expect("read in range");
    let bytes = result.to_vec().unwrap();
    if offset == visible_end {
        assert!(bytes.is_empty());
        return;
    }
    let first = model
        .batches
        .iter()
        .position(|(base, bytes)| {
            let next = RecordBatchHeader::parse(bytes).unwrap().last_offset_delta;
            base.plus(i64::from(next)) >= offset
        })
        .expect("model holds the offset");
    let mut position = 0;
    for (i, frame) in spool_protocol::batch::BatchFrames::new(&bytes).enumerate() {
        let (header, batch) = frame.expect("whole batches");
        let (base, expected) = &model.batches[first + i];
        assert_eq!(header.base_offset, *base);
        assert_eq!(common::unpatched(batch), *expected);
        position += batch.len();
    }
    assert_eq!(position, bytes.len());
    assert!(
        !bytes.is_empty(),
        "a read below the high watermark returns at least one batch"
    );
}

fn run(ops: Vec<Op>, seed: u64, interval: bool) {
    let faulty = FaultyStore::new(seed);
    let store: Arc<dyn Store> = Arc::new(faulty.clone());
    let mut log = open(store.clone(), config(interval));
    let mut model = Model::default();
    let mut stamp = 0i64;
    for op in ops {
        match op {
            Op::Append(shapes) => {
                let batches: Vec<Vec<u8>> = shapes
                    .iter()
                    .map(|&(count, size)| {
                        stamp += 1;
                        BatchBuilder::new()
                            .timestamp(stamp)
                            .values(count, size)
                            .build()
                    })
                    .collect();
                let slices: Vec<&[u8]> = batches.iter().map(Vec::as_slice).collect();
                let info = log.append(&slices).unwrap();
                assert_eq!(info.base_offset, model.next_offset);
                for batch in batches {
                    let count = RecordBatchHeader::parse(&batch).unwrap().record_count;
                    model.batches.push((model.next_offset, batch));
                    model.next_offset = model.next_offset.plus(i64::from(count));
                }
            }
            Op::Sync => {
                assert_eq!(log.sync().unwrap(), model.next_offset);
                model.durable = model.batches.len();
            }
            Op::Read { at, budget } => check_read(&log, &model, at, budget),
            Op::Reopen => {
                log.close().unwrap();
                drop(log);
                log = open(store.clone(), config(interval));
                model.durable = model.batches.len();
                assert_eq!(log.offsets().log_end, model.next_offset);
            }
            Op::Crash(mode) => {
                faulty.crash(mode);
                drop(log);
                log = open(store.clone(), config(interval));
                let log_start = log.offsets().log_start;
                let found = read_all(&log, log_start);
                // Every durable batch at or above the log start survives, first, in order.
                let durable_visible: Vec<_> = model.batches[..model.durable]
                    .iter()
                    .filter(|(offset, _)| *offset >= log_start)
                    .cloned()
                    .collect();
                assert!(
                    found.len() >= durable_visible.len(),
                    "durable batches lost in {mode:?}"
                );
                assert_eq!(
                    found[..durable_visible.len()],
                    durable_visible[..],
                    "{mode:?}"
                );
                // What follows are batches that were written, whole, in order.
                match found.first() {
                    Some((first_offset, _)) => {
                        let first = model
                            .batches
                            .iter()
                            .position(|(offset, _)| offset == first_offset)
                            .expect("the first batch found was written");
                        for (i, survivor) in found.iter().enumerate() {
                            assert_eq!(
                                *survivor,
                                model.batches[first + i],
                                "only written batches, whole, in order"
                            );
                        }
                        model.batches.truncate(first + found.len());
                    }
                    None => model.batches.retain(|(offset, _)| *offset < log_start),
                }
                model.durable = model.batches.len();
                model.next_offset = log.offsets().log_end;
            }
            Op::Retain => {
                log.enforce_retention(spool_model::Timestamp::now())
                    .unwrap();
                model.log_start = log.offsets().log_start;
            }
        }
        let offsets = log.offsets();
        assert_eq!(offsets.log_end, model.next_offset);
        assert!(
            offsets.log_start <= offsets.high_watermark
                && offsets.high_watermark <= offsets.log_end
        );
        model.log_start = offsets.log_start;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn the_log_matches_the_model_through_crashes(
        ops in proptest::collection::vec(op(), 1..60),
        seed in any::<u64>(),
        interval in any::<bool>(),
    ) {
        run(ops, seed, interval);
    }
}
