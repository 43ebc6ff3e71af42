//! Validation and in-place patching of Kafka record batches (magic 2).
//!
//! Validation is per batch, never per record: it checks the framing, the CRC-32C once
//! over the batch, and the header fields, so compressed batches pass through untouched.
//! Every check works on the bytes present and never panics, whatever the input.
#![deny(clippy::indexing_slicing)]

use spool_model::{
    BATCH_HEADER_LEN, CompressionCodec, Offset, RecordBatchHeader, Timestamp, batch_attributes,
    batch_field,
};

/// The only record-batch format Spool accepts or stores.
pub const MAGIC_V2: i8 = 2;

/// Why a record batch was refused. Each variant names one failed check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    #[error("batch header needs {BATCH_HEADER_LEN} bytes, only {present} present")]
    TruncatedHeader { present: usize },
    #[error("batch length field {0} is smaller than the fixed header")]
    LengthTooSmall(i32),
    #[error("batch declares {declared} bytes but only {present} are present")]
    TruncatedBatch { declared: usize, present: usize },
    #[error("batch declares {declared} bytes but {present} were given for it")]
    TrailingBytes { declared: usize, present: usize },
    #[error("record batch magic {0} is not supported; only magic 2 is")]
    UnsupportedMagic(i8),
    #[error("batch CRC-32C is {stored:#010x} but the bytes give {computed:#010x}")]
    CrcMismatch { stored: u32, computed: u32 },
    #[error("batch holds {record_count} records but its lastOffsetDelta is {last_offset_delta}")]
    RecordCountMismatch {
        record_count: i32,
        last_offset_delta: i32,
    },
    #[error("batch names compression codec {0}, which does not exist")]
    UnknownCompression(u8),
    #[error("batch timestamps are invalid: base {base}, max {max}")]
    InvalidTimestamp { base: i64, max: i64 },
    #[error(
        "batch producer fields are inconsistent: id {producer_id}, epoch {producer_epoch}, \
         sequence {base_sequence}"
    )]
    InvalidProducerFields {
        producer_id: i64,
        producer_epoch: i16,
        base_sequence: i32,
    },
    #[error("producers may not send control batches")]
    ControlBatchFromProducer,
}

/// Which rules a batch must satisfy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchRules {
    /// A batch just sent by a producer: one record per offset slot, no control batches.
    Produce,
    /// A batch already in a log (recovery, reads): compaction may have removed records,
    /// and the broker writes control batches itself.
    Stored,
}

/// Checks one whole batch: `bytes` must hold exactly one batch, no more, no less.
pub fn validate_batch(bytes: &[u8], rules: BatchRules) -> Result<RecordBatchHeader, BatchError> {
    let header = validate_frame(bytes)?;
    if header.total_len() != bytes.len() {
        return Err(BatchError::TrailingBytes {
            declared: header.total_len(),
            present: bytes.len(),
        });
    }
    validate_crc(bytes, &header)?;
    validate_fields(&header, rules)?;
    Ok(header)
}

/// Checks what can be checked without the batch body: header present, length field
/// sane and covered by the bytes present, magic 2. Returns the header; the batch is
/// the first `header.total_len()` bytes of `bytes`.
pub fn validate_frame(bytes: &[u8]) -> Result<RecordBatchHeader, BatchError> {
    let header = RecordBatchHeader::parse(bytes).ok_or(BatchError::TruncatedHeader {
        present: bytes.len(),
    })?;
    let min_length = BATCH_HEADER_LEN - batch_field::LOG_OVERHEAD;
    if usize::try_from(header.batch_length).map_or(true, |len| len < min_length) {
        return Err(BatchError::LengthTooSmall(header.batch_length));
    }
    if header.total_len() > bytes.len() {
        return Err(BatchError::TruncatedBatch {
            declared: header.total_len(),
            present: bytes.len(),
        });
    }
    if header.magic != MAGIC_V2 {
        return Err(BatchError::UnsupportedMagic(header.magic));
    }
    Ok(header)
}

/// Checks the stored CRC-32C against the bytes from `attributes` to the batch end.
pub fn validate_crc(batch: &[u8], header: &RecordBatchHeader) -> Result<(), BatchError> {
    let covered = batch
        .get(batch_field::ATTRIBUTES..header.total_len())
        .ok_or(BatchError::TruncatedBatch {
            declared: header.total_len(),
            present: batch.len(),
        })?;
    let computed = crc32c::crc32c(covered);
    if computed != header.crc {
        return Err(BatchError::CrcMismatch {
            stored: header.crc,
            computed,
        });
    }
    Ok(())
}

