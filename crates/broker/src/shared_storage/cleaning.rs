//! Compacted topics (`cleanup.policy=compact`) in shared-storage mode: the local
//! cleaner's rules (`spool_log::cleaning`) applied to a partition's ranges in object
//! storage, every `log.cleaner.backoff.ms` while `log.cleaner.enable` holds.
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
//!    kept whole, rebuilt without the records that go, or dropped, by the local
//!    cleaner's rule; the result goes into segment objects of blocks of about
//!    `storage.compaction.block.bytes` (one object per 64 MiB read), each swapped
//!    into the catalogue in one transaction fenced by the leader epoch and refused if
//!    retention or DeleteRecords took a range meanwhile. Offsets never change; a
//!    range whose every record went leaves a gap, which readers skip.
//! 5. **Mark**: once every object is swapped, the catalogue's cleaned offset moves to
//!    that point; reads below it go to object storage, not to the tail (which keeps
//!    what it appended, uncleaned).
//!
//! Reading and writing are held to `log.cleaner.io.max.bytes.per.second`.

use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use object_store::{ObjectStoreExt, PutPayload};
use spool_log::cleaning::{self, Cleaned, OffsetMap, Retain};
use spool_log::{CleanerSettings, Cleanup};
use spool_metadata::{MetadataError, ObjectCommit, PartitionKey, RangeCommit, StoredRange};
use spool_model::{Offset, Timestamp};
use spool_objects::wal::WalObjectBuilder;
use spool_protocol::batch::BatchFrames;
use tokio::sync::watch;

use super::{SharedStorage, StorageCounts};
use crate::server::Shared;

/// Ranges of a partition looked at per pass.
const RANGES_PER_PASS: i64 = 100_000;
/// Bytes of ranges rewritten into one segment object at most.
const BYTES_PER_OBJECT: i64 = 64 << 20;

/// What a pass over one partition did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PassStats {
    pub(crate) ranges_read: usize,
    pub(crate) blocks_written: usize,
    pub(crate) bytes_read: u64,
    pub(crate) bytes_written: u64,
    pub(crate) records_removed: u64,
    /// The partition is clean below this offset now.
    pub(crate) cleaned_up_to: i64,
}

/// Runs the passes until the broker stops (not at all if the cleaner is off).
pub(crate) async fn run(shared: Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    let cleaner = shared.started_config().cleaner;
    if !cleaner.enabled {
        return;
    }
    loop {
        tokio::select! {
            () = tokio::time::sleep(cleaner.backoff) => {}
            _ = stopped.changed() => return,
        }
        if let Err(error) = pass(&shared, &cleaner.settings).await {
            tracing::warn!(%error, "cleaning compacted topics failed; trying again later");
        }
    }
}

/// One pass over every partition of every compacted topic.
pub(crate) async fn pass(
    shared: &Arc<Shared>,
    settings: &CleanerSettings,
) -> Result<(), MetadataError> {
    let Some(storage) = &shared.storage else {
        return Ok(());
    };
    for topic in shared.topics.all() {
        if !topic.log.cleanup.compact {
            continue;
        }
        for partition in 0..topic.record.partitions {
            let key = PartitionKey {
                topic_id: topic.record.id,
                partition,
            };
            let epoch = topic.leader_epoch(partition);
            let now = Timestamp::now();
            let Some(stats) =
                clean_partition(storage, key, epoch, &topic.log.cleanup, settings, now).await?
            else {
                continue;
            };
            tracing::info!(
                topic = %topic.record.name,
                partition,
                ranges = stats.ranges_read,
                blocks = stats.blocks_written,
                removed = stats.records_removed,
                bytes_before = stats.bytes_read,
                bytes_after = stats.bytes_written,
                cleaned_up_to = stats.cleaned_up_to,
                "cleaned a partition in object storage"
            );
            if let Some(marks) = topic
                .log_partition(partition)
                .and_then(|log_key| storage.marks_of(&log_key))
            {
                marks
                    .cleaned
                    .fetch_max(stats.cleaned_up_to, std::sync::atomic::Ordering::AcqRel);
            }
        }
    }
    Ok(())
}

/// One pass over one partition (see the module docs); `None`: nothing was done.
pub(crate) async fn clean_partition(
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
    let ranges = storage
        .catalogue
        .ranges_from(key, state.log_start, i64::MAX, RANGES_PER_PASS)
        .await?;
    let Some((_, cleanable)) = ranges.split_last() else {
        return Ok(None);
    };
    let first_dirty = state.cleaned_offset;
    let Some(dirty) = dirty_part(cleanable, first_dirty, rules, now) else {
        return Ok(None);
    };
    let mut io = Throttle::new(settings.io_bytes_per_second);
    let mut stats = PassStats::default();
    let map = OffsetMap::with_budget(settings.dedupe_buffer_bytes);
    let dirty_ranges = cleanable.get(dirty).unwrap_or_default();
    let Some((map, mapped_end)) =
        map_dirty_keys(storage, dirty_ranges, first_dirty, map, &mut io).await
    else {
        return Ok(None);
    };
    let map = Arc::new(map);
    let delete_retention = i64::try_from(rules.delete_retention_ms).unwrap_or(i64::MAX);
    let retain = RetainRule {
        map,
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
        let swapped = rewrite_group(
            storage,
            key,
            leader_epoch,
            group,
            &retain,
            &mut io,
            &mut stats,
        )
        .await?;
        if !swapped {
            return Ok(None);
        }
    }
    if !storage
        .catalogue
        .advance_cleaned_offset(key, leader_epoch, mapped_end)
        .await?
    {
        return Ok(None);
    }
    stats.cleaned_up_to = mapped_end;
    Ok(Some(stats))
}

