//! Log compaction (`cleanup.policy=compact`): the cleaner keeps, of the closed
//! segments, the latest record of each key, as Kafka's log cleaner does.
//!
//! A pass over one partition:
//! 1. **What may be cleaned**: closed segments wholly below the high watermark and the
//!    durable offset, before the segments holding those positions (the checkpoint
//!    points into them); the active segment never. Of those, the *dirty* part starts
//!    where the last pass stopped (`cleaner-offset`) and ends before the first segment
//!    with a record newer than `min.compaction.lag.ms`.
//! 2. **Whether to clean**: the dirty part is at least `min.cleanable.dirty.ratio` of
//!    the cleanable bytes, or its first record is older than `max.compaction.lag.ms`.
//! 3. **The offset map**: the dirty batches are read (inflated if compressed) and each
//!    key's latest offset recorded, in a map bounded by
//!    `log.cleaner.dedupe.buffer.size`; when it is full the pass cleans only up to
//!    the last whole batch mapped, and the next pass goes on from there.
//! 4. **Rewrite**: every cleanable segment up to that point is rewritten, consecutive
//!    segments merged while they fit `segment.bytes`. A record is kept when it is at or
//!    beyond the mapped end, or the latest of its key; a tombstone (null value) that is
//!    the latest of its key goes once it was already in the clean part at the start of
//!    the pass and its batch's newest timestamp is older than `delete.retention.ms`.
//!    Records without a key go (Kafka's rule; produce refuses them). A batch whose
//!    records all stay is copied as it is; one that loses some is rebuilt with the same
//!    base offset, `lastOffsetDelta`, timestamps, producer fields and codec; one that
//!    loses all goes. Offsets never change: gaps appear, which clients skip. Control
//!    batches (transaction markers; none exist until transactions do) are kept; when
//!    transactions come, Kafka's rule applies: an aborted transaction's records go
//!    with its marker once cleaned, and a marker goes once nothing of its transaction
//!    is left and `delete.retention.ms` has passed.
//! 5. **Swap**: a fresh checkpoint first (so none on disk names a position in a
//!    segment being rewritten), then crash-safe (see [`swap`]), then another.
//!
//! All I/O is throttled to `log.cleaner.io.max.bytes.per.second`. Appends, reads and
//! retention go on during a pass: the state lock is held only to pick the segments and
//! for the swap, which checks that they are all still there.

mod offset_map;
pub mod rules;
pub(crate) mod swap;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use spool_model::{BATCH_HEADER_LEN, Offset, RecordBatchHeader, Timestamp};
use spool_store::{OpenMode, StoreFile};

use self::rules::{Cleaned, OffsetMap, Retain, Throttle};
use self::swap::SwapGroup;
use crate::config::LogConfig;
use crate::error::{LogError, Result};
use crate::partition::PartitionLog;
use crate::scan;
use crate::segment::Segment;

/// The broker-wide settings of the cleaner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanerSettings {
    /// `log.cleaner.dedupe.buffer.size`: the memory of one pass's offset map.
    pub dedupe_buffer_bytes: u64,
    /// `log.cleaner.io.max.bytes.per.second`: read and written bytes per second;
    /// `None` for no limit.
    pub io_bytes_per_second: Option<u64>,
}

impl Default for CleanerSettings {
    fn default() -> Self {
        CleanerSettings {
            dedupe_buffer_bytes: 128 << 20,
            io_bytes_per_second: None,
        }
    }
}

/// What a pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CleanStats {
    pub segments_read: usize,
    pub segments_written: usize,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub records_removed: u64,
    /// The log is clean below this offset now.
    pub cleaned_up_to: Offset,
}

/// Bytes of a cleaned segment gathered before they are written.
const WRITE_CHUNK: usize = 1 << 20;

/// A closed segment the pass may rewrite.
#[derive(Debug, Clone)]
struct Cleanable {
    base: Offset,
    size: u64,
    /// The next segment's base: where this one's offsets end.
    end: Offset,
    max_timestamp: Option<Timestamp>,
    file: Arc<dyn StoreFile>,
}

