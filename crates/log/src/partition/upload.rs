//! A partition's log as the local tail of shared-storage mode: the log assigns
//! offsets, checks idempotent producers and stamps batches as always, but what makes
//! an append durable is its upload to object storage and the catalogue commit that
//! follows, not an fsync. The uploader takes what was appended since its last take
//! ([`PartitionLog::take_for_upload`]), and reports the commit
//! ([`PartitionLog::uploaded`]) or its failure ([`PartitionLog::upload_failed`]);
//! the high watermark moves only with commits, so consumers never see an offset
//! that a failure could take back.
//!
//! A tail starts empty at the partition's committed end ([`TailStart`]): the local
//! directory is a cache, and everything before the tail is read from objects.

use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use spool_model::{Offset, RecordBatchHeader, Timestamp};

use super::{LogState, PartitionLog};
use crate::checkpoint::LogPosition;
use crate::config::LogConfig;
use crate::error::{LogError, Result};
use crate::file_cache::FileCache;
use crate::leader_epochs::LeaderEpochs;
use crate::producers::{self, ProducerStates};

/// The largest segment of a tail: committed data leaves the tail a segment at a time.
pub(crate) const TAIL_SEGMENT_BYTES: u64 = 8 << 20;

/// Where a tail starts: the partition's committed state in the catalogue.
#[derive(Debug, Clone, Default)]
pub struct TailStart {
    /// The committed end (the catalogue's high watermark): the tail's first offset.
    pub next_offset: Offset,
    /// The idempotent producers' state as of `next_offset`, as
    /// [`UploadChunk::producer_state`] encoded it.
    pub producer_state: Option<Vec<u8>>,
    /// The leader epoch history, oldest first.
    pub epochs: Vec<(i32, Offset)>,
}

/// Appends not yet uploaded, gathered as they happen.
#[derive(Debug, Default)]
pub(crate) struct UploadBuffer {
    batches: Vec<Bytes>,
    /// The log end before the first batch: what the chunk continues.
    from: Option<Offset>,
    first: Option<Offset>,
    last: Offset,
    max_timestamp: Timestamp,
    end: Option<LogPosition>,
    producers_changed: bool,
    /// The commit was refused because the partition's epoch or end moved: another
    /// leader has it.
    pub(crate) fenced: bool,
    /// The partition is being handed to another broker: appends are refused while
    /// what was buffered is committed.
    pub(crate) sealed: bool,
}

impl UploadBuffer {
    /// Notes a batch appended where the log ended at `log_end` (its base offset,
    /// or below it for a batch at its own offset past a gap).
    pub(crate) fn note_batch(&mut self, header: &RecordBatchHeader, log_end: Offset) {
        self.from.get_or_insert(log_end);
        self.first.get_or_insert(header.base_offset);
        self.last = header.last_offset();
        self.max_timestamp = Timestamp(self.max_timestamp.0.max(header.max_timestamp.0));
        // Transactional batches and markers change the transactions' state.
        self.producers_changed |= producers::is_idempotent(header) || header.is_transactional();
    }

    pub(crate) fn note_written(&mut self, data: Bytes, end: LogPosition) {
        self.batches.push(data);
        self.end = Some(end);
    }
}

/// One partition's appends since the last take, ready to go into an object.
#[derive(Debug, Clone)]
pub struct UploadChunk {
    /// The log end the chunk continues: its base offset, or below it when it starts
    /// past a gap.
    pub from_offset: Offset,
    pub base_offset: Offset,
    pub last_offset: Offset,
    pub max_timestamp: Timestamp,
    /// Whole batches, in offset order, as stored (offsets and epochs patched).
    pub batches: Vec<Bytes>,
    /// The idempotent producers' state as of `last_offset + 1`, when an idempotent
    /// batch is in the chunk.
    pub producer_state: Option<Vec<u8>>,
    /// The leader epoch the batches were written under.
    pub leader_epoch: i32,
    end: LogPosition,
}

impl UploadChunk {
    /// The bytes of the chunk.
    #[must_use]
    pub fn len(&self) -> usize {
        self.batches.iter().map(Bytes::len).sum()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.batches.is_empty()
    }
}

/// Why an upload did not become durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UploadFailure {
    /// The object could not be written, or the commit's outcome is unknown: retriable.
    Storage,
    /// The catalogue refused the commit: the partition has another leader now.
    Fenced,
}

impl PartitionLog {
    /// Creates the tail of a shared-storage partition in `dir` (removing what a
    /// previous run left there: the directory is only a cache), starting at
    /// `start.next_offset` with the producers and epochs of the catalogue.
    pub fn open_tail(
        files: Arc<FileCache>,
        dir: impl Into<PathBuf>,
        config: LogConfig,
        start: TailStart,
    ) -> Result<PartitionLog> {
        config.validate()?;
        let dir = dir.into();
        let store = files.store().clone();
        files.forget_dir(&dir);
        if store.exists(&dir) {
            store
                .remove_dir_all(&dir)
                .map_err(LogError::io("delete", &dir))?;
        }
        store
            .create_dir_all(&dir)
            .map_err(LogError::io("create directory", &dir))?;
        let mut state = crate::recovery::new_log(&files, &dir, start.next_offset)?;
        if let Some(encoded) = &start.producer_state {
            state.producers = ProducerStates::decode(encoded).ok_or_else(|| LogError::Io {
                operation: "decode producer state of",
                path: dir.clone(),
                source: std::io::Error::from(std::io::ErrorKind::InvalidData),
            })?;
            state.producers.txns.settle(start.next_offset);
        }
        let mut epochs = LeaderEpochs::default();
        for (epoch, offset) in &start.epochs {
            epochs.begin(*epoch, *offset);
        }
        epochs.store(&files, &dir)?;
        state.leader_epochs = epochs;
        state.upload = Some(UploadBuffer::default());
        let log = PartitionLog::from_parts(dir, files, config, state);
        log.note_leader_epoch(log.lock().leader_epochs.latest());
        Ok(log)
    }