/// Which of `cleanable` (oldest first) are dirty and due for cleaning, if any.
pub(crate) fn dirty_part(
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
    mut map: OffsetMap,
    io: &mut Throttle,
) -> Option<(OffsetMap, i64)> {
    let mut mapped_end = None;
    for range in dirty {
        let bytes = read(storage, range, io).await?;
        let object = range.object.clone();
        let (returned, mapped) =
            tokio::task::spawn_blocking(move || map_range(map, &bytes, first_dirty))
                .await
                .ok()?;
        map = returned;
        match mapped {
            Err(error) => {
                tracing::error!(%object, %error, "the cleaner cannot read a range; not cleaning");
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
    bytes: &[u8],
    first_dirty: i64,
) -> (OffsetMap, Result<(Option<i64>, bool), String>) {
    let mut end = None;
    for frame in BatchFrames::new(bytes) {
        let (header, batch) = match frame {
            Ok(frame) => frame,
            Err(error) => return (map, Err(error.to_string())),
        };
        if header.next_offset().0 <= first_dirty {
            continue;
        }
        if !map.has_room_for(usize::try_from(header.record_count).unwrap_or(0)) {
            return (map, Ok((end, true)));
        }
        if let Err(error) = cleaning::map_keys(&mut map, &header, batch) {
            return (map, Err(error.to_string()));
        }
        end = Some(header.next_offset().0);
    }
    (map, Ok((end, false)))
}

/// The rule of what stays, shareable with the blocking pool.
struct RetainRule {
    map: Arc<OffsetMap>,
    mapped_end: i64,
    first_dirty: i64,
    delete_horizon: i64,
}

/// A batch that stays, rebuilt or as it was.
struct KeptBatch {
    base_offset: i64,
    last_offset: i64,
    max_timestamp: i64,
    bytes: Bytes,
}

/// Rewrites a group of ranges into one segment object and swaps it in; `false` if the
/// swap was refused or a range could not be read (the pass stops).
async fn rewrite_group(
    storage: &SharedStorage,
    key: PartitionKey,
    leader_epoch: i32,
    group: &[StoredRange],
    retain: &RetainRule,
    io: &mut Throttle,
    stats: &mut PassStats,
) -> Result<bool, MetadataError> {
    let block_bytes = usize::try_from(storage.compaction.block_bytes).unwrap_or(usize::MAX);
    let mut blocks = Blocks::new(key, block_bytes);
    for range in group {
        let Some(bytes) = read(storage, range, io).await else {
            return Ok(false);
        };
        stats.ranges_read += 1;
        stats.bytes_read += bytes.len() as u64;
        let map = retain.map.clone();
        let (mapped_end, first_dirty, horizon) =
            (retain.mapped_end, retain.first_dirty, retain.delete_horizon);
        let cleaned = tokio::task::spawn_blocking(move || {
            let rule = Retain {
                map: &map,
                mapped_end: Offset(mapped_end),
                first_dirty: Offset(first_dirty),
                delete_horizon: Timestamp(horizon),
            };
            clean_range(&bytes, &rule)
        })
        .await;
        let (kept, removed) = match cleaned {
            Ok(Ok(cleaned)) => cleaned,
            Ok(Err(error)) => {
                tracing::error!(object = %range.object, %error, "the cleaner cannot read a range; not cleaning");
                return Ok(false);
            }
            Err(error) => {
                tracing::error!(%error, "a cleaning task failed");
                return Ok(false);
            }
        };
        stats.records_removed += removed;
        for batch in kept {
            if !blocks.push(batch) {
                return Ok(false);
            }
        }
    }
    let Some((builder, block_count)) = blocks.finish() else {
        return Ok(false);
    };
    let (object, entries) = builder.finish();
    let name = format!(
        "seg/{:013}-{}",
        Timestamp::now().0,
        uuid::Uuid::new_v4().simple()
    );
    let size = object.len() as u64;
    io.spend(size).await;
    if let Err(error) = storage
        .objects
        .store
        .put(&storage.objects.path(&name), PutPayload::from(object))
        .await
    {
        tracing::warn!(%error, "writing a cleaned segment object failed; trying again later");
        StorageCounts::add(&storage.counts.put_failures, 1);
        return Ok(false);
    }
    StorageCounts::add(&storage.counts.puts, 1);
    StorageCounts::add(&storage.counts.put_bytes, size);
    let commit = ObjectCommit {
        name: name.clone(),
        size: i64::try_from(size).unwrap_or(i64::MAX),
        ranges: entries
            .iter()
            .map(|entry| RangeCommit {
                key,
                leader_epoch,
                base_offset: entry.base_offset,
                last_offset: entry.last_offset,
                max_timestamp: entry.max_timestamp,
                position: i64::try_from(entry.position).unwrap_or(i64::MAX),
                length: i64::from(entry.length),
                producer_state: None,
            })
            .collect(),
    };
    let replaced: Vec<i64> = group.iter().map(|range| range.base_offset).collect();
    if !storage
        .catalogue
        .replace_ranges(key, leader_epoch, &replaced, &commit)
        .await?
    {
        tracing::info!(?key, object = %name, "a cleaning swap was refused (the ranges moved on); its object goes as an orphan");
        return Ok(false);
    }
    stats.blocks_written += block_count;
    stats.bytes_written += entries.iter().map(|e| u64::from(e.length)).sum::<u64>();
    Ok(true)
}

/// What stays of a range's batches, and how many records went.
fn clean_range(bytes: &Bytes, retain: &Retain<'_>) -> Result<(Vec<KeptBatch>, u64), String> {
    let mut kept = Vec::new();
    let mut removed = 0;
    for frame in BatchFrames::new(bytes) {
        let (header, batch) = frame.map_err(|error| error.to_string())?;
        let stays = |bytes: Bytes| KeptBatch {
            base_offset: header.base_offset.0,
            last_offset: header.last_offset().0,
            max_timestamp: header.max_timestamp.0,
            bytes,
        };
        match cleaning::clean_batch(&header, batch, retain).map_err(|e| e.to_string())? {
            Cleaned::Whole => kept.push(stays(bytes.slice_ref(batch))),
            Cleaned::Rebuilt(rebuilt, gone) => {
                removed += gone;
                kept.push(stays(Bytes::from(rebuilt)));
            }
            Cleaned::Gone(gone) => removed += gone,
        }
    }
    Ok((kept, removed))
}

/// Kept batches gathered into blocks of about `block_bytes` for one segment object.
struct Blocks {
    key: PartitionKey,
    block_bytes: usize,
    builder: WalObjectBuilder,
    open: Option<(i64, i64, i64, BytesMut)>,
    count: usize,
    failed: bool,
}

impl Blocks {
    fn new(key: PartitionKey, block_bytes: usize) -> Blocks {
        Blocks {
            key,
            block_bytes,
            builder: WalObjectBuilder::new(),
            open: None,
            count: 0,
            failed: false,
        }
    }

    /// Adds a batch; `false` if the object refused a block (the rewrite is
    /// abandoned: a swap without every block would lose records).
    fn push(&mut self, batch: KeptBatch) -> bool {
        let (_, last, max_timestamp, data) = self.open.get_or_insert_with(|| {
            (
                batch.base_offset,
                batch.last_offset,
                batch.max_timestamp,
                BytesMut::new(),
            )
        });
        *last = batch.last_offset;
        *max_timestamp = (*max_timestamp).max(batch.max_timestamp);
        data.extend_from_slice(&batch.bytes);
        if data.len() >= self.block_bytes {
            self.close_block();
        }
        !self.failed
    }

    fn close_block(&mut self) {
        let Some((base, last, max_timestamp, data)) = self.open.take() else {
            return;
        };
        let (topic_id, partition) = (self.key.topic_id, self.key.partition);
        match self
            .builder
            .add_block(topic_id, partition, base, last, max_timestamp, &data)
        {
            Ok(()) => self.count += 1,
            Err(error) => {
                tracing::error!(key = ?self.key, %error, "a cleaned block was refused; cleaning abandoned");
                self.failed = true;
            }
        }
    }

    /// The object's builder and its block count (`None` if a block was refused).
    fn finish(mut self) -> Option<(WalObjectBuilder, usize)> {
        self.close_block();
        (!self.failed).then_some((self.builder, self.count))
    }
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
            io.spend(bytes.len() as u64).await;
            Some(bytes)
        }
        Err(error) => {
            tracing::warn!(object = %range.object, %error, "the cleaner could not read a range; trying again later");
            None
        }
    }
}

/// Holds the cleaner to `log.cleaner.io.max.bytes.per.second` by sleeping.
#[derive(Debug)]
struct Throttle {
    rate: Option<u64>,
    started: Instant,
    bytes: u64,
}

impl Throttle {
    fn new(rate: Option<u64>) -> Throttle {
        Throttle {
            rate,
            started: Instant::now(),
            bytes: 0,
        }
    }

    async fn spend(&mut self, bytes: u64) {
        let Some(rate) = self.rate.filter(|r| *r > 0) else {
            return;
        };
        self.bytes += bytes;
        let due = Duration::from_secs_f64(self.bytes as f64 / rate as f64);
        let elapsed = self.started.elapsed();
        if due > elapsed {
            tokio::time::sleep(due - elapsed).await;
        }
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