impl PartitionLog {
    /// How far the log has been cleaned: below this offset, each key has at most one
    /// record (zero for a log never cleaned).
    pub fn cleaned_up_to(&self) -> Result<Offset> {
        swap::read_cleaner_offset(&self.files, &self.dir)
    }

    /// One cleaning pass, if the partition is compacted and due (see the module docs).
    /// `stop` ends it early, leaving the log as it was. `None`: nothing was done.
    pub fn clean(
        &self,
        now: Timestamp,
        settings: &CleanerSettings,
        stop: &AtomicBool,
    ) -> Result<Option<CleanStats>> {
        let config = self.config();
        if !config.cleanup.compact {
            return Ok(None);
        }
        let _one_pass = self
            .cleaning
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let first_dirty = swap::read_cleaner_offset(&self.files, &self.dir)?;
        let cleanable = self.cleanable_segments(&config)?;
        let lag_cutoff = Timestamp(
            now.0
                .saturating_sub(i64::try_from(config.cleanup.min_lag_ms).unwrap_or(i64::MAX)),
        );
        // The dirty part: from where the last pass stopped, up to the first segment
        // with records too new to compact.
        let dirty_from = cleanable.iter().position(|s| s.end > first_dirty);
        let Some(dirty_from) = dirty_from else {
            return Ok(None);
        };
        let dirty_to = cleanable
            .iter()
            .enumerate()
            .skip(dirty_from)
            .find(|(_, s)| {
                config.cleanup.min_lag_ms > 0 && s.max_timestamp.is_none_or(|t| t > lag_cutoff)
            })
            .map_or(cleanable.len(), |(at, _)| at);
        let dirty = cleanable.get(dirty_from..dirty_to).unwrap_or_default();
        if dirty.is_empty() {
            return Ok(None);
        }
        let dirty_bytes: u64 = dirty.iter().map(|s| s.size).sum();
        let total_bytes: u64 = cleanable
            .get(..dirty_to)
            .unwrap_or_default()
            .iter()
            .map(|s| s.size)
            .sum();
        let ratio_due = u128::from(dirty_bytes) * 1_000_000
            >= u128::from(config.cleanup.min_dirty_ratio_ppm) * u128::from(total_bytes.max(1));
        let lag_due = self
            .oldest_dirty_timestamp(dirty, first_dirty)?
            .is_some_and(|t| {
                u64::try_from(now.0.saturating_sub(t.0)).unwrap_or(0) > config.cleanup.max_lag_ms
            });
        if !(ratio_due || lag_due) {
            return Ok(None);
        }
        let started = Instant::now();
        let mut throttle = Throttle::new(settings.io_bytes_per_second);
        let mut stats = CleanStats::default();
        let mut map = OffsetMap::with_budget(settings.dedupe_buffer_bytes);
        let Some(mapped_end) = self.build_offset_map(
            dirty,
            first_dirty,
            &mut map,
            &mut throttle,
            &mut stats,
            stop,
        )?
        else {
            return Ok(None);
        };
        let rewrite: Vec<Cleanable> = cleanable
            .iter()
            .take_while(|s| s.base < mapped_end)
            .cloned()
            .collect();
        let groups = group_by_size(&rewrite, config.segment_bytes);
        let delete_horizon =
            Timestamp(now.0.saturating_sub(
                i64::try_from(config.cleanup.delete_retention_ms).unwrap_or(i64::MAX),
            ));
        let retain = Retain {
            map: &map,
            mapped_end,
            first_dirty,
            delete_horizon,
        };
        let mut swaps = Vec::with_capacity(groups.len());
        for group in &groups {
            if stop.load(Ordering::SeqCst) {
                swap::recover(&self.files, &self.dir)?;
                return Ok(None);
            }
            let written = self.write_cleaned(group, &retain, &config, &mut throttle, &mut stats)?;
            swaps.push((group_swap(group), written));
        }
        stats.segments_read = rewrite.len();
        stats.segments_written = swaps.len();
        stats.cleaned_up_to = mapped_end;
        if !self.commit(&swaps, mapped_end)? {
            return Ok(None);
        }
        tracing::info!(
            dir = %self.dir.display(),
            segments = stats.segments_read,
            into = stats.segments_written,
            removed = stats.records_removed,
            bytes_before = rewrite.iter().map(|s| s.size).sum::<u64>(),
            bytes_after = stats.bytes_written,
            cleaned_up_to = %mapped_end,
            keys = map.len(),
            ms = started.elapsed().as_millis(),
            "cleaned the log"
        );
        Ok(Some(stats))
    }