    /// Whether the log is a shared-storage tail.
    #[must_use]
    pub fn is_tail(&self) -> bool {
        self.lock().upload.is_some()
    }

    /// What was appended since the last take, if anything: the uploader puts it into
    /// the next object.
    pub fn take_for_upload(&self) -> Option<UploadChunk> {
        let mut state = self.lock();
        if state.failed {
            return None;
        }
        let leader_epoch = state.leader_epochs.latest().unwrap_or(-1);
        let buffer = state.upload.as_ref()?;
        if buffer.fenced || buffer.batches.is_empty() {
            return None;
        }
        let producer_state = buffer.producers_changed.then(|| {
            let mut encoded = Vec::new();
            state.producers.encode_into(&mut encoded);
            encoded
        });
        let buffer = state.upload.as_mut()?;
        let mut taken = std::mem::take(buffer);
        buffer.sealed = std::mem::take(&mut taken.sealed);
        let (Some(from_offset), Some(base_offset), Some(end)) =
            (taken.from, taken.first, taken.end)
        else {
            return None;
        };
        Some(UploadChunk {
            from_offset,
            base_offset,
            last_offset: taken.last,
            max_timestamp: taken.max_timestamp,
            batches: taken.batches,
            producer_state,
            leader_epoch,
            end,
        })
    }

    /// The chunk is committed: its offsets are durable and visible.
    pub fn uploaded(&self, chunk: &UploadChunk) {
        let mut state = self.lock();
        if state.failed || chunk.end.offset <= state.durable.offset {
            return;
        }
        state.durable = chunk.end;
        state.high_watermark = chunk.end;
        state.assert_invariants();
        drop(state);
        self.high_watermark_tx.send_replace(chunk.end.offset);
        self.durable_tx.send_replace(chunk.end.offset);
    }

    /// The chunk did not become durable: the tail refuses everything from now on
    /// (what was appended after the chunk cannot be committed without it) and must be
    /// opened again from the catalogue. Waiters for durability get the failure.
    pub fn upload_failed(&self, failure: UploadFailure) {
        let mut state = self.lock();
        state.failed = true;
        if let Some(buffer) = state.upload.as_mut() {
            buffer.fenced |= failure == UploadFailure::Fenced;
        }
        let durable = state.durable.offset;
        drop(state);
        self.durable_tx.send_replace(durable);
    }

    /// Drops the tail's oldest segments while the rest hold more than `keep_bytes`,
    /// only segments wholly committed (the data is in objects); returns the tail's new
    /// first offset. Reads below it go to objects.
    pub fn trim_tail(&self, keep_bytes: u64) -> Result<Offset> {
        let mut state = self.lock();
        if state.upload.is_none() {
            return Ok(state.log_start);
        }
        let committed_end = state.high_watermark.offset;
        let mut total: u64 = state.segments.iter().map(|s| s.size).sum();
        let mut doomed = 0;
        for pair in state.segments.windows(2) {
            let (Some(segment), Some(next)) = (pair.first(), pair.get(1)) else {
                break;
            };
            if total <= keep_bytes || next.base > committed_end {
                break;
            }
            total -= segment.size;
            doomed += 1;
        }
        if doomed == 0 {
            return Ok(state.log_start);
        }
        let start = state
            .segments
            .get(doomed)
            .map_or(state.log_start, |segment| segment.base);
        self.delete_front_segments(&mut state, doomed)?;
        state.log_start = state.log_start.max(start);
        state.assert_invariants();
        Ok(state.log_start)
    }

    /// Refuses appends from now on (`NotLeader`), while what was appended goes on to
    /// be uploaded: the partition is being handed to another broker, which must find
    /// everything acknowledged here committed. [`PartitionLog::unseal`] takes it back.
    pub fn seal(&self) {
        if let Some(buffer) = self.lock().upload.as_mut() {
            buffer.sealed = true;
        }
    }

    /// Takes appends again: the handover did not happen.
    pub fn unseal(&self) {
        if let Some(buffer) = self.lock().upload.as_mut() {
            buffer.sealed = false;
        }
    }

    /// Whether everything appended to the tail is committed (or the tail failed, so
    /// that nothing more will be).
    #[must_use]
    pub fn is_settled(&self) -> bool {
        let state = self.lock();
        state.failed || state.high_watermark.offset >= state.log_end()
    }

    /// Whether the tail failed (an upload or a write) and must be reopened.
    #[must_use]
    pub fn has_failed(&self) -> bool {
        self.lock().failed
    }

    /// The error waiters for durability get once the log failed.
    pub(crate) fn failure(&self, state: &LogState) -> LogError {
        if state.upload.as_ref().is_some_and(|u| u.fenced) {
            LogError::NotLeader {
                path: self.dir.clone(),
            }
        } else {
            LogError::Failed {
                path: self.dir.clone(),
            }
        }
    }
}
