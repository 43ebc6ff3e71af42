//! The cleaner's rules over one batch in memory: which keys it maps and which of its
//! records stay. The local cleaner applies them to segment files; shared-storage mode
//! applies them to ranges read from object storage, so a compacted topic is cleaned
//! by the same rules in both modes.

use std::time::{Duration, Instant};

use spool_model::{Offset, RecordBatchHeader, Timestamp};
use spool_protocol::keyed::{self, BatchRecords, RecordsError};

pub use super::offset_map::OffsetMap;

/// The most a batch may inflate to in the cleaner.
pub(crate) const MAX_INFLATED_BATCH: usize = 256 << 20;

/// Why a batch could not be cleaned.
#[derive(Debug, thiserror::Error)]
pub enum UnreadableBatch {
    #[error(transparent)]
    Records(#[from] RecordsError),
    #[error("a record offset lies outside its batch")]
    OffsetOutsideBatch,
}

/// The rule of what stays, for one pass.
#[derive(Debug, Clone, Copy)]
pub struct Retain<'a> {
    /// Each key's latest offset in the dirty part mapped.
    pub map: &'a OffsetMap,
    /// Records at or beyond it stay (they were not mapped).
    pub mapped_end: Offset,
    /// Where the dirty part began: below it the log was clean at the start of the
    /// pass.
    pub first_dirty: Offset,
    /// A tombstone in a clean batch whose newest record is older than this goes.
    pub delete_horizon: Timestamp,
}

/// What becomes of one batch.
#[derive(Debug)]
pub enum Cleaned {
    /// Every record stays: the batch is copied as it is.
    Whole,
    /// Some go: the batch rebuilt with the rest (same base offset, `lastOffsetDelta`,
    /// timestamps, producer fields and codec), and how many went.
    Rebuilt(Vec<u8>, u64),
    /// Every record goes, this many.
    Gone(u64),
}

/// Records the offset of each keyed record of a data batch as its key's latest
/// (control batches have no keys to map). The caller checks
/// [`OffsetMap::has_room_for`] the batch's record count first.
pub fn map_keys(
    map: &mut OffsetMap,
    header: &RecordBatchHeader,
    batch: &[u8],
) -> Result<(), UnreadableBatch> {
    if header.is_control() {
        return Ok(());
    }
    let records = BatchRecords::read(batch, MAX_INFLATED_BATCH)?;
    for record in records.records()? {
        let offset = record_offset(header, record.offset_delta)
            .ok_or(UnreadableBatch::OffsetOutsideBatch)?;
        if let Some(key) = record.key {
            map.put(key, offset);
        }
    }
    Ok(())
}

/// What `retain` makes of one batch: a record stays when it is at or beyond the
/// mapped end, or the latest of its key, unless it is a tombstone whose batch was
/// clean already and is older than the delete horizon; records without a key go.
pub fn clean_batch(
    header: &RecordBatchHeader,
    batch: &[u8],
    retain: &Retain<'_>,
) -> Result<Cleaned, UnreadableBatch> {
    if header.is_control() || header.base_offset >= retain.mapped_end {
        return Ok(Cleaned::Whole);
    }
    let records = BatchRecords::read(batch, MAX_INFLATED_BATCH)?;
    let all = records.records()?;
    if all
        .iter()
        .any(|record| record_offset(header, record.offset_delta).is_none())
    {
        return Err(UnreadableBatch::OffsetOutsideBatch);
    }
    let was_clean = header.next_offset() <= retain.first_dirty;
    let tombstones_expired = was_clean && header.max_timestamp < retain.delete_horizon;
    let kept: Vec<_> = all
        .iter()
        .copied()
        .filter(|record| {
            let offset = header.base_offset.0.saturating_add(record.offset_delta);
            let Some(key) = record.key else {
                return false;
            };
            let latest = retain.map.latest(key).is_none_or(|latest| offset >= latest);
            latest && !(record.is_tombstone() && tombstones_expired)
        })
        .collect();
    let removed = (all.len() - kept.len()) as u64;
    if removed == 0 {
        return Ok(Cleaned::Whole);
    }
    if kept.is_empty() {
        return Ok(Cleaned::Gone(removed));
    }
    Ok(Cleaned::Rebuilt(
        keyed::rebuild_batch(batch, &kept)?,
        removed,
    ))
}

/// A record's offset, if its delta lies within its batch.
fn record_offset(header: &RecordBatchHeader, delta: i64) -> Option<i64> {
    (0..=i64::from(header.last_offset_delta))
        .contains(&delta)
        .then(|| header.base_offset.0.saturating_add(delta))
}

/// Holds a cleaner to `log.cleaner.io.max.bytes.per.second`: each spending of bytes
/// read or written says how long to pause to keep to the rate.
#[derive(Debug)]
pub struct Throttle {
    rate: Option<u64>,
    started: Instant,
    bytes: u64,
}

impl Throttle {
    /// `None` (or 0): no limit.
    #[must_use]
    pub fn new(rate: Option<u64>) -> Throttle {
        Throttle {
            rate,
            started: Instant::now(),
            bytes: 0,
        }
    }

    /// Notes `bytes` spent; the pause that keeps to the rate, if one is due.
    pub fn spend(&mut self, bytes: u64) -> Option<Duration> {
        let rate = self.rate.filter(|r| *r > 0)?;
        self.bytes += bytes;
        let due = Duration::from_secs_f64(self.bytes as f64 / rate as f64);
        due.checked_sub(self.started.elapsed())
            .filter(|pause| !pause.is_zero())
    }

    /// [`Throttle::spend`], pausing this thread (the local cleaner's own).
    pub(crate) fn sleep(&mut self, bytes: u64) {
        if let Some(pause) = self.spend(bytes) {
            std::thread::sleep(pause);
        }
    }
}
