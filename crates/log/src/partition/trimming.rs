//! Removing old data: retention by time and size, and DeleteRecords.

use spool_model::{Offset, Timestamp};

use super::{LogState, PartitionLog};
use crate::error::{LogError, Result};
use crate::segment::Segment;

impl PartitionLog {
    /// Deletes closed segments past `retention.ms` (by their newest record) or beyond
    /// `retention.bytes` (oldest first). Only segments wholly below the high watermark
    /// are candidates, so the active segment is never deleted. Returns how many went.
    pub fn enforce_retention(&self, now: Timestamp) -> Result<usize> {
        let config = self.config();
        let interval = config.index_interval_bytes;
        let mut state = self.lock();
        // Only segments wholly below the high watermark may go: the active one never,
        // and no record a consumer has not been able to see yet.
        // Nor past the durable offset, so that the checkpointed log start never runs
        // ahead of what a crash keeps (it can, under the interval flush policy).
        // Nor past the last stable offset: an open transaction's records stay until
        // it is decided.
        let limit = state
            .high_watermark
            .offset
            .min(state.durable.offset)
            .min(state.stable_offset());
        let deletable = state
            .segments
            .windows(2)
            .take_while(|pair| pair.get(1).is_some_and(|next| next.base <= limit))
            .count();
        let mut expired = 0;
        // A compacted topic without `delete` in its policy keeps its segments.
        let retention_ms = config.retention_ms.filter(|_| config.cleanup.delete);
        let retention_bytes = config.retention_bytes.filter(|_| config.cleanup.delete);
        if let Some(retention_ms) = retention_ms {
            let cutoff = Timestamp(
                now.0
                    .saturating_sub(i64::try_from(retention_ms).unwrap_or(i64::MAX)),
            );
            while expired < deletable {
                let Some(segment) = state.segments.get_mut(expired) else {
                    break;
                };
                match segment.max_timestamp(&self.files, interval)? {
                    Some(max) if max < cutoff => expired += 1,
                    None if segment.size == 0 => expired += 1,
                    _ => break,
                }
            }
        }
        if let Some(limit) = retention_bytes {
            let mut total: u64 = state.segments.iter().map(|s| s.size).sum();
            total -= state
                .segments
                .iter()
                .take(expired)
                .map(|s| s.size)
                .sum::<u64>();
            while let Some(segment) = state.segments.get(expired) {
                if expired >= deletable || total - segment.size < limit {
                    break;
                }
                total -= segment.size;
                expired += 1;
            }
        }
        if expired == 0 {
            return Ok(0);
        }
        let new_start = state
            .segments
            .get(expired)
            .map_or(state.log_start, |s| s.base);
        // The start moves first: if a delete fails half-way, nothing below it is read.
        state.log_start = state.log_start.max(new_start);
        let log_start = state.log_start;
        state.producers.txns.trim(log_start);
        self.delete_front_segments(&mut state, expired)?;
        state.assert_invariants();
        drop(state);
        tracing::info!(dir = %self.dir.display(), segments = expired, log_start = %new_start, "retention deleted segments");
        self.write_checkpoint()?;
        Ok(expired)
    }

    /// Moves the log start offset forward to `offset` (Kafka's DeleteRecords): records
    /// below it are no longer readable, whole segments below it are deleted, and the
    /// new start is checkpointed before this returns. `offset` may not pass the high
    /// watermark, nor the last stable offset (an open transaction's records stay until it
    /// is decided). Returns the new log start offset.
    pub fn advance_log_start(&self, offset: Offset) -> Result<Offset> {
        // The records up to the new start are made durable first, so that the
        // checkpointed start never runs ahead of what a crash keeps.
        if offset <= self.lock().high_watermark.offset {
            self.sync_to(offset)?;
        }
        let mut state = self.lock();
        if offset > state.high_watermark.offset {
            return Err(LogError::OffsetBeyondHighWatermark {
                requested: offset,
                high_watermark: state.high_watermark.offset,
            });
        }
        let last_stable = state.stable_offset();
        if offset > last_stable {
            return Err(LogError::OffsetBeyondStableOffset {
                requested: offset,
                last_stable,
            });
        }
        if offset <= state.log_start {
            return Ok(state.log_start);
        }
        state.log_start = offset;
        state.producers.txns.trim(offset);
        // Every segment whose successor starts at or below the new start is unreadable.
        let doomed = state
            .segments
            .windows(2)
            .take_while(|pair| pair.get(1).is_some_and(|next| next.base <= offset))
            .count();
        self.delete_front_segments(&mut state, doomed)?;
        state.assert_invariants();
        drop(state);
        self.write_checkpoint()?;
        Ok(offset)
    }

    pub(super) fn delete_front_segments(&self, state: &mut LogState, count: usize) -> Result<()> {
        let doomed: Vec<Segment> = state.segments.drain(..count).collect();
        for segment in doomed {
            for path in [
                &segment.paths.log,
                &segment.paths.index,
                &segment.paths.time_index,
            ] {
                self.files.forget(path);
                match self.files.store().remove_file(path) {
                    Ok(()) => {}
                    Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                    Err(source) => {
                        return Err(LogError::Io {
                            operation: "delete",
                            path: path.clone(),
                            source,
                        });
                    }
                }
            }
        }
        state.dir_dirty = true;
        Ok(())
    }
}
