//! Compaction of shared-storage mode: a partition's small ranges (one per flush that
//! touched it, spread over WAL objects shared with other partitions) are rewritten
//! into one **segment object** of its own, as blocks of about
//! `storage.compaction.block.bytes`, and swapped in the catalogue in one transaction
//! (`Catalogue::replace_ranges`, checked against the leader epoch and refused if
//! retention or DeleteRecords took any of the ranges meanwhile). The partition's
//! catalogue rows then number about its bytes over the block size, not its flushes;
//! WAL objects whose every range moved are collected as any unreferenced object.
//!
//! A segment object has the WAL object layout with one entry per block (its index is
//! the segment's offset and time index), under `seg/<ms>-<random id>`. A swap that is
//! refused leaves an object the catalogue never knew, deleted as an orphan.

use spool_metadata::{MetadataError, PartitionKey, StoredRange};

use super::SharedStorage;
use super::segments::{Blocks, Piece, write_and_swap};

/// Bytes rewritten into one segment object at most.
const SEGMENT_OBJECT_BYTES: i64 = 64 << 20;

/// Rewrites the partition's first run of small ranges, if it is long enough; returns
/// how many ranges it replaced.
pub async fn compact(
    storage: &SharedStorage,
    key: PartitionKey,
    leader_epoch: i32,
    ranges: &[StoredRange],
) -> Result<usize, MetadataError> {
    let block_bytes = i64::try_from(storage.compaction.block_bytes).unwrap_or(i64::MAX);
    let run = small_run(ranges, block_bytes / 2, SEGMENT_OBJECT_BYTES);
    if run.len() < storage.compaction.min_ranges {
        return Ok(0);
    }
    let mut blocks = Blocks::new(key, usize::try_from(block_bytes).unwrap_or(usize::MAX));
    for range in run {
        let bytes = match storage.reader.range_bytes(range).await {
            Ok(bytes) => bytes,
            Err(error) => {
                tracing::warn!(%error, "compaction could not read a range; trying again later");
                return Ok(0);
            }
        };
        let piece = Piece {
            base_offset: range.base_offset,
            last_offset: range.last_offset,
            max_timestamp: range.max_timestamp,
            bytes,
        };
        if let Err(error) = blocks.push(piece) {
            tracing::error!(?key, %error, "compaction abandoned");
            return Ok(0);
        }
    }
    let (object, entries) = match blocks.finish() {
        Ok(finished) => finished,
        Err(error) => {
            tracing::error!(?key, %error, "compaction abandoned");
            return Ok(0);
        }
    };
    match write_and_swap(storage, key, leader_epoch, run, object, &entries).await? {
        Some(swapped) if swapped.accepted => {
            tracing::debug!(?key, ranges = run.len(), blocks = entries.len(), object = %swapped.name, "compacted");
            Ok(run.len())
        }
        _ => Ok(0),
    }
}

/// The first run of consecutive ranges each smaller than `small` bytes, up to
/// `budget` bytes in all.
pub(super) fn small_run(ranges: &[StoredRange], small: i64, budget: i64) -> &[StoredRange] {
    let Some(start) = ranges.iter().position(|r| r.length < small) else {
        return &[];
    };
    let mut total = 0;
    let mut end = start;
    for range in ranges.get(start..).unwrap_or_default() {
        if range.length >= small || total + range.length > budget {
            break;
        }
        total += range.length;
        end += 1;
    }
    ranges.get(start..end).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(base: i64, length: i64) -> StoredRange {
        StoredRange {
            base_offset: base,
            last_offset: base + 9,
            max_timestamp: 0,
            object: format!("wal/{base}"),
            position: 0,
            length,
        }
    }

    #[test]
    fn the_first_run_of_small_ranges_within_the_budget() {
        let ranges = [
            range(0, 900),
            range(10, 10),
            range(20, 10),
            range(30, 500),
            range(40, 10),
        ];
        let run: Vec<i64> = small_run(&ranges, 100, 1_000)
            .iter()
            .map(|r| r.base_offset)
            .collect();
        assert_eq!(run, vec![10, 20]);
        let run: Vec<i64> = small_run(&ranges, 100, 15)
            .iter()
            .map(|r| r.base_offset)
            .collect();
        assert_eq!(run, vec![10]);
        assert!(small_run(&ranges, 5, 1_000).is_empty());
        assert!(small_run(&[], 100, 1_000).is_empty());
    }
}
