//! Helpers shared by the storage engine's integration tests.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;

use spool_log::{FileCache, LogConfig, PartitionLog};
use spool_model::Offset;
use spool_store::Store;
use spool_testkit::BatchBuilder;

pub const DIR: &str = "topics/t/0";

pub fn open(store: Arc<dyn Store>, config: LogConfig) -> PartitionLog {
    let files = Arc::new(FileCache::new(store, 64));
    PartitionLog::open(files, PathBuf::from(DIR), config).expect("open log")
}

/// Small segments and a dense index, so a few kilobytes exercise roll and lookups.
pub fn small_config() -> LogConfig {
    LogConfig {
        segment_bytes: 4096,
        index_interval_bytes: 256,
        retention_ms: None,
        ..LogConfig::default()
    }
}

/// A batch of `count` records of `size`-byte values, timestamped `timestamp`.
pub fn batch(count: usize, size: usize, timestamp: i64) -> Vec<u8> {
    BatchBuilder::new()
        .timestamp(timestamp)
        .values(count, size)
        .build()
}

/// Reads everything from `from` to the high watermark, one read at a time, and
/// returns each batch's base offset and bytes with the base offset field zeroed.
pub fn read_all(log: &PartitionLog, from: Offset) -> Vec<(Offset, Vec<u8>)> {
    let mut batches = Vec::new();
    let mut offset = from;
    loop {
        let result = log.read(offset, 1000).expect("read");
        if result.is_empty() {
            break;
        }
        let bytes = result.to_vec().expect("bytes");
        for frame in spool_protocol::batch::BatchFrames::new(&bytes) {
            let (header, batch) = frame.expect("whole batches only");
            spool_protocol::batch::validate_batch(batch, spool_protocol::batch::BatchRules::Stored)
                .expect("valid batch");
            batches.push((header.base_offset, unpatched(batch)));
            offset = header.next_offset();
        }
    }
    batches
}

/// The batch as the producer sent it: base offset zero.
pub fn unpatched(batch: &[u8]) -> Vec<u8> {
    let mut copy = batch.to_vec();
    spool_protocol::batch::patch_base_offset(&mut copy, Offset(0));
    copy
}