    /// Closed segments the cleaner may rewrite, oldest first.
    fn cleanable_segments(&self, config: &LogConfig) -> Result<Vec<Cleanable>> {
        let interval = config.index_interval_bytes;
        let mut state = self.lock();
        // Not past an open transaction either: whether its records count is not
        // decided yet.
        let limit = state
            .high_watermark
            .offset
            .min(state.durable.offset)
            .min(state.stable_offset());
        let pinned = state
            .high_watermark
            .segment_base
            .min(state.durable.segment_base);
        let mut out = Vec::new();
        for at in 0..state.segments.len().saturating_sub(1) {
            let end = match state.segments.get(at + 1) {
                Some(next) => next.base,
                None => break,
            };
            let Some(segment) = state.segments.get_mut(at) else {
                break;
            };
            if end > limit || segment.base >= pinned {
                break;
            }
            let max_timestamp = segment.max_timestamp(&self.files, interval)?;
            out.push(Cleanable {
                base: segment.base,
                size: segment.size,
                end,
                max_timestamp,
                file: segment.log_file(&self.files)?,
            });
        }
        Ok(out)
    }

    /// The first timestamp of the dirty part, for `max.compaction.lag.ms`.
    fn oldest_dirty_timestamp(
        &self,
        dirty: &[Cleanable],
        first_dirty: Offset,
    ) -> Result<Option<Timestamp>> {
        let Some(first) = dirty.first() else {
            return Ok(None);
        };
        let mut position = 0;
        while let Some(header) = scan::read_header(first.file.as_ref(), position, first.size)
            .map_err(self.cleaner_io("read"))?
        {
            if header.next_offset() > first_dirty {
                return Ok(Some(header.base_timestamp));
            }
            let len = header.total_len();
            if len < BATCH_HEADER_LEN {
                break;
            }
            position += len as u64;
        }
        Ok(None)
    }

    /// Maps each key of the dirty batches to its latest offset; returns the offset
    /// after the last batch mapped (`None` when not even one batch fits, or on stop).
    fn build_offset_map(
        &self,
        dirty: &[Cleanable],
        first_dirty: Offset,
        map: &mut OffsetMap,
        throttle: &mut Throttle,
        stats: &mut CleanStats,
        stop: &AtomicBool,
    ) -> Result<Option<Offset>> {
        let mut mapped_end = None;
        let mut buffer = Vec::new();
        // Records of aborted transactions never become a key's latest: they would
        // take the place of the committed record before them.
        let aborted: Vec<crate::AbortedTxn> =
            self.lock().producers.txns.aborted.iter().copied().collect();
        for segment in dirty {
            let mut position = 0;
            while position < segment.size {
                if stop.load(Ordering::SeqCst) {
                    return Ok(None);
                }
                let header = read_batch(segment, position, &mut buffer, &self.dir)?;
                let len = header.total_len() as u64;
                position += len;
                if header.next_offset() <= first_dirty {
                    continue;
                }
                let count = usize::try_from(header.record_count).unwrap_or(0);
                if !map.has_room_for(count) {
                    if mapped_end.is_none() {
                        tracing::warn!(dir = %self.dir.display(), records = count, "a batch has more keys than log.cleaner.dedupe.buffer.size holds; not cleaning");
                    }
                    return Ok(mapped_end);
                }
                throttle.sleep(len);
                stats.bytes_read += len;
                if !crate::is_aborted_batch(&aborted, &header) {
                    rules::map_keys(map, &header, &buffer)
                        .map_err(|error| self.unreadable(&header, &error))?;
                }
                mapped_end = Some(header.next_offset());
            }
        }
        Ok(mapped_end)
    }

