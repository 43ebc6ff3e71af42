//! Reading by offset and looking offsets up by timestamp.
//!
//! The state lock is held only for in-memory work (bounds, index lookups, the tail
//! cache); walking batch headers in the file happens outside it.

use std::sync::Arc;

use spool_model::{CompressionCodec, Offset, Timestamp};
use spool_store::StoreFile;

use super::{LogState, PartitionLog};
use crate::checkpoint::LogPosition;
use crate::error::{LogError, Result};
use crate::read::{AbortedTxn, Isolation, ReadChunk, ReadResult};
use crate::scan::HeaderCursor;

/// What bounds a read, taken under the lock as it starts.
struct Bounds {
    log_start: Offset,
    high_watermark: Offset,
    last_stable: Offset,
    isolation: Isolation,
    /// read_committed: the aborted transactions from the read's offset up to the last
    /// stable offset, taken with the other bounds (retention may trim the index while
    /// the file is read).
    aborted: Vec<AbortedTxn>,
}

impl Bounds {
    /// The offset no returned batch may start at or after.
    fn limit(&self) -> Offset {
        match self.isolation {
            Isolation::ReadUncommitted => self.high_watermark,
            Isolation::ReadCommitted => self.last_stable,
        }
    }

    /// The result of a read of `from..to`: read_committed lists the aborted
    /// transactions with records there.
    fn result(self, chunks: Vec<ReadChunk>, from: Offset, to: Offset) -> ReadResult {
        let aborted = self
            .aborted
            .into_iter()
            .filter(|txn| to > from && txn.last_offset >= from && txn.first_offset < to)
            .collect();
        ReadResult {
            chunks,
            log_start: self.log_start,
            high_watermark: self.high_watermark,
            last_stable: self.last_stable,
            aborted,
        }
    }
}

/// Where to start walking one segment.
struct SegmentCursor {
    file: Arc<dyn StoreFile>,
    base: Offset,
    start: u64,
    visible_end: u64,
    is_last_visible: bool,
}

impl PartitionLog {
    /// Reads whole batches from the one that contains `offset`, up to `max_bytes`
    /// (the first batch is returned whole even if larger, so consumers make progress)
    /// and never past the high watermark or the end of one segment.
    pub fn read(&self, offset: Offset, max_bytes: u64) -> Result<ReadResult> {
        self.read_isolated(offset, max_bytes, true, Isolation::ReadUncommitted)
    }

    /// As [`PartitionLog::read`], but strictly within `max_bytes`: nothing when the
    /// first batch is larger. A fetch uses it for every partition after the first
    /// that returned data, so that only one batch of a response exceeds its budget
    /// (Kafka's rule, which clients size their receive buffers by).
    pub fn read_within(&self, offset: Offset, max_bytes: u64) -> Result<ReadResult> {
        self.read_isolated(offset, max_bytes, false, Isolation::ReadUncommitted)
    }

    /// A read as [`PartitionLog::read`] (`first_whole`) or
    /// [`PartitionLog::read_within`], under `isolation`: read_committed stops at the
    /// last stable offset and lists the aborted transactions of what it returns.
    pub fn read_isolated(
        &self,
        offset: Offset,
        max_bytes: u64,
        first_whole: bool,
        isolation: Isolation,
    ) -> Result<ReadResult> {
        let mut offset = offset;
        loop {
            let (cursor, bounds) = {
                let mut state = self.lock_for_use();
                if state.poisoned {
                    return Err(LogError::Failed {
                        path: self.dir.clone(),
                    });
                }
                let last_stable = state.stable_offset();
                let bounds = Bounds {
                    log_start: state.log_start,
                    high_watermark: state.high_watermark.offset,
                    last_stable,
                    isolation,
                    aborted: match isolation {
                        Isolation::ReadCommitted => {
                            state.producers.txns.aborted_between(offset, last_stable)
                        }
                        Isolation::ReadUncommitted => Vec::new(),
                    },
                };
                check_bounds(&state, offset)?;
                if offset >= bounds.limit() {
                    return Ok(bounds.result(Vec::new(), offset, offset));
                }
                (self.segment_cursor(&mut state, offset)?, bounds)
            };
            let limit = bounds.limit();
            let file = cursor.file.clone();
            let mut headers = HeaderCursor::new(file.as_ref());
            let mut position = cursor.start;
            let mut found = None;
            while let Some(header) = headers
                .header_at(position, cursor.visible_end)
                .map_err(self.read_error())?
            {
                if header.next_offset() > offset {
                    found = Some(position);
                    break;
                }
                position += header.total_len() as u64;
            }
            let Some(start) = found else {
                if cursor.is_last_visible {
                    return Ok(bounds.result(Vec::new(), offset, offset));
                }
                // The offset fell in a gap at the end of this segment: go on to the next.
                offset = self.next_segment_base(cursor.base).max(offset);
                continue;
            };
            let mut end = start;
            let mut end_offset = offset;
            while let Some(header) = headers
                .header_at(end, cursor.visible_end)
                .map_err(self.read_error())?
            {
                let len = header.total_len() as u64;
                if header.base_offset >= limit
                    || ((end > start || !first_whole) && end + len - start > max_bytes)
                {
                    break;
                }
                end += len;
                end_offset = header.next_offset();
            }
            if end == start {
                return Ok(bounds.result(Vec::new(), offset, offset));
            }
            let cached = self.lock().tail_slice(cursor.base, start, end);
            let chunks = match cached {
                Some(pieces) => pieces.into_iter().map(ReadChunk::Memory).collect(),
                None => vec![ReadChunk::File {
                    file,
                    position: start,
                    len: end - start,
                }],
            };
            return Ok(bounds.result(chunks, offset, end_offset));
        }
    }

