//! One partition's log: append, durability, offsets, roll.
//!
//! Reads and lookups by timestamp are in `partition/reading.rs`, retention and
//! DeleteRecords in `partition/trimming.rs`, opening and recovery in `recovery.rs`.

mod reading;
mod trimming;
mod upload;

pub use upload::{TailStart, UploadChunk, UploadFailure};

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use prometheus_client::metrics::histogram::Histogram;
use spool_model::{Offset, RecordBatchHeader, Timestamp, TimestampType};
use spool_protocol::batch::{self, BatchError};
use spool_protocol::control;
use spool_store::StoreFile;
use tokio::sync::watch;

use crate::checkpoint::{Checkpoint, LogPosition, ProducerSnapshot};
use crate::config::{FlushPolicy, LogConfig, MAX_SEGMENT_BYTES};
use crate::error::{LogError, Result};
use crate::file_cache::FileCache;
use crate::leader_epochs::{EpochStart, LeaderEpochs};
use crate::producers::{self, ProducerError, ProducerStates, SequenceCheck};
use crate::segment::{NewIndexEntries, Segment};
use crate::tail_cache::TailCache;

/// Where an append landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendInfo {
    /// Offset of the first record of the first batch.
    pub base_offset: Offset,
    /// Offset of the last record slot of the last batch.
    pub last_offset: Offset,
    /// The broker time written into the batches for LogAppendTime topics.
    pub log_append_time: Option<Timestamp>,
    /// The batch was a retry of an idempotent batch already in the log: nothing was
    /// written, and the offsets are the original ones.
    pub duplicate: bool,
}

impl AppendInfo {
    /// The log end offset right after this append: wait for it to be durable.
    #[must_use]
    pub fn next_offset(&self) -> Offset {
        self.last_offset.plus(1)
    }
}

/// The offsets of a partition, which always satisfy
/// `log_start <= high_watermark <= log_end` and `durable <= log_end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogOffsets {
    /// The first offset that may still be read.
    pub log_start: Offset,
    /// Consumers see offsets below this one.
    pub high_watermark: Offset,
    /// The offset the next appended record gets.
    pub log_end: Offset,
    /// Offsets below this one have been fsynced.
    pub durable: Offset,
}

/// A partition's segments and their size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskUsage {
    pub segments: usize,
    /// Bytes of whole batches in the segment files.
    pub bytes: u64,
}

/// A partition's segmented log. Share it with `Arc`; every method takes `&self`.
pub struct PartitionLog {
    pub(crate) dir: PathBuf,
    pub(crate) files: Arc<FileCache>,
    config: RwLock<Arc<LogConfig>>,
    pub(crate) state: Mutex<LogState>,
    /// Held by the one thread running an fsync; the others wait and find their data
    /// durable when they get it (group commit).
    sync_lock: Mutex<()>,
    durable_tx: watch::Sender<Offset>,
    high_watermark_tx: watch::Sender<Offset>,
    /// Asks the owner's flusher for a sync; set by the `LogManager`.
    flush_hook: OnceLock<Box<dyn Fn() + Send + Sync>>,
    /// Times each fsync round (the broker's `/metrics`); set by the `LogManager`.
    sync_timer: OnceLock<Histogram>,
    /// Held while a checkpoint is snapshotted, written and recorded.
    checkpoint_lock: Mutex<()>,
    /// A flush request is queued and not yet taken by a flusher.
    pub(crate) flush_queued: std::sync::atomic::AtomicBool,
    /// Held by a cleaning pass: one at a time.
    pub(crate) cleaning: Mutex<()>,
    /// The latest leader epoch recorded (-1 for none), read without the state lock
    /// on every request.
    leader_epoch: AtomicI32,
}

