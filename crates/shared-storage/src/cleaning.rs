//! Compacted topics (`cleanup.policy=compact`) in shared-storage mode: the local
//! cleaner's rules (`spool_log::cleaning`) applied to a partition's ranges in object
//! storage. The broker's cleaner runs a pass over its compacted partitions every
//! `log.cleaner.backoff.ms` while `log.cleaner.enable` holds.
//!
//! A pass over one partition:
//! 1. **What may be cleaned**: every range of the partition but the last, which stands
//!    for Kafka's active segment. The *dirty* part starts where the last pass stopped
//!    (the catalogue's cleaned offset) and ends before the first range with a record
//!    newer than `min.compaction.lag.ms`.
//! 2. **Whether to clean**: the dirty part is at least `min.cleanable.dirty.ratio` of
//!    the cleanable bytes, or its first range's newest record is older than
//!    `max.compaction.lag.ms` (the catalogue keeps each range's newest timestamp,
//!    not its oldest, so this rule errs late, never early).
//! 3. **The offset map**: each key of the dirty batches mapped to its latest offset,
//!    bounded by `log.cleaner.dedupe.buffer.size`; when it is full the pass cleans up
//!    to the last whole batch mapped.
//! 4. **Rewrite**: the cleanable ranges below that point are read again, each batch
//!    checked whole (CRC included) and kept whole, rebuilt without the records that
//!    go, or dropped, by the local cleaner's rule; the result goes into segment
//!    objects of blocks of about `storage.compaction.block.bytes` (one object per
//!    64 MiB read; ranges that lose nothing stay as they are), each swapped into the
//!    catalogue in one transaction fenced by the leader epoch and refused unless every
//!    range it replaces is still there as it was. Offsets never change; a
//!    range whose every record went leaves a gap, which readers skip.
//! 5. **Mark**: once every object is swapped, the catalogue's cleaned offset moves to
//!    that point; reads below it go to object storage, not to the tail (which keeps
//!    what it appended, uncleaned).
//!
//! When no pass is due, the partition's small ranges are merged as the other topics'
//! are (`compaction`, which the maintenance pass leaves to this task for compacted
//! topics). Reading and writing are held to `log.cleaner.io.max.bytes.per.second`.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use spool_log::cleaning::{self, Cleaned, OffsetMap, Retain, Throttle};
use spool_log::{CleanerSettings, Cleanup};
use spool_metadata::{MetadataError, PartitionKey, StoredRange};
use spool_model::{Offset, RecordBatchHeader, Timestamp};
use spool_objects::wal::WalEntry;
use spool_protocol::batch::{BatchFrames, BatchRules, validate_batch};

use crate::SharedStorage;
use crate::segments::{Blocks, Piece, write_and_swap};

/// Ranges of a partition looked at per pass.
const RANGES_PER_PASS: i64 = 100_000;
/// Bytes of ranges rewritten into one segment object at most.
const BYTES_PER_OBJECT: i64 = 64 << 20;

/// What a pass over one partition did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PassStats {
    pub ranges_read: usize,
    pub blocks_written: usize,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub records_removed: u64,
    /// The partition is clean below this offset now.
    pub cleaned_up_to: i64,
}

/// Cleans the partition if it is due; else merges its small ranges as the other
/// topics' are (`compaction`), which would otherwise pile up, one per flush. The
/// compaction lags are measured back from `now` (the broker's clock).
pub async fn clean_or_compact(
    storage: &SharedStorage,
    key: PartitionKey,
    leader_epoch: i32,
    rules: &Cleanup,
    settings: &CleanerSettings,
    now: Timestamp,
) -> Result<Option<PassStats>, MetadataError> {
    let Some(state) = storage.catalogue.partition_state(key).await? else {
        return Ok(None);
    };
    if state.leader_epoch != leader_epoch {
        return Ok(None);
    }
    let mut ranges = storage
        .catalogue
        .ranges_from(key, state.log_start, i64::MAX, RANGES_PER_PASS)
        .await?;
    // Transactions: nothing past the last stable offset is cleaned (an open
    // transaction's records may yet be aborted), and aborted records are never mapped.
    let (last_stable, aborted) = match &state.producer_state {
        None => (state.high_watermark, Vec::new()),
        Some(encoded) => {
            let high_watermark = spool_model::Offset(state.high_watermark);
            match spool_log::transactions_in(encoded, high_watermark) {
                Some((stable, aborted)) => (stable.0, aborted),
                None => return Ok(None),
            }
        }
    };
    ranges.retain(|range| range.last_offset < last_stable);
    let partition = Partition {
        key,
        leader_epoch,
        cleaned_offset: state.cleaned_offset,
        aborted: aborted.into(),
    };
    if let Some(stats) = clean_partition(storage, &partition, &ranges, rules, settings, now).await?
    {
        return Ok(Some(stats));
    }
    crate::compaction::compact(storage, key, leader_epoch, &ranges).await?;
    Ok(None)
}