    fn read_error(&self) -> impl Fn(std::io::Error) -> LogError + '_ {
        move |source| LogError::Io {
            operation: "read",
            path: self.dir.clone(),
            source,
        }
    }

    fn next_segment_base(&self, base: Offset) -> Offset {
        let state = self.lock();
        state
            .segments
            .iter()
            .map(|s| s.base)
            .find(|b| *b > base)
            .unwrap_or(state.high_watermark.offset)
    }

    /// The segment holding `offset`, with where the index says to start looking and
    /// how far the visible (below high watermark) bytes reach.
    fn segment_cursor(&self, state: &mut LogState, offset: Offset) -> Result<SegmentCursor> {
        let interval = self.config().index_interval_bytes;
        let at = state
            .segments
            .partition_point(|s| s.base <= offset)
            .saturating_sub(1);
        let high_watermark = state.high_watermark;
        let log_start = state.log_start;
        let segment = state
            .segments
            .get_mut(at)
            .ok_or(LogError::OffsetBelowLogStart {
                requested: offset,
                log_start,
            })?;
        let relative = segment
            .relative(offset)
            .ok_or(LogError::OffsetBelowLogStart {
                requested: offset,
                log_start,
            })?;
        let start = u64::from(segment.index(&self.files, interval)?.position_for(relative));
        let visible_end = visible_end(segment, high_watermark);
        Ok(SegmentCursor {
            file: segment.log_file(&self.files)?,
            base: segment.base,
            start,
            visible_end,
            is_last_visible: segment.base >= high_watermark.segment_base,
        })
    }

    /// The offset of the first record with the largest timestamp in the visible log,
    /// with that timestamp (ListOffsets `MAX_TIMESTAMP`); `None` for an empty log.
    /// Exact to the record under the same terms as [`Self::offset_for_timestamp`].
    pub fn max_timestamp_offset(&self) -> Result<Option<(Offset, Timestamp)>> {
        let interval = self.config().index_interval_bytes;
        let max = {
            let mut state = self.lock_for_use();
            let high_watermark = state.high_watermark;
            let mut max: Option<Timestamp> = None;
            for segment in &mut state.segments {
                if segment.base > high_watermark.segment_base {
                    break;
                }
                if let Some(segment_max) = segment.max_timestamp(&self.files, interval)? {
                    max = Some(max.map_or(segment_max, |m| m.max(segment_max)));
                }
            }
            max
        };
        let Some(max) = max else { return Ok(None) };
        // No record is newer than the maximum, so the first at or after it carries it.
        if let Some(found) = self.offset_for_timestamp(max)? {
            return Ok(Some(found));
        }
        // The segments' maxima count a batch that is written but not yet visible, or
        // one below the log start: find the visible maximum batch by batch instead.
        self.scan_for_max_timestamp()
    }

    /// [`Self::max_timestamp_offset`] by walking every visible batch header.
    fn scan_for_max_timestamp(&self) -> Result<Option<(Offset, Timestamp)>> {
        let mut best: Option<(Arc<dyn StoreFile>, u64, spool_model::RecordBatchHeader)> = None;
        let mut segment_at = 0;
        loop {
            let (file, visible_end, log_start) = {
                let state = self.lock_for_use();
                let Some(segment) = state.segments.get(segment_at) else {
                    break;
                };
                if segment.base > state.high_watermark.segment_base {
                    break;
                }
                let file = segment.log_file(&self.files)?;
                (
                    file,
                    visible_end(segment, state.high_watermark),
                    state.log_start,
                )
            };
            let mut headers = HeaderCursor::new(file.as_ref());
            let mut position = 0;
            while let Some(header) = headers
                .header_at(position, visible_end)
                .map_err(self.read_error())?
            {
                let newer = best
                    .as_ref()
                    .is_none_or(|(.., b)| header.max_timestamp > b.max_timestamp);
                if newer && header.next_offset() > log_start {
                    best = Some((file.clone(), position, header));
                }
                position += header.total_len() as u64;
            }
            segment_at += 1;
        }
        let Some((file, position, header)) = best else {
            return Ok(None);
        };
        let len = header.total_len() as u64;
        let target = header.max_timestamp;
        let found = self.first_record_at_or_after(file.as_ref(), position, len, &header, target)?;
        let log_start = self.offsets().log_start;
        Ok(Some((found.0.max(log_start), found.1)))
    }

    /// The first offset whose record timestamp is at or after `target`, with that
    /// timestamp; `None` if every visible record is older. Exact to the record for
    /// uncompressed batches; for compressed ones the batch's first offset (its records
    /// are not inflated here), which a consumer seeking to it reads through.
    pub fn offset_for_timestamp(&self, target: Timestamp) -> Result<Option<(Offset, Timestamp)>> {
        let interval = self.config().index_interval_bytes;
        let mut segment_at = 0;
        loop {
            let cursor = {
                let mut state = self.lock_for_use();
                let high_watermark = state.high_watermark;
                // Skip segments whose newest record is older than the target.
                let mut chosen = None;
                while let Some(segment) = state.segments.get_mut(segment_at) {
                    if segment.base > high_watermark.segment_base {
                        break;
                    }
                    if segment
                        .max_timestamp(&self.files, interval)?
                        .is_some_and(|max| max >= target)
                    {
                        chosen = Some(segment_at);
                        break;
                    }
                    segment_at += 1;
                }
                let Some(at) = chosen else { return Ok(None) };
                let segment = state.segments.get_mut(at).ok_or_else(|| LogError::Failed {
                    path: self.dir.clone(),
                })?;
                let index = segment.index(&self.files, interval)?;
                let relative = index.scan_start_for_timestamp(target);
                let start = u64::from(index.position_for(relative));
                (
                    segment.log_file(&self.files)?,
                    start,
                    visible_end(segment, high_watermark),
                    state.log_start,
                )
            };
            let (file, start, visible_end, log_start) = cursor;
            let mut headers = HeaderCursor::new(file.as_ref());
            let mut position = start;
            while let Some(header) = headers
                .header_at(position, visible_end)
                .map_err(self.read_error())?
            {
                let len = header.total_len() as u64;
                if header.max_timestamp >= target && header.next_offset() > log_start {
                    let found = self.first_record_at_or_after(
                        file.as_ref(),
                        position,
                        len,
                        &header,
                        target,
                    )?;
                    let (offset, timestamp) = found;
                    return Ok(Some((offset.max(log_start), timestamp)));
                }
                position += len;
            }
            segment_at += 1;
        }
    }

    fn first_record_at_or_after(
        &self,
        file: &dyn StoreFile,
        position: u64,
        len: u64,
        header: &spool_model::RecordBatchHeader,
        target: Timestamp,
    ) -> Result<(Offset, Timestamp)> {
        let batch_level = (header.base_offset, header.max_timestamp);
        let log_append = header.timestamp_type() == spool_model::TimestampType::LogAppendTime;
        if header.compression() != CompressionCodec::None || log_append {
            return Ok(batch_level);
        }
        let mut bytes = vec![0; usize::try_from(len).unwrap_or(0)];
        file.read_exact_at(&mut bytes, position)
            .map_err(self.read_error())?;
        let stamps = spool_protocol::records::record_stamps(&bytes).unwrap_or_default();
        let exact = stamps.iter().find_map(|stamp| {
            let timestamp = Timestamp(
                header
                    .base_timestamp
                    .0
                    .saturating_add(stamp.timestamp_delta),
            );
            (timestamp >= target).then(|| (header.base_offset.plus(stamp.offset_delta), timestamp))
        });
        Ok(exact.unwrap_or(batch_level))
    }
}

fn check_bounds(state: &LogState, offset: Offset) -> Result<()> {
    if offset < state.log_start {
        return Err(LogError::OffsetBelowLogStart {
            requested: offset,
            log_start: state.log_start,
        });
    }
    if offset > state.high_watermark.offset {
        return Err(LogError::OffsetBeyondHighWatermark {
            requested: offset,
            high_watermark: state.high_watermark.offset,
        });
    }
    Ok(())
}

impl LogState {
    /// Bytes `start..end` of the segment at `base` from the tail cache, if it holds them.
    fn tail_slice(&self, base: Offset, start: u64, end: u64) -> Option<Vec<bytes::Bytes>> {
        if self.active().base != base {
            return None;
        }
        self.tail.slice(start, end)
    }
}

/// How far the visible (below the high watermark) bytes of `segment` reach.
fn visible_end(segment: &crate::segment::Segment, high_watermark: LogPosition) -> u64 {
    match segment.base.cmp(&high_watermark.segment_base) {
        std::cmp::Ordering::Less => segment.size,
        std::cmp::Ordering::Equal => high_watermark.position,
        std::cmp::Ordering::Greater => 0,
    }
}