/// Checks the header fields of a batch whose frame is known to be sound: codec,
/// record count against `lastOffsetDelta`, timestamps, producer fields.
pub fn validate_fields(header: &RecordBatchHeader, rules: BatchRules) -> Result<(), BatchError> {
    if let CompressionCodec::Unknown(codec) = header.compression() {
        return Err(BatchError::UnknownCompression(codec));
    }
    let count_ok = match rules {
        BatchRules::Produce => {
            header.record_count > 0
                && i64::from(header.record_count) == i64::from(header.last_offset_delta) + 1
        }
        BatchRules::Stored => {
            header.record_count >= 0
                && header.last_offset_delta >= 0
                && i64::from(header.record_count) <= i64::from(header.last_offset_delta) + 1
        }
    };
    if !count_ok {
        return Err(BatchError::RecordCountMismatch {
            record_count: header.record_count,
            last_offset_delta: header.last_offset_delta,
        });
    }
    let (base, max) = (header.base_timestamp, header.max_timestamp);
    if base < Timestamp::NONE || max < Timestamp::NONE {
        return Err(BatchError::InvalidTimestamp {
            base: base.0,
            max: max.0,
        });
    }
    if rules == BatchRules::Produce && header.is_control() {
        return Err(BatchError::ControlBatchFromProducer);
    }
    validate_producer_fields(header)
}

/// A plain producer sends producer id `-1`; its epoch and sequence mean nothing (most
/// clients send `-1`, KafkaJS sends `0`, and Kafka ignores them, so Spool does too). An
/// idempotent producer sends all three non-negative. Transactional batches need a
/// producer id.
fn validate_producer_fields(header: &RecordBatchHeader) -> Result<(), BatchError> {
    let (id, epoch, sequence) = (
        header.producer_id.0,
        header.producer_epoch.0,
        header.base_sequence.0,
    );
    let plain = id == -1;
    let idempotent = id >= 0 && epoch >= 0 && sequence >= 0;
    // The broker's own control batches carry a producer id but no sequence.
    let control = header.is_control() && id >= 0 && epoch >= 0;
    let consistent = if header.is_transactional() {
        idempotent || control
    } else {
        plain || idempotent || control
    };
    if consistent {
        Ok(())
    } else {
        Err(BatchError::InvalidProducerFields {
            producer_id: id,
            producer_epoch: epoch,
            base_sequence: sequence,
        })
    }
}

/// Walks a buffer holding several batches back to back (a produce request's `records`
/// or a stretch of a segment), yielding each batch's header and bytes after checking
/// its frame. Stops at the first framing error, which it yields.
#[derive(Debug)]
pub struct BatchFrames<'a> {
    rest: &'a [u8],
    failed: bool,
}

impl<'a> BatchFrames<'a> {
    #[must_use]
    pub fn new(bytes: &'a [u8]) -> BatchFrames<'a> {
        BatchFrames {
            rest: bytes,
            failed: false,
        }
    }
}

impl<'a> Iterator for BatchFrames<'a> {
    type Item = Result<(RecordBatchHeader, &'a [u8]), BatchError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() || self.failed {
            return None;
        }
        match validate_frame(self.rest) {
            Ok(header) => {
                let (batch, rest) = self.rest.split_at(header.total_len());
                self.rest = rest;
                Some(Ok((header, batch)))
            }
            Err(error) => {
                self.failed = true;
                Some(Err(error))
            }
        }
    }
}

/// Writes the base offset the log assigned into the batch header. The CRC does not
/// cover this field, so nothing else changes.
pub fn patch_base_offset(batch: &mut [u8], base_offset: Offset) {
    if let Some(field) = batch.get_mut(batch_field::BASE_OFFSET..batch_field::BASE_OFFSET + 8) {
        field.copy_from_slice(&base_offset.0.to_be_bytes());
    }
}

/// Stamps the leader epoch the batch is written under (`partitionLeaderEpoch`, outside
/// the CRC's range: nothing else changes).
pub fn patch_partition_leader_epoch(batch: &mut [u8], epoch: i32) {
    let at = batch_field::PARTITION_LEADER_EPOCH;
    if let Some(field) = batch.get_mut(at..at + 4) {
        field.copy_from_slice(&epoch.to_be_bytes());
    }
}