impl std::fmt::Debug for PartitionLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionLog")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
pub(crate) struct LogState {
    /// Sorted by base offset; the last one is the active segment. Never empty.
    pub(crate) segments: Vec<Segment>,
    pub(crate) log_start: Offset,
    pub(crate) high_watermark: LogPosition,
    pub(crate) durable: LogPosition,
    /// Files of closed segments written since the last sync.
    pub(crate) unsynced: Vec<Arc<dyn StoreFile>>,
    /// A segment file was created or deleted since the last directory sync.
    pub(crate) dir_dirty: bool,
    pub(crate) tail: TailCache,
    pub(crate) unflushed_records: u64,
    pub(crate) last_sync: Instant,
    /// Set when a write or fsync failed: the file may now hold bytes we never
    /// accounted for, so nothing more is written until the log is reopened.
    pub(crate) failed: bool,
    /// Set when a panic interrupted work under the state lock: nothing more is read
    /// or written until the log is reopened.
    pub(crate) poisoned: bool,
    pub(crate) last_checkpoint: Option<Checkpoint>,
    pub(crate) last_used: Instant,
    /// Idempotent producers' recent batches, to recognise retries.
    pub(crate) producers: ProducerStates,
    /// Which leader epoch began at which offset; the latest stamps every append.
    pub(crate) leader_epochs: LeaderEpochs,
    /// Set for the tail of a shared-storage partition: appends not yet uploaded.
    pub(crate) upload: Option<upload::UploadBuffer>,
}

impl LogState {
    pub(crate) fn active(&self) -> &Segment {
        // Invariant: `segments` is never empty (see the field's doc).
        self.segments
            .last()
            .unwrap_or_else(|| unreachable!("a log always has an active segment"))
    }

    pub(crate) fn active_mut(&mut self) -> &mut Segment {
        self.segments
            .last_mut()
            .unwrap_or_else(|| unreachable!("a log always has an active segment"))
    }

    pub(crate) fn log_end(&self) -> Offset {
        self.active().next_offset
    }

    pub(crate) fn end_position(&self) -> LogPosition {
        let active = self.active();
        LogPosition {
            offset: active.next_offset,
            segment_base: active.base,
            position: active.size,
        }
    }

    pub(crate) fn offsets(&self) -> LogOffsets {
        LogOffsets {
            log_start: self.log_start,
            high_watermark: self.high_watermark.offset,
            log_end: self.log_end(),
            durable: self.durable.offset,
        }
    }

    /// The last stable offset: below it, every transaction is decided.
    pub(crate) fn stable_offset(&self) -> Offset {
        self.producers
            .txns
            .stable_offset(self.high_watermark.offset)
    }

    pub(crate) fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            log_start: self.log_start,
            recovery_point: self.durable,
        }
    }

    fn assert_invariants(&self) {
        let o = self.offsets();
        debug_assert!(o.log_start <= o.high_watermark, "{o:?}");
        debug_assert!(o.high_watermark <= o.log_end, "{o:?}");
        debug_assert!(o.durable <= o.log_end, "{o:?}");
    }
}

impl PartitionLog {
    pub(crate) fn from_parts(
        dir: PathBuf,
        files: Arc<FileCache>,
        config: LogConfig,
        state: LogState,
    ) -> PartitionLog {
        let (durable_tx, _) = watch::channel(state.durable.offset);
        let (high_watermark_tx, _) = watch::channel(state.high_watermark.offset);
        PartitionLog {
            dir,
            files,
            config: RwLock::new(Arc::new(config)),
            state: Mutex::new(state),
            sync_lock: Mutex::new(()),
            durable_tx,
            high_watermark_tx,
            flush_hook: OnceLock::new(),
            sync_timer: OnceLock::new(),
            flush_queued: std::sync::atomic::AtomicBool::new(false),
            checkpoint_lock: Mutex::new(()),
            cleaning: Mutex::new(()),
            leader_epoch: AtomicI32::new(-1),
        }
    }

    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Makes `epoch` the partition's leader epoch from the current log end: recorded
    /// durably in the history before any batch is stamped with it. An epoch not newer
    /// than the latest recorded changes nothing (cheap: no lock).
    pub fn become_leader(&self, epoch: i32) -> Result<()> {
        if self.leader_epoch.load(AtomicOrdering::Acquire) >= epoch {
            return Ok(());
        }
        let mut state = self.lock_for_use();
        if state.failed {
            return Err(LogError::Failed {
                path: self.dir.clone(),
            });
        }
        let mut epochs = state.leader_epochs.clone();
        let start = state.log_end();
        if epochs.begin(epoch, start) {
            epochs.store(&self.files, &self.dir)?;
            tracing::debug!(dir = %self.dir.display(), epoch, %start, "new leader epoch");
            state.leader_epochs = epochs;
        }
        self.note_leader_epoch(state.leader_epochs.latest());
        Ok(())
    }

