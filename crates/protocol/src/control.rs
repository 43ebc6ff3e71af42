//! Transaction markers: the control batches a broker writes into every partition of a
//! transaction when it commits or aborts. A marker batch holds one record whose key is
//! `version i16 (0) | type i16 (0 abort, 1 commit)` and whose value is
//! `version i16 (0) | coordinatorEpoch i32`; it is never compressed.
#![deny(clippy::indexing_slicing)]

use spool_model::{BATCH_HEADER_LEN, RecordBatchHeader, Timestamp, batch_attributes};

use crate::batch::BrokerBatch;
use crate::records::{put_varint, read_varint};

/// What a marker ends its transaction with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    Abort,
    Commit,
}

impl Marker {
    #[must_use]
    pub fn from_commit(commit: bool) -> Marker {
        if commit {
            Marker::Commit
        } else {
            Marker::Abort
        }
    }

    fn type_code(self) -> i16 {
        match self {
            Marker::Abort => 0,
            Marker::Commit => 1,
        }
    }
}

/// A marker batch of producer `producer_id` at `producer_epoch`, with `baseOffset` 0
/// (the log assigns it) and its CRC set.
#[must_use]
pub fn marker_batch(
    producer_id: i64,
    producer_epoch: i16,
    marker: Marker,
    coordinator_epoch: i32,
    now: Timestamp,
) -> Vec<u8> {
    let mut key = Vec::with_capacity(4);
    key.extend_from_slice(&0_i16.to_be_bytes());
    key.extend_from_slice(&marker.type_code().to_be_bytes());
    let mut value = Vec::with_capacity(6);
    value.extend_from_slice(&0_i16.to_be_bytes());
    value.extend_from_slice(&coordinator_epoch.to_be_bytes());
    // One record: attributes, timestamp delta 0, offset delta 0, key, value, no headers.
    let mut record = vec![0_u8, 0, 0];
    put_varint(&mut record, 4);
    record.extend_from_slice(&key);
    put_varint(&mut record, 6);
    record.extend_from_slice(&value);
    put_varint(&mut record, 0);
    let mut records = Vec::with_capacity(record.len() + 1);
    put_varint(&mut records, i64::try_from(record.len()).unwrap_or(0));
    records.extend_from_slice(&record);

    let attributes = batch_attributes::TRANSACTIONAL | batch_attributes::CONTROL;
    BrokerBatch {
        base_offset: 0,
        last_offset_delta: 0,
        timestamp: now,
        producer_id,
        producer_epoch,
    }
    .build(attributes, 1, &records)
}

/// The marker a control batch holds; `None` for any other batch, or a control record
/// of another type or malformed.
#[must_use]
pub fn read_marker(batch: &[u8]) -> Option<Marker> {
    let header = RecordBatchHeader::parse(batch)?;
    if !header.is_control() || header.record_count < 1 {
        return None;
    }
    let mut rest = batch.get(BATCH_HEADER_LEN..header.total_len())?;
    let _length = read_varint(&mut rest)?;
    rest = rest.get(1..)?; // attributes
    let _timestamp_delta = read_varint(&mut rest)?;
    let _offset_delta = read_varint(&mut rest)?;
    if read_varint(&mut rest)? < 4 {
        return None;
    }
    let key = rest.get(..4)?;
    match i16::from_be_bytes([*key.get(2)?, *key.get(3)?]) {
        0 => Some(Marker::Abort),
        1 => Some(Marker::Commit),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::{BatchRules, validate_batch};

    #[test]
    fn a_marker_is_a_valid_stored_batch_that_reads_back() {
        for marker in [Marker::Commit, Marker::Abort] {
            let batch = marker_batch(42, 3, marker, 7, Timestamp(1_000));
            let header = validate_batch(&batch, BatchRules::Stored).expect("valid");
            assert!(header.is_control() && header.is_transactional());
            assert_eq!((header.producer_id.0, header.producer_epoch.0), (42, 3));
            assert_eq!(header.record_count, 1);
            assert_eq!(read_marker(&batch), Some(marker));
            assert!(
                validate_batch(&batch, BatchRules::Produce).is_err(),
                "producers may not send one"
            );
        }
    }

    #[test]
    fn other_batches_are_no_markers() {
        let plain = spool_testkit::BatchBuilder::new().values(2, 5).build();
        assert_eq!(read_marker(&plain), None);
        let marker = marker_batch(1, 0, Marker::Commit, 0, Timestamp(0));
        for cut in 0..marker.len() {
            assert_eq!(read_marker(&marker[..cut]), None, "cut at {cut}");
        }
    }
}
