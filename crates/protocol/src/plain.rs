//! Batches the broker writes for clients to read as ordinary records (a share group's
//! dead letters): plain (producer −1, no sequence), uncompressed, every record stamped
//! `now`, base offset 0 (the log assigns it).
#![deny(clippy::indexing_slicing)]

use spool_model::Timestamp;

use crate::batch::BrokerBatch;
use crate::records::{put_bytes, put_varint};

/// A record to write: key, value and headers (a `None` value is null).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlainRecord {
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

/// One batch of `records`, in order.
#[must_use]
pub fn plain_batch(records: &[PlainRecord], now: Timestamp) -> Vec<u8> {
    let mut body = Vec::new();
    for (delta, record) in records.iter().enumerate() {
        let mut encoded = vec![0_u8]; // attributes
        put_varint(&mut encoded, 0); // timestamp delta
        put_varint(&mut encoded, i64::try_from(delta).unwrap_or(0));
        put_bytes(&mut encoded, record.key.as_deref());
        put_bytes(&mut encoded, record.value.as_deref());
        put_varint(
            &mut encoded,
            i64::try_from(record.headers.len()).unwrap_or(0),
        );
        for (name, value) in &record.headers {
            put_bytes(&mut encoded, Some(name));
            put_bytes(&mut encoded, value.as_deref());
        }
        put_varint(&mut body, i64::try_from(encoded.len()).unwrap_or(0));
        body.extend_from_slice(&encoded);
    }
    let count = i32::try_from(records.len()).unwrap_or(i32::MAX);
    BrokerBatch {
        base_offset: 0,
        last_offset_delta: (count - 1).max(0),
        timestamp: now,
        producer_id: -1,
        producer_epoch: -1,
    }
    .build(0, count, &body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::{BatchRules, validate_batch};
    use crate::keyed::BatchRecords;

    #[test]
    fn a_plain_batch_is_valid_and_reads_back() {
        let records = vec![
            PlainRecord {
                key: Some(b"k".to_vec()),
                value: None,
                headers: vec![(b"h".to_vec(), Some(b"v".to_vec())), (b"n".to_vec(), None)],
            },
            PlainRecord {
                key: None,
                value: Some(b"value".to_vec()),
                headers: Vec::new(),
            },
        ];
        let batch = plain_batch(&records, Timestamp(1_000));
        let header = validate_batch(&batch, BatchRules::Stored);
        assert!(header.is_ok(), "{header:?}");
        let read = BatchRecords::read(&batch, 1 << 20).unwrap_or_else(|e| unreachable!("{e}"));
        let read = read.records().unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(read.len(), 2);
        assert_eq!(read.first().map(|r| r.key), Some(Some(&b"k"[..])));
        assert_eq!(
            read.first().and_then(|r| r.headers()).map(|h| h.len()),
            Some(2)
        );
        assert_eq!(read.get(1).map(|r| r.value), Some(Some(&b"value"[..])));
    }
}