    /// Writes the cleaned segment of `group` under its `.cleaned` names, with its
    /// indexes, all fsynced; returns its size and the segment's end offset.
    fn write_cleaned(
        &self,
        group: &[Cleanable],
        retain: &Retain<'_>,
        config: &LogConfig,
        throttle: &mut Throttle,
        stats: &mut CleanStats,
    ) -> Result<(u64, Offset)> {
        let base = group.first().map_or(Offset::ZERO, |s| s.base);
        let end = group.last().map_or(base, |s| s.end);
        let paths = swap::cleaned_paths(&self.dir, base);
        let store = self.files.store();
        let out = store
            .open(&paths.log, OpenMode::Create)
            .map_err(LogError::io("create", &paths.log))?;
        out.set_len(0)
            .map_err(LogError::io("truncate", &paths.log))?;
        let mut pending = Vec::with_capacity(WRITE_CHUNK);
        let mut written = 0u64;
        let mut buffer = Vec::new();
        for segment in group {
            let mut position = 0;
            while position < segment.size {
                let header = read_batch(segment, position, &mut buffer, &self.dir)?;
                let len = header.total_len() as u64;
                position += len;
                throttle.sleep(len);
                stats.bytes_read += len;
                match self.cleaned_batch(&header, &buffer, retain)? {
                    Cleaned::Whole => pending.extend_from_slice(&buffer),
                    Cleaned::Rebuilt(batch, removed) => {
                        pending.extend_from_slice(&batch);
                        stats.records_removed += removed;
                    }
                    Cleaned::Gone(removed) => stats.records_removed += removed,
                }
                if pending.len() >= WRITE_CHUNK {
                    written +=
                        self.flush_pending(&out, &mut pending, written, &paths.log, throttle)?;
                }
            }
        }
        written += self.flush_pending(&out, &mut pending, written, &paths.log, throttle)?;
        out.sync().map_err(LogError::io("fsync", &paths.log))?;
        stats.bytes_written += written;
        // The indexes, from the batches just written.
        let mut segment = Segment::new(&self.dir, base, written, end);
        segment.paths = paths.clone();
        segment.rebuild_index(&self.files, config.index_interval_bytes)?;
        for path in [&paths.index, &paths.time_index] {
            let file = self.files.get(path).map_err(LogError::io("open", path))?;
            file.sync().map_err(LogError::io("fsync", path))?;
        }
        for path in [&paths.log, &paths.index, &paths.time_index] {
            self.files.forget(path);
        }
        store
            .sync_dir(&self.dir)
            .map_err(LogError::io("fsync directory", &self.dir))?;
        Ok((written, end))
    }

    fn flush_pending(
        &self,
        out: &Arc<dyn StoreFile>,
        pending: &mut Vec<u8>,
        at: u64,
        path: &Path,
        throttle: &mut Throttle,
    ) -> Result<u64> {
        if pending.is_empty() {
            return Ok(0);
        }
        out.write_at(pending, at)
            .map_err(LogError::io("write", path))?;
        let len = pending.len() as u64;
        throttle.sleep(len);
        pending.clear();
        Ok(len)
    }

    /// What becomes of one batch.
    fn cleaned_batch(
        &self,
        header: &RecordBatchHeader,
        batch: &[u8],
        retain: &Retain<'_>,
    ) -> Result<Cleaned> {
        rules::clean_batch(header, batch, retain).map_err(|error| self.unreadable(header, &error))
    }