/// The partition a pass works on, as the catalogue had it at the start.
struct Partition {
    key: PartitionKey,
    leader_epoch: i32,
    cleaned_offset: i64,
    /// Its aborted transactions, whose records are never mapped.
    aborted: Arc<[spool_log::AbortedTxn]>,
}

/// One pass over one partition's `ranges` (see the module docs); `None`: nothing was
/// done.
async fn clean_partition(
    storage: &SharedStorage,
    partition: &Partition,
    ranges: &[StoredRange],
    rules: &Cleanup,
    settings: &CleanerSettings,
    now: Timestamp,
) -> Result<Option<PassStats>, MetadataError> {
    let Some((_, cleanable)) = ranges.split_last() else {
        return Ok(None);
    };
    let first_dirty = partition.cleaned_offset;
    let Some(dirty) = dirty_part(cleanable, first_dirty, rules, now) else {
        return Ok(None);
    };
    let mut io = Throttle::new(settings.io_bytes_per_second);
    let mut stats = PassStats::default();
    let map = OffsetMap::with_budget(settings.dedupe_buffer_bytes);
    let dirty_ranges = cleanable.get(dirty).unwrap_or_default();
    let Some((map, mapped_end)) = map_dirty_keys(
        storage,
        dirty_ranges,
        first_dirty,
        &partition.aborted,
        map,
        &mut io,
    )
    .await
    else {
        return Ok(None);
    };
    let delete_retention = i64::try_from(rules.delete_retention_ms).unwrap_or(i64::MAX);
    let retain = RetainRule {
        map: Arc::new(map),
        mapped_end,
        first_dirty,
        delete_horizon: now.0.saturating_sub(delete_retention),
    };
    let rewrite: Vec<StoredRange> = cleanable
        .iter()
        .take_while(|range| range.base_offset < mapped_end)
        .cloned()
        .collect();
    for group in groups(&rewrite, BYTES_PER_OBJECT) {
        if !rewrite_group(storage, partition, group, &retain, &mut io, &mut stats).await? {
            return Ok(None);
        }
    }
    let (key, epoch) = (partition.key, partition.leader_epoch);
    if !storage
        .catalogue
        .advance_cleaned_offset(key, epoch, mapped_end)
        .await?
    {
        return Ok(None);
    }
    stats.cleaned_up_to = mapped_end;
    Ok(Some(stats))
}

/// Which of `cleanable` (oldest first) are dirty and due for cleaning, if any.
pub fn dirty_part(
    cleanable: &[StoredRange],
    first_dirty: i64,
    rules: &Cleanup,
    now: Timestamp,
) -> Option<Range<usize>> {
    let from = cleanable
        .iter()
        .position(|r| r.last_offset >= first_dirty)?;
    let min_lag = i64::try_from(rules.min_lag_ms).unwrap_or(i64::MAX);
    let lag_cutoff = now.0.saturating_sub(min_lag);
    let to = cleanable
        .iter()
        .enumerate()
        .skip(from)
        .find(|(_, r)| rules.min_lag_ms > 0 && r.max_timestamp > lag_cutoff)
        .map_or(cleanable.len(), |(at, _)| at);
    if to <= from {
        return None;
    }
    let bytes = |part: &[StoredRange]| part.iter().map(|r| r.length.max(0)).sum::<i64>();
    let dirty_bytes = bytes(cleanable.get(from..to).unwrap_or_default());
    let total_bytes = bytes(cleanable.get(..to).unwrap_or_default()).max(1);
    let ratio_due = i128::from(dirty_bytes) * 1_000_000
        >= i128::from(rules.min_dirty_ratio_ppm) * i128::from(total_bytes);
    let max_lag = i64::try_from(rules.max_lag_ms).unwrap_or(i64::MAX);
    let lag_due = cleanable
        .get(from)
        .is_some_and(|first| now.0.saturating_sub(first.max_timestamp) > max_lag);
    (ratio_due || lag_due).then_some(from..to)
}