    /// The latest leader epoch recorded (-1 for none).
    #[must_use]
    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch.load(AtomicOrdering::Acquire)
    }

    pub(crate) fn note_leader_epoch(&self, latest: Option<i32>) {
        self.leader_epoch
            .fetch_max(latest.unwrap_or(-1), AtomicOrdering::AcqRel);
    }

    /// OffsetForLeaderEpoch: the largest epoch at most `requested` and the offset
    /// where the epoch after it began (the log end for the latest); (-1, -1) for an
    /// epoch newer than any recorded.
    pub fn end_offset_for_epoch(&self, requested: i32) -> Result<(i32, Offset)> {
        let state = self.lock_for_use();
        Ok(state
            .leader_epochs
            .end_offset_for(requested, state.log_end()))
    }

    /// The leader epoch under which `offset` was written (-1 if unknown).
    #[must_use]
    pub fn leader_epoch_at(&self, offset: Offset) -> i32 {
        self.lock_for_use().leader_epochs.epoch_at(offset)
    }

    /// The leader epoch history, oldest first.
    #[must_use]
    pub fn leader_epoch_history(&self) -> Vec<EpochStart> {
        self.lock_for_use().leader_epochs.entries().to_vec()
    }

    /// The state. A panic while it was held (in the middle of an append, say) may
    /// have left it half-changed: the partition is then poisoned — it refuses reads
    /// and writes (`LogError::Failed`, which clients get as `KAFKA_STORAGE_ERROR`)
    /// until it is reopened, which recovers it from what is on disk.
    pub(crate) fn lock(&self) -> MutexGuard<'_, LogState> {
        match self.state.lock() {
            Ok(state) => state,
            Err(poisoned) => {
                let mut state = poisoned.into_inner();
                if !state.poisoned {
                    tracing::error!(dir = %self.dir.display(), "a panic left this partition's state half-changed; it refuses reads and writes until it is reopened");
                }
                state.poisoned = true;
                state.failed = true;
                state
            }
        }
    }

    /// The state, marking the partition as in use (appends, reads, lookups), which
    /// keeps the idle release away. Background work uses [`PartitionLog::lock`].
    pub(crate) fn lock_for_use(&self) -> MutexGuard<'_, LogState> {
        let mut state = self.lock();
        state.last_used = Instant::now();
        state
    }

    #[must_use]
    pub fn config(&self) -> Arc<LogConfig> {
        self.config
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Changes the partition's settings; they apply from the next append or retention run.
    pub fn set_config(&self, config: LogConfig) -> Result<()> {
        config.validate()?;
        *self
            .config
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(config);
        Ok(())
    }

    pub(crate) fn set_flush_hook(&self, hook: Box<dyn Fn() + Send + Sync>) {
        let _ = self.flush_hook.set(hook);
    }

    pub(crate) fn set_sync_timer(&self, timer: Histogram) {
        let _ = self.sync_timer.set(timer);
    }

    /// Its segments and their bytes on disk (of whole batches).
    #[must_use]
    pub fn disk_usage(&self) -> DiskUsage {
        let state = self.lock();
        DiskUsage {
            segments: state.segments.len(),
            bytes: state.segments.iter().map(|segment| segment.size).sum(),
        }
    }

    #[must_use]
    pub fn offsets(&self) -> LogOffsets {
        self.lock().offsets()
    }

    /// Watches the durable end offset (for `acks=all` waiters).
    #[must_use]
    pub fn subscribe_durable(&self) -> watch::Receiver<Offset> {
        self.durable_tx.subscribe()
    }

    /// Watches the high watermark (for long-polling fetches).
    #[must_use]
    pub fn subscribe_high_watermark(&self) -> watch::Receiver<Offset> {
        self.high_watermark_tx.subscribe()
    }

    /// Waits until every offset below `offset` is durable, or the log fails.
    pub async fn wait_durable(&self, offset: Offset) -> Result<()> {
        let mut durable = self.subscribe_durable();
        loop {
            if *durable.borrow_and_update() >= offset {
                return Ok(());
            }
            {
                let state = self.lock();
                if state.failed {
                    return Err(self.failure(&state));
                }
            }
            if durable.changed().await.is_err() {
                return Err(LogError::Failed {
                    path: self.dir.clone(),
                });
            }
        }
    }

    /// The last stable offset: read_committed consumers read below it (the high
    /// watermark when no transaction is open here).
    #[must_use]
    pub fn stable_offset(&self) -> Offset {
        self.lock().stable_offset()
    }

    /// The aborted transactions with records in `from..to` (read_committed reads of
    /// data held elsewhere: a shared-storage tail's older objects).
    #[must_use]
    pub fn aborted_between(&self, from: Offset, to: Offset) -> Vec<crate::AbortedTxn> {
        self.lock().producers.txns.aborted_between(from, to)
    }

    /// Producers with a transaction open here, with the offset it began at.
    #[must_use]
    pub fn open_transactions(&self) -> Vec<(i64, Offset)> {
        let state = self.lock();
        let mut open: Vec<(i64, Offset)> = state
            .producers
            .txns
            .open
            .iter()
            .map(|(producer, first)| (*producer, *first))
            .collect();
        open.sort_unstable();
        open
    }

    /// The producers with a transaction open here, with their epochs: what a
    /// failed-over mirror aborts (their coordinator is the source cluster's).
    pub fn open_transaction_producers(&self) -> Vec<(i64, i16)> {
        let state = self.lock();
        let mut open: Vec<(i64, i16)> = state
            .producers
            .txns
            .open
            .keys()
            .filter_map(|producer| Some((*producer, state.producers.epoch_of(*producer)?)))
            .collect();
        open.sort_unstable();
        open
    }

    /// The highest producer id this partition knows (see
    /// [`crate::max_producer_id_in`]).
    pub fn max_producer_id(&self) -> Option<i64> {
        self.lock().producers.max_id()
    }

    /// Forgets the producers with ids below `floor` (but those with a transaction
    /// open here): a failed-over mirror's source producers, whose ids this cluster
    /// may hand out again.
    pub fn forget_producers_below(&self, floor: i64) {
        self.lock().producers.forget_below(floor);
    }

    /// Forgets idempotent producers whose newest batch here is older than
    /// `older_than`; returns how many are left.
    pub fn expire_producers(&self, older_than: Timestamp) -> usize {
        let mut state = self.lock();
        state.producers.expire(older_than.0);
        state.producers.len()
    }

    /// Appends whole batches with one write (plus one per index file), assigning
    /// offsets by patching each batch's `baseOffset` (and, for LogAppendTime, its max
    /// timestamp) in place. Each slice must be exactly one batch whose CRC the caller
    /// has checked (the produce path does, once per batch); the header fields are
    /// checked here, as recovery will check them. Returns once the bytes are written to the store
    /// ("buffered"); use [`PartitionLog::sync`] or the flusher for durability.
    pub fn append(&self, batches: &[&[u8]]) -> Result<AppendInfo> {
        self.append_batches(batches, Offsets::Assign)
    }

    /// Appends whole batches at their own offsets: a mirror's copy of another
    /// cluster's log, byte for byte. Each batch must start at or past the end of the
    /// one before it (gaps are kept, as a compacted source has them); only the
    /// partition leader epoch, outside the CRC, is patched. No producer checks (the
    /// source made them), no LogAppendTime (the source stamped it); the producers'
    /// and transactions' state follows the batches as on any append. For a log whose
    /// config has `own_offsets`, so that recovery keeps the gaps.
    pub fn append_at_own_offsets(&self, batches: &[&[u8]]) -> Result<AppendInfo> {
        self.append_batches(batches, Offsets::Own)
    }

    fn append_batches(&self, batches: &[&[u8]], offsets: Offsets) -> Result<AppendInfo> {
        let config = self.config();
        for (index, bytes) in batches.iter().enumerate() {
            let header = batch::validate_frame(bytes)
                .map_err(|source| LogError::InvalidBatch { index, source })?;
            if header.total_len() != bytes.len() {
                let source = BatchError::TrailingBytes {
                    declared: header.total_len(),
                    present: bytes.len(),
                };
                return Err(LogError::InvalidBatch { index, source });
            }
            batch::validate_fields(&header, batch::BatchRules::Stored)
                .map_err(|source| LogError::InvalidBatch { index, source })?;
        }
        let log_append_time = (offsets == Offsets::Assign
            && config.timestamp_type == TimestampType::LogAppendTime)
            .then(Timestamp::now);
        let mut state = self.lock_for_use();
        if state.failed {
            return Err(LogError::Failed {
                path: self.dir.clone(),
            });
        }
        if state.upload.as_ref().is_some_and(|upload| upload.sealed) {
            return Err(LogError::NotLeader {
                path: self.dir.clone(),
            });
        }
        if offsets == Offsets::Assign
            && let Some(duplicate) = check_producers(&state.producers, batches)?
        {
            return Ok(duplicate);
        }
        if offsets == Offsets::Own {
            own_offsets_continue(state.log_end(), batches)?;
        }
        state
            .active_mut()
            .index(&self.files, config.index_interval_bytes)?;
        let base_offset = match offsets {
            Offsets::Assign => state.log_end(),
            Offsets::Own => batches
                .first()
                .and_then(|bytes| RecordBatchHeader::parse(bytes))
                .map_or(state.log_end(), |header| header.base_offset),
        };
        let leader_epoch = state.leader_epochs.latest();
        let high_watermark = state.high_watermark.offset;
        state.producers.txns.settle(high_watermark);
        let mut pending = PendingWrite::default();
        let mut records = 0u64;
        for bytes in batches {
            let offset = match offsets {
                Offsets::Assign => state.log_end(),
                Offsets::Own => {
                    RecordBatchHeader::parse(bytes).map_or(state.log_end(), |h| h.base_offset)
                }
            };
            if self.should_roll(&state, &config, pending.data.len() as u64, bytes, offset) {
                self.write_pending(&mut state, &config, &mut pending)
                    .inspect_err(|_| state.failed = true)?;
                // A new segment starts at the log end, or, for a batch at its own
                // offset too far past it for 32-bit relative offsets, at the batch.
                let last = RecordBatchHeader::parse(bytes).map_or(offset, |h| h.last_offset());
                let base = if last.distance_from(state.log_end()) > i64::from(i32::MAX) {
                    offset
                } else {
                    state.log_end()
                };
                self.roll(&mut state, base)
                    .inspect_err(|_| state.failed = true)?;
            }
            let position = state.active().size + pending.data.len() as u64;
            let start = pending.data.len();
            pending.data.extend_from_slice(bytes);
            let batch = pending.data.get_mut(start..).unwrap_or_default();
            batch::patch_base_offset(batch, offset);
            if let Some(epoch) = leader_epoch {
                batch::patch_partition_leader_epoch(batch, epoch);
            }
            if let Some(now) = log_append_time {
                batch::patch_log_append_time(batch, now);
            }
            let Some(header) = RecordBatchHeader::parse(batch) else {
                unreachable!("validated above");
            };
            records += u64::try_from(header.record_count).unwrap_or(0);
            let marker = header
                .is_control()
                .then(|| control::read_marker(batch))
                .flatten();
            state.producers.apply(&header, marker);
            let log_end = state.log_end();
            if let Some(upload) = state.upload.as_mut() {
                upload.note_batch(&header, log_end);
            }
            let interval = config.index_interval_bytes;
            state
                .active_mut()
                .note_batch(&header, position, interval, &mut pending.entries);
        }
        self.write_pending(&mut state, &config, &mut pending)
            .inspect_err(|_| state.failed = true)?;
        state.unflushed_records += records;
        let last_offset = state.log_end().plus(-1);
        let flush_now = match config.flush {
            // A tail is made durable by its uploads, not by fsyncs.
            _ if state.upload.is_some() => false,
            FlushPolicy::Durable => true,
            FlushPolicy::Interval { messages, .. } => {
                state.high_watermark = state.end_position();
                self.high_watermark_tx
                    .send_replace(state.high_watermark.offset);
                messages.is_some_and(|limit| state.unflushed_records >= limit)
            }
        };
        state.assert_invariants();
        drop(state);
        if flush_now && let Some(hook) = self.flush_hook.get() {
            hook();
        }
        Ok(AppendInfo {
            base_offset,
            last_offset,
            log_append_time,
            duplicate: false,
        })
    }

    /// Whether the active segment is closed before `batch`, which goes at `offset`.
    fn should_roll(
        &self,
        state: &LogState,
        config: &LogConfig,
        pending: u64,
        batch: &[u8],
        offset: Offset,
    ) -> bool {
        let active = state.active();
        let last_delta =
            RecordBatchHeader::parse(batch).map_or(0, |h| i64::from(h.last_offset_delta));
        // Offsets are stored relative to the segment's base, in 32 bits.
        let offsets_overflow =
            offset.plus(last_delta).distance_from(active.base) > i64::from(i32::MAX);
        let size = active.size + pending;
        if size == 0 {
            // Only a batch at its own offset can be too far from an empty segment's base.
            return offsets_overflow;
        }
        // A tail rolls small segments, so that what is committed can leave it soon.
        let limit = if state.upload.is_some() {
            config.segment_bytes.min(upload::TAIL_SEGMENT_BYTES)
        } else {
            config.segment_bytes.min(MAX_SEGMENT_BYTES)
        };
        let too_big = size + batch.len() as u64 > limit;
        // The jitter's hash only when there is jitter: this runs on every append.
        let seed = if config.segment_jitter_ms > 0 {
            self.jitter_seed(active.base)
        } else {
            0
        };
        let too_old = config
            .segment_age_limit(seed)
            .is_some_and(|limit| active.opened_at.elapsed() >= limit);
        too_big || too_old || offsets_overflow
    }

    /// Writes the pending bytes to the active segment and its index entries to the
    /// index files, then moves the segment's size and feeds the tail cache.
    fn write_pending(
        &self,
        state: &mut LogState,
        config: &LogConfig,
        pending: &mut PendingWrite,
    ) -> Result<()> {
        if pending.data.is_empty() {
            return Ok(());
        }
        let active = state.active();
        let position = active.size;
        let file = active.log_file(&self.files)?;
        file.write_at(&pending.data, position)
            .map_err(LogError::io("write", &active.paths.log))?;
        let entries = std::mem::take(&mut pending.entries);
        let active = state.active_mut();
        active.write_index_files(&self.files, &entries, false)?;
        if let Some(index) = active.index.as_mut() {
            index.offsets.extend(entries.offsets);
            index.times.extend(entries.times);
        }
        let data: Bytes = std::mem::take(&mut pending.data).freeze();
        active.size += data.len() as u64;
        let end = state.end_position();
        if let Some(upload) = state.upload.as_mut() {
            upload.note_written(data.clone(), end);
        }
        state.tail.push(position, data, config.tail_cache_bytes);
        Ok(())
    }

    /// A number that is the same for a segment of this partition every time and
    /// differs across segments and partitions, for `segment.jitter.ms`.
    fn jitter_seed(&self, base: Offset) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (&self.dir, base.0).hash(&mut hasher);
        hasher.finish()
    }

    /// Closes the active segment and starts a new one at `base`: the log end offset,
    /// or past it for a batch at its own offset.
    fn roll(&self, state: &mut LogState, base: Offset) -> Result<()> {
        let config = self.config();
        let interval = config.index_interval_bytes;
        let closing = state.active_mut();
        closing.seal_time_index(&self.files, interval)?;
        let mut closed_files = Vec::with_capacity(3);
        for path in [
            &closing.paths.log,
            &closing.paths.index,
            &closing.paths.time_index,
        ] {
            closed_files.push(self.files.get(path).map_err(LogError::io("open", path))?);
        }
        state.unsynced.extend(closed_files);
        let mut segment = Segment::new(&self.dir, base, 0, base);
        segment.index = Some(crate::index::SegmentIndex::default());
        for path in [
            &segment.paths.log,
            &segment.paths.index,
            &segment.paths.time_index,
        ] {
            let file = self
                .files
                .create(path)
                .map_err(LogError::io("create", path))?;
            file.set_len(0).map_err(LogError::io("truncate", path))?;
        }
        tracing::debug!(dir = %self.dir.display(), base = %base, "rolled segment");
        state.segments.push(segment);
        state.dir_dirty = true;
        state.tail.clear();
        Ok(())
    }

    /// Makes everything appended so far durable and returns the durable end offset.
    /// Concurrent callers share one fsync: whoever holds the sync lock syncs for all
    /// data written before it started (group commit).
    pub fn sync(&self) -> Result<Offset> {
        let target = self.lock().log_end();
        self.sync_to(target)
    }

    /// Makes the log durable at least up to `offset`.
    pub fn sync_to(&self, offset: Offset) -> Result<Offset> {
        let durable = {
            let state = self.lock();
            // A tail's files are a cache: its uploads make it durable.
            if state.upload.is_some() {
                return Ok(state.durable.offset);
            }
            state.durable.offset
        };
        if durable >= offset {
            return Ok(durable);
        }
        let _leader = self
            .sync_lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (target, files, dir_dirty, unflushed) = {
            let mut state = self.lock();
            if state.failed {
                return Err(LogError::Failed {
                    path: self.dir.clone(),
                });
            }
            if state.durable.offset >= offset {
                return Ok(state.durable.offset);
            }
            // Open the active file first: if that fails, nothing has been taken yet.
            let active = state.active().log_file(&self.files)?;
            let mut files = std::mem::take(&mut state.unsynced);
            files.push(active);
            (
                state.end_position(),
                files,
                std::mem::take(&mut state.dir_dirty),
                state.unflushed_records,
            )
        };
        let sync_started = Instant::now();
        let synced = files
            .iter()
            .try_for_each(|file| file.sync().map_err(LogError::io("fsync", &self.dir)))
            .and_then(|()| {
                if dir_dirty {
                    self.files
                        .store()
                        .sync_dir(&self.dir)
                        .map_err(LogError::io("fsync directory", &self.dir))
                } else {
                    Ok(())
                }
            });
        if let Some(timer) = self.sync_timer.get() {
            timer.observe(sync_started.elapsed().as_secs_f64());
        }
        let mut state = self.lock();
        if let Err(error) = synced {
            // After a failed fsync the kernel may have dropped the dirty pages; retrying
            // would report success for lost data. Refuse writes until reopened.
            tracing::error!(dir = %self.dir.display(), %error, "fsync failed; log closed for writes");
            state.failed = true;
            let durable = state.durable.offset;
            drop(state);
            // Wake the acks=all waiters so that they see the failure.
            self.durable_tx.send_replace(durable);
            return Err(error);
        }
        if target.offset > state.durable.offset {
            state.durable = target;
            if self.config().flush == FlushPolicy::Durable {
                state.high_watermark = target;
                self.high_watermark_tx.send_replace(target.offset);
            }
        }
        state.unflushed_records = state.unflushed_records.saturating_sub(unflushed);
        state.last_sync = Instant::now();
        state.assert_invariants();
        let durable = state.durable.offset;
        drop(state);
        self.durable_tx.send_replace(durable);
        Ok(durable)
    }

    /// Whether an interval flush is due (`flush.ms` passed with data unflushed).
    pub(crate) fn interval_flush_due(&self) -> bool {
        let config = self.config();
        let FlushPolicy::Interval { ms: Some(ms), .. } = config.flush else {
            return false;
        };
        let state = self.lock();
        state.durable.offset < state.log_end()
            && state.last_sync.elapsed().as_millis() >= u128::from(ms)
    }

    /// Writes the checkpoint if it changed since the last one. One writer at a time,
    /// from taking the snapshot to recording it, so an older snapshot can never
    /// replace a newer one. The index files of the segment holding the recovery point
    /// are fsynced first: recovery keeps that segment's index entries below the point.
    /// The checkpoint carries the idempotent producers' state as of the log end, so
    /// that opening reads only the batches written after it.
    pub fn write_checkpoint(&self) -> Result<()> {
        let _writer = self
            .checkpoint_lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (checkpoint, producers, index_files) = {
            let state = self.lock();
            let checkpoint = state.checkpoint();
            if state.last_checkpoint == Some(checkpoint) {
                return Ok(());
            }
            let producers = ProducerSnapshot {
                at: state.end_position(),
                states: state.producers.clone(),
            };
            let segment = state
                .segments
                .iter()
                .find(|s| s.base == checkpoint.recovery_point.segment_base);
            let paths: Vec<PathBuf> = segment
                .map(|s| vec![s.paths.index.clone(), s.paths.time_index.clone()])
                .unwrap_or_default();
            (checkpoint, producers, paths)
        };
        for path in &index_files {
            let file = self.files.get(path).map_err(LogError::io("open", path))?;
            file.sync().map_err(LogError::io("fsync", path))?;
        }
        checkpoint.write(&producers, &self.files, &self.dir)?;
        self.lock().last_checkpoint = Some(checkpoint);
        Ok(())
    }

    /// Syncs and checkpoints the log, so the next open needs no scan, after recording
    /// the active segment's largest timestamp in its time index. The log stays usable;
    /// drop it afterwards to close its files.
    pub fn close(&self) -> Result<()> {
        {
            let config = self.config();
            let mut state = self.lock();
            if !state.failed {
                state
                    .active_mut()
                    .seal_time_index(&self.files, config.index_interval_bytes)?;
            }
        }
        self.sync()?;
        self.write_checkpoint()
    }

    /// Refuses every further write: the partition was deleted, and its files may be
    /// reused by a new partition of the same name.
    pub(crate) fn fence(&self) {
        self.lock().failed = true;
        let durable = self.lock().durable.offset;
        self.durable_tx.send_replace(durable);
    }

    /// Drops what can be reloaded (indexes, tail cache) to keep an idle partition small.
    pub fn release_memory(&self) {
        let mut state = self.lock();
        state.tail.clear();
        state
            .segments
            .iter_mut()
            .for_each(|segment| segment.index = None);
        state.segments.shrink_to_fit();
    }

    /// Bytes of memory this partition holds beyond its files, approximately.
    #[must_use]
    pub fn memory_footprint(&self) -> usize {
        let state = self.lock();
        let indexes: usize = state
            .segments
            .iter()
            .filter_map(|s| s.index.as_ref())
            .map(|i| i.heap_bytes())
            .sum();
        size_of::<PartitionLog>()
            + self.dir.as_os_str().len()
            + state.segments.capacity() * size_of::<Segment>()
            + state
                .segments
                .iter()
                .map(|s| 3 * s.paths.log.as_os_str().len())
                .sum::<usize>()
            + indexes
            + usize::try_from(state.tail.heap_bytes()).unwrap_or(usize::MAX)
    }

    /// How long since this partition was last used.
    pub(crate) fn idle_for(&self) -> std::time::Duration {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .last_used
            .elapsed()
    }
}