    /// Puts the cleaned segments in place (see [`swap`]); `false` when the log changed
    /// under the pass (retention deleted a segment of it) and nothing was swapped.
    fn commit(&self, swaps: &[(SwapGroup, (u64, Offset))], cleaned_up_to: Offset) -> Result<bool> {
        // The checkpoint on disk may be older than the state the segments were picked
        // from, and name a position in a segment about to be rewritten: write a fresh
        // one first. Its recovery point lies past every rewritten segment (they were
        // picked below the durable position, which only grows).
        {
            self.lock().last_checkpoint = None;
        }
        self.write_checkpoint()?;
        let mut state = self.lock();
        let bases: Vec<Offset> = state.segments.iter().map(|s| s.base).collect();
        let all_there = swaps
            .iter()
            .all(|(group, _)| group.old_bases.iter().all(|b| bases.contains(b)));
        if state.failed || !all_there {
            drop(state);
            swap::recover(&self.files, &self.dir)?;
            return Ok(false);
        }
        let groups: Vec<SwapGroup> = swaps.iter().map(|(group, _)| group.clone()).collect();
        swap::write_marker(&self.files, &self.dir, &groups, cleaned_up_to)?;
        if let Err(error) = swap::finish(&self.files, &self.dir, &groups, cleaned_up_to) {
            // Committed: the next open finishes the swap. Until then the files on disk
            // and the segments in memory may disagree: nothing more is read or written.
            state.failed = true;
            state.poisoned = true;
            return Err(error);
        }
        for (group, (size, end)) in swaps {
            let first = state.segments.iter().position(|s| s.base == group.base);
            let Some(first) = first else { continue };
            let count = group.old_bases.len();
            let replacement = Segment::new(&self.dir, group.base, *size, *end);
            state.segments.splice(first..first + count, [replacement]);
        }
        state.last_checkpoint = None;
        drop(state);
        self.write_checkpoint()?;
        Ok(true)
    }

    fn cleaner_io(&self, operation: &'static str) -> impl Fn(std::io::Error) -> LogError + '_ {
        move |source| LogError::Io {
            operation,
            path: self.dir.clone(),
            source,
        }
    }

    fn unreadable(&self, header: &RecordBatchHeader, error: &dyn std::fmt::Display) -> LogError {
        tracing::error!(dir = %self.dir.display(), base = %header.base_offset, %error, "the cleaner cannot read a batch");
        LogError::Failed {
            path: self.dir.clone(),
        }
    }
}

/// Reads the whole batch at `position` into `buffer`, checking its CRC.
fn read_batch(
    segment: &Cleanable,
    position: u64,
    buffer: &mut Vec<u8>,
    dir: &Path,
) -> Result<RecordBatchHeader> {
    let checked = scan::read_valid_batch(segment.file.as_ref(), position, segment.size, buffer)
        .map_err(LogError::io("read", dir))?;
    checked.map_err(|source| {
        tracing::error!(dir = %dir.display(), base = %segment.base, position, %source, "the cleaner found a bad batch");
        LogError::Failed {
            path: dir.to_path_buf(),
        }
    })
}

/// Consecutive segments merged while their sizes add up to at most `segment_bytes`
/// (one at least) and their offsets still fit the index's 32-bit relative offsets,
/// as Kafka groups them.
fn group_by_size(segments: &[Cleanable], segment_bytes: u64) -> Vec<Vec<Cleanable>> {
    let mut groups: Vec<Vec<Cleanable>> = Vec::new();
    let mut size = 0;
    for segment in segments {
        let fits_offsets = |group: &[Cleanable]| {
            group
                .first()
                .is_some_and(|first| segment.end.distance_from(first.base) <= i64::from(i32::MAX))
        };
        match groups.last_mut() {
            Some(group) if size + segment.size <= segment_bytes && fits_offsets(group) => {
                size += segment.size;
                group.push(segment.clone());
            }
            _ => {
                size = segment.size;
                groups.push(vec![segment.clone()]);
            }
        }
    }
    groups
}

fn group_swap(group: &[Cleanable]) -> SwapGroup {
    SwapGroup {
        base: group.first().map_or(Offset::ZERO, |s| s.base),
        old_bases: group.iter().map(|s| s.base).collect(),
    }
}