/// Maps the keys of the dirty batches; returns the map and the offset after the last
/// batch mapped (`None` when nothing could be mapped, or a range could not be read).
async fn map_dirty_keys(
    storage: &SharedStorage,
    dirty: &[StoredRange],
    first_dirty: i64,
    aborted: &Arc<[spool_log::AbortedTxn]>,
    mut map: OffsetMap,
    io: &mut Throttle,
) -> Option<(OffsetMap, i64)> {
    let mut mapped_end = None;
    for range in dirty {
        let bytes = read(storage, range, io).await?;
        let owned = range.clone();
        let aborted = aborted.clone();
        let (returned, mapped) = tokio::task::spawn_blocking(move || {
            map_range(map, &owned, &bytes, first_dirty, &aborted)
        })
        .await
        .ok()?;
        map = returned;
        match mapped {
            Err(error) => {
                tracing::error!(object = %range.object, %error, "the cleaner cannot read a range; not cleaning");
                return None;
            }
            Ok((end, full)) => {
                mapped_end = end.or(mapped_end);
                if full {
                    if mapped_end.is_none() {
                        tracing::warn!(
                            "a batch has more keys than log.cleaner.dedupe.buffer.size holds; not cleaning"
                        );
                    }
                    break;
                }
            }
        }
    }
    mapped_end.map(|end| (map, end))
}

/// Maps a range's batches from `first_dirty` on; returns the map, and the offset after
/// its last batch mapped with whether the map filled up before the range's end.
fn map_range(
    mut map: OffsetMap,
    range: &StoredRange,
    bytes: &[u8],
    first_dirty: i64,
    aborted: &[spool_log::AbortedTxn],
) -> (OffsetMap, Result<(Option<i64>, bool), String>) {
    let batches = match checked_batches(range, bytes) {
        Ok(batches) => batches,
        Err(error) => return (map, Err(error)),
    };
    let mut end = None;
    for (header, batch) in batches {
        if header.next_offset().0 <= first_dirty {
            continue;
        }
        if !map.has_room_for(usize::try_from(header.record_count).unwrap_or(0)) {
            return (map, Ok((end, true)));
        }
        // An aborted record must not take the place of the committed one before it.
        if !spool_log::is_aborted_batch(aborted, &header)
            && let Err(error) = cleaning::map_keys(&mut map, &header, batch)
        {
            return (map, Err(error.to_string()));
        }
        end = Some(header.next_offset().0);
    }
    (map, Ok((end, false)))
}

/// A range's batches, each checked whole (CRC included: a corrupt batch must not be
/// rewritten under a fresh CRC) and within the range's offsets.
fn checked_batches<'a>(
    range: &StoredRange,
    bytes: &'a [u8],
) -> Result<Vec<(RecordBatchHeader, &'a [u8])>, String> {
    let mut out = Vec::new();
    for frame in BatchFrames::new(bytes) {
        let (_, batch) = frame.map_err(|error| error.to_string())?;
        let header =
            validate_batch(batch, BatchRules::Stored).map_err(|error| error.to_string())?;
        if header.base_offset.0 < range.base_offset || header.last_offset().0 > range.last_offset {
            return Err(format!(
                "a batch at offsets {}..={} lies outside its range {}..={}",
                header.base_offset,
                header.last_offset(),
                range.base_offset,
                range.last_offset
            ));
        }
        out.push((header, batch));
    }
    Ok(out)
}

/// The rule of what stays, shareable with the blocking pool.
#[derive(Clone)]
struct RetainRule {
    map: Arc<OffsetMap>,
    mapped_end: i64,
    first_dirty: i64,
    delete_horizon: i64,
}

/// A group of ranges cleaned, as a segment object to swap in.
struct Rewritten {
    records_removed: u64,
    object: Bytes,
    entries: Vec<WalEntry>,
}