/// Bytes and index entries collected for one write.
#[derive(Debug, Default)]
struct PendingWrite {
    data: BytesMut,
    entries: NewIndexEntries,
}

/// Checks the idempotent batches of an append against their producers' state: `Some`
/// with the original offsets for a retried batch (nothing to write), `None` to append.
/// An idempotent batch must come alone (as Kafka requires of produce requests from v3),
/// but for control batches the broker writes with it (the holds of its delayed
/// records): a retry then skips them too.
/// How an append places its batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Offsets {
    /// From the log end on (a produce).
    Assign,
    /// At the offsets they carry (a mirror's copy).
    Own,
}

/// Whether `batches`, at their own offsets, continue a log ending at `log_end`: each
/// starts at or past the end of the one before.
fn own_offsets_continue(log_end: Offset, batches: &[&[u8]]) -> Result<()> {
    let mut end = log_end;
    for bytes in batches {
        let Some(header) = RecordBatchHeader::parse(bytes) else {
            continue;
        };
        if header.base_offset < end {
            return Err(LogError::OffsetBeforeLogEnd {
                offset: header.base_offset,
                log_end: end,
            });
        }
        end = header.next_offset();
    }
    Ok(())
}

fn check_producers(producers: &ProducerStates, batches: &[&[u8]]) -> Result<Option<AppendInfo>> {
    let data_batches = batches
        .iter()
        .filter(|bytes| RecordBatchHeader::parse(bytes).is_some_and(|h| !h.is_control()))
        .count();
    for bytes in batches {
        let Some(header) = RecordBatchHeader::parse(bytes) else {
            continue;
        };
        if header.is_control() {
            producers
                .check_marker(&header)
                .map_err(LogError::Producer)?;
            continue;
        }
        if !producers::is_idempotent(&header) {
            continue;
        }
        if data_batches > 1 {
            return Err(LogError::Producer(ProducerError::NotAlone {
                producer: header.producer_id.0,
            }));
        }
        return match producers.check(&header).map_err(LogError::Producer)? {
            SequenceCheck::Append => Ok(None),
            SequenceCheck::Duplicate { base, last } => Ok(Some(AppendInfo {
                base_offset: base,
                last_offset: last,
                log_append_time: None,
                duplicate: true,
            })),
        };
    }
    Ok(None)
}