/// Marks the batch as LogAppendTime with `now` as its max timestamp and recomputes the
/// CRC, since both fields lie inside the CRC's range. Once per batch, not per record.
pub fn patch_log_append_time(batch: &mut [u8], now: Timestamp) {
    let Some(header) = RecordBatchHeader::parse(batch) else {
        return;
    };
    let attributes = header.attributes | batch_attributes::TIMESTAMP_TYPE_LOG_APPEND;
    write_at(batch, batch_field::ATTRIBUTES, &attributes.to_be_bytes());
    write_at(batch, batch_field::MAX_TIMESTAMP, &now.0.to_be_bytes());
    if let Some(covered) = batch.get(batch_field::ATTRIBUTES..header.total_len()) {
        let crc = crc32c::crc32c(covered);
        write_at(batch, batch_field::CRC, &crc.to_be_bytes());
    }
}

/// Sets the batch's `lastOffsetDelta` and recomputes the CRC, which covers it.
pub fn patch_last_offset_delta(batch: &mut [u8], delta: i32) {
    let Some(header) = RecordBatchHeader::parse(batch) else {
        return;
    };
    write_at(batch, batch_field::LAST_OFFSET_DELTA, &delta.to_be_bytes());
    if let Some(covered) = batch.get(batch_field::ATTRIBUTES..header.total_len()) {
        let crc = crc32c::crc32c(covered);
        write_at(batch, batch_field::CRC, &crc.to_be_bytes());
    }
}

/// A batch with `original`'s header and `records` as its records section, the length,
/// attributes, record count and CRC set to match; offsets, timestamps and producer
/// fields stay. Once per batch (recompression, the log cleaner), never per record.
/// `None` if `original` has no whole header or the batch would be too long.
#[must_use]
pub fn with_records(
    original: &[u8],
    attributes: i16,
    record_count: i32,
    records: &[u8],
) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(BATCH_HEADER_LEN + records.len());
    out.extend_from_slice(original.get(..BATCH_HEADER_LEN)?);
    out.extend_from_slice(records);
    let length = i32::try_from(out.len() - batch_field::LOG_OVERHEAD).ok()?;
    write_at(&mut out, batch_field::BATCH_LENGTH, &length.to_be_bytes());
    write_at(&mut out, batch_field::ATTRIBUTES, &attributes.to_be_bytes());
    write_at(
        &mut out,
        batch_field::RECORD_COUNT,
        &record_count.to_be_bytes(),
    );
    let crc = crc32c::crc32c(out.get(batch_field::ATTRIBUTES..)?);
    write_at(&mut out, batch_field::CRC, &crc.to_be_bytes());
    Some(out)
}

/// The header fields of a batch the broker writes itself (a transaction marker,
/// Spool's internal batches): no leader epoch yet, both timestamps `timestamp`, no
/// sequence.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BrokerBatch {
    pub(crate) base_offset: i64,
    pub(crate) last_offset_delta: i32,
    pub(crate) timestamp: spool_model::Timestamp,
    pub(crate) producer_id: i64,
    pub(crate) producer_epoch: i16,
}

impl BrokerBatch {
    /// The batch of `record_count` records (`records`, encoded and uncompressed) with
    /// `attributes`, its CRC set.
    pub(crate) fn build(self, attributes: i16, record_count: i32, records: &[u8]) -> Vec<u8> {
        let mut header = vec![0_u8; BATCH_HEADER_LEN];
        write_at(
            &mut header,
            batch_field::BASE_OFFSET,
            &self.base_offset.to_be_bytes(),
        );
        write_at(
            &mut header,
            batch_field::PARTITION_LEADER_EPOCH,
            &(-1_i32).to_be_bytes(),
        );
        write_at(&mut header, batch_field::MAGIC, &[2]);
        write_at(
            &mut header,
            batch_field::LAST_OFFSET_DELTA,
            &self.last_offset_delta.to_be_bytes(),
        );
        write_at(
            &mut header,
            batch_field::BASE_TIMESTAMP,
            &self.timestamp.0.to_be_bytes(),
        );
        write_at(
            &mut header,
            batch_field::MAX_TIMESTAMP,
            &self.timestamp.0.to_be_bytes(),
        );
        write_at(
            &mut header,
            batch_field::PRODUCER_ID,
            &self.producer_id.to_be_bytes(),
        );
        write_at(
            &mut header,
            batch_field::PRODUCER_EPOCH,
            &self.producer_epoch.to_be_bytes(),
        );
        write_at(
            &mut header,
            batch_field::BASE_SEQUENCE,
            &(-1_i32).to_be_bytes(),
        );
        with_records(&header, attributes, record_count, records).unwrap_or_default()
    }
}

/// Writes `bytes` into `batch` at `at` (nothing when they would not fit).
pub(crate) fn write_at(batch: &mut [u8], at: usize, bytes: &[u8]) {
    if let Some(field) = batch.get_mut(at..at + bytes.len()) {
        field.copy_from_slice(bytes);
    }
}

#[cfg(test)]
mod tests;