/// Rewrites a group of ranges into one segment object and swaps it in (not if no
/// record went: the ranges stay as they are); `false` if the swap was refused or a
/// range could not be read (the pass stops).
async fn rewrite_group(
    storage: &SharedStorage,
    partition: &Partition,
    group: &[StoredRange],
    retain: &RetainRule,
    io: &mut Throttle,
    stats: &mut PassStats,
) -> Result<bool, MetadataError> {
    let mut parts = Vec::with_capacity(group.len());
    for range in group {
        let Some(bytes) = read(storage, range, io).await else {
            return Ok(false);
        };
        stats.ranges_read += 1;
        stats.bytes_read += bytes.len() as u64;
        parts.push((range.clone(), bytes));
    }
    let block_bytes = usize::try_from(storage.compaction.block_bytes).unwrap_or(usize::MAX);
    let (key, rule) = (partition.key, retain.clone());
    let rewritten =
        tokio::task::spawn_blocking(move || clean_group(key, &parts, &rule, block_bytes)).await;
    let rewritten = match rewritten {
        Ok(Ok(rewritten)) => rewritten,
        Ok(Err(error)) => {
            tracing::error!(?key, %error, "the cleaner cannot rewrite ranges; not cleaning");
            return Ok(false);
        }
        Err(error) => {
            tracing::error!(%error, "a cleaning task failed");
            return Ok(false);
        }
    };
    if rewritten.records_removed == 0 {
        return Ok(true);
    }
    stats.records_removed += rewritten.records_removed;
    // A group whose every record went has no blocks: its ranges only go.
    if !rewritten.entries.is_empty() {
        pace(io, rewritten.object.len() as u64).await;
    }
    let (key, epoch, entries) = (partition.key, partition.leader_epoch, &rewritten.entries);
    let swapped = write_and_swap(storage, key, epoch, group, rewritten.object, entries).await?;
    if !swapped.is_some_and(|swapped| swapped.accepted) {
        return Ok(false);
    }
    stats.blocks_written += entries.len();
    stats.bytes_written += entries.iter().map(|e| u64::from(e.length)).sum::<u64>();
    Ok(true)
}

/// Cleans a group's ranges into the blocks of one segment object: blocking.
fn clean_group(
    key: PartitionKey,
    parts: &[(StoredRange, Bytes)],
    rule: &RetainRule,
    block_bytes: usize,
) -> Result<Rewritten, String> {
    let retain = Retain {
        map: &rule.map,
        mapped_end: Offset(rule.mapped_end),
        first_dirty: Offset(rule.first_dirty),
        delete_horizon: Timestamp(rule.delete_horizon),
    };
    let mut blocks = Blocks::new(key, block_bytes);
    let mut records_removed = 0;
    for (range, bytes) in parts {
        for (header, batch) in checked_batches(range, bytes)? {
            let stays = |bytes: Bytes| Piece {
                base_offset: header.base_offset.0,
                last_offset: header.last_offset().0,
                max_timestamp: header.max_timestamp.0,
                bytes,
            };
            let cleaned = cleaning::clean_batch(&header, batch, &retain)
                .map_err(|error| error.to_string())?;
            let kept = match cleaned {
                Cleaned::Whole => stays(bytes.slice_ref(batch)),
                Cleaned::Rebuilt(rebuilt, gone) => {
                    records_removed += gone;
                    stays(Bytes::from(rebuilt))
                }
                Cleaned::Gone(gone) => {
                    records_removed += gone;
                    continue;
                }
            };
            blocks.push(kept)?;
        }
    }
    let (object, entries) = blocks.finish()?;
    Ok(Rewritten {
        records_removed,
        object,
        entries,
    })
}

/// Consecutive ranges gathered while their bytes add up to at most `budget` (one at
/// least).
fn groups(ranges: &[StoredRange], budget: i64) -> Vec<&[StoredRange]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut total = 0_i64;
    for (at, range) in ranges.iter().enumerate() {
        if at > start && total.saturating_add(range.length) > budget {
            out.extend(ranges.get(start..at));
            start = at;
            total = 0;
        }
        total = total.saturating_add(range.length);
    }
    if start < ranges.len() {
        out.extend(ranges.get(start..));
    }
    out
}

