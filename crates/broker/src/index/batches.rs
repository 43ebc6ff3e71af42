//! The committed records of read batches, as the index and its searches see them:
//! control batches and aborted transactions' batches are passed over (their offsets
//! still covered), each other record comes with its offset and timestamp.

use spool_index::RecordView;
use spool_log::{AbortedTxn, is_aborted_batch};
use spool_model::RecordBatchHeader;
use spool_protocol::batch::BatchFrames;
use spool_protocol::keyed::{BatchRecords, KeyedRecord, uncompressed_records};

/// The most one batch may inflate to (as the write path allows).
const MAX_INFLATED_BATCH: usize = 256 << 20;

/// A committed record of a batch.
#[derive(Debug)]
pub(crate) struct Committed<'a> {
    pub(crate) header: &'a RecordBatchHeader,
    pub(crate) offset: i64,
    pub(crate) timestamp: i64,
    pub(crate) record: &'a KeyedRecord<'a>,
    pub(crate) view: RecordView<'a>,
}

/// How far a walk went: the offset after the last batch looked at, its bytes,
/// whether the visit stopped it before a batch, and whether it ended at a batch at
/// or past the limit (else it ran out of bytes).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Walked {
    pub(crate) next: i64,
    pub(crate) bytes: u64,
    pub(crate) stopped: bool,
    pub(crate) beyond: bool,
}

/// What a walk does per batch.
pub(crate) trait Visit {
    /// Whether the walk goes on with this batch (false: it stops before it).
    fn wants(&mut self, _header: &RecordBatchHeader) -> bool {
        true
    }
    /// A batch was looked at: its records (if any were committed) came before.
    fn batch_done(&mut self, next: i64, bytes: u64);
    /// A committed record; an error stops the walk (the batch is not done).
    fn record(&mut self, record: &Committed<'_>) -> Result<(), String>;
}

/// Walks the batches of `bytes` (whole batches read from `from`) whose base offset
/// is below `limit`, calling `visit` for each committed record at or after `from`
/// and after each batch. `headers`: whether records' headers are read. A batch that
/// does not frame or decode is an error naming its offset.
pub(crate) fn walk(
    bytes: &[u8],
    aborted: &[AbortedTxn],
    from: i64,
    limit: i64,
    headers: bool,
    visit: &mut dyn Visit,
) -> Result<Walked, String> {
    let mut walked = Walked {
        next: from,
        ..Walked::default()
    };
    for frame in BatchFrames::new(bytes) {
        // Reads hold whole batches: a batch that does not frame is damage.
        let (header, batch) = frame.map_err(|error| {
            format!(
                "a batch after offset {} does not frame: {error}",
                walked.next
            )
        })?;
        if header.base_offset.0 >= limit {
            walked.beyond = true;
            break;
        }
        if !visit.wants(&header) {
            walked.stopped = true;
            break;
        }
        let size = batch.len() as u64;
        if !header.is_control() && !is_aborted_batch(aborted, &header) {
            let unreadable = |error: &dyn std::fmt::Display| {
                format!(
                    "the batch at offset {} does not decode: {error}",
                    header.base_offset.0
                )
            };
            // An uncompressed batch is read in place; a compressed one inflated.
            let inflated;
            let records = match uncompressed_records(batch) {
                Some(records) => records,
                None => {
                    inflated = BatchRecords::read(batch, MAX_INFLATED_BATCH)
                        .map_err(|e| unreadable(&e))?;
                    inflated.records()
                }
            }
            .map_err(|e| unreadable(&e))?;
            for record in &records {
                let offset = header.base_offset.0 + record.offset_delta;
                if offset < from || offset >= limit {
                    continue;
                }
                let timestamp = header.record_timestamp(record.timestamp_delta);
                let record_headers = if headers {
                    record.headers().unwrap_or_default()
                } else {
                    Vec::new()
                };
                visit.record(&Committed {
                    header: &header,
                    offset,
                    timestamp,
                    record,
                    view: RecordView {
                        key: record.key,
                        value: record.value,
                        headers: &record_headers,
                    },
                })?;
            }
        }
        walked.next = walked.next.max(header.next_offset().0.min(limit));
        walked.bytes += size;
        visit.batch_done(walked.next, size);
    }
    Ok(walked)
}