/// A range's bytes, throttled; `None` (logged) if it could not be read.
async fn read(storage: &SharedStorage, range: &StoredRange, io: &mut Throttle) -> Option<Bytes> {
    match storage.reader.range_bytes_passing(range).await {
        Ok(bytes) => {
            pace(io, bytes.len() as u64).await;
            Some(bytes)
        }
        Err(error) => {
            tracing::warn!(object = %range.object, %error, "the cleaner could not read a range; trying again later");
            None
        }
    }
}

/// Spends `bytes` of the cleaner's I/O rate, pausing as it says.
async fn pace(io: &mut Throttle, bytes: u64) {
    if let Some(pause) = io.spend(bytes) {
        tokio::time::sleep(pause).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(base: i64, max_timestamp: i64, length: i64) -> StoredRange {
        StoredRange {
            base_offset: base,
            last_offset: base + 9,
            max_timestamp,
            object: format!("wal/{base}"),
            position: 0,
            length,
        }
    }

    fn rules(ratio_ppm: u32, min_lag_ms: u64, max_lag_ms: u64) -> Cleanup {
        Cleanup {
            delete: false,
            compact: true,
            min_dirty_ratio_ppm: ratio_ppm,
            min_lag_ms,
            max_lag_ms,
            delete_retention_ms: 0,
        }
    }

    #[test]
    fn the_dirty_part_starts_at_the_cleaned_offset_and_stops_at_the_lag() {
        let ranges = [
            range(0, 100, 10),
            range(10, 200, 10),
            range(20, 300, 10),
            range(30, 900, 10),
        ];
        let now = Timestamp(1_000);
        assert_eq!(
            dirty_part(&ranges, 0, &rules(500_000, 0, u64::MAX), now),
            Some(0..4)
        );
        assert_eq!(
            dirty_part(&ranges, 20, &rules(500_000, 0, u64::MAX), now),
            Some(2..4),
            "half the bytes are dirty"
        );
        assert_eq!(
            dirty_part(&ranges, 20, &rules(600_000, 0, u64::MAX), now),
            None,
            "not dirty enough"
        );
        assert_eq!(
            dirty_part(&ranges, 20, &rules(600_000, 0, 650), now),
            Some(2..4),
            "its first range is older than max.compaction.lag.ms"
        );
        assert_eq!(
            dirty_part(&ranges, 10, &rules(0, 500, u64::MAX), now),
            Some(1..3),
            "newer records wait for min.compaction.lag.ms"
        );
        assert_eq!(dirty_part(&ranges, 40, &rules(0, 0, u64::MAX), now), None);
        assert_eq!(dirty_part(&[], 0, &rules(0, 0, u64::MAX), now), None);
    }

    #[test]
    fn a_batch_is_cleaned_only_if_whole_and_within_its_range() {
        let batch = spool_testkit::BatchBuilder::new()
            .base_offset(10)
            .record(spool_testkit::TestRecord {
                key: Some(b"k".to_vec()),
                ..spool_testkit::TestRecord::value(b"v".to_vec())
            })
            .build();
        let within = range(10, 0, i64::try_from(batch.len()).unwrap());
        assert_eq!(checked_batches(&within, &batch).unwrap().len(), 1);
        let mut corrupt = batch.clone();
        let last = corrupt.len() - 1;
        corrupt[last] ^= 0xff;
        assert!(
            checked_batches(&within, &corrupt).is_err(),
            "a CRC mismatch stops the pass"
        );
        let elsewhere = range(20, 0, within.length);
        assert!(checked_batches(&elsewhere, &batch).is_err());
    }

    #[test]
    fn groups_stay_within_their_budget_with_one_range_at_least() {
        let ranges = [
            range(0, 0, 60),
            range(10, 0, 60),
            range(20, 0, 200),
            range(30, 0, 10),
        ];
        let bases: Vec<Vec<i64>> = groups(&ranges, 100)
            .iter()
            .map(|g| g.iter().map(|r| r.base_offset).collect())
            .collect();
        assert_eq!(bases, vec![vec![0], vec![10], vec![20], vec![30]]);
        let bases: Vec<Vec<i64>> = groups(&ranges, 130)
            .iter()
            .map(|g| g.iter().map(|r| r.base_offset).collect())
            .collect();
        assert_eq!(bases, vec![vec![0, 10], vec![20], vec![30]]);
        assert!(groups(&[], 100).is_empty());
    }
}
