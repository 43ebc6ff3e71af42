//! Many producers' small batches for one partition made one batch, compressed once:
//! what Databus (`spool databus`) sends upstream. Each record keeps its key, value,
//! headers and timestamp; offsets are renumbered in order, so the records of input
//! `i` are those at [`Merged::parts`]`[i]` of the merged batch. Only batches of no
//! producer (id -1) are merged: idempotent and transactional ones carry sequences
//! that must reach the broker as sent. The merged batch may be idempotent itself:
//! the merger's own producer id, epoch and sequence ([`Producer`]).
#![deny(clippy::indexing_slicing)]

use spool_model::{BATCH_HEADER_LEN, CompressionCodec, RecordBatchHeader, batch_field};

use crate::batch::{self, write_at};
use crate::compression;
use crate::keyed::{BatchRecords, RecordsError};
use crate::records::{put_bytes, put_varint};

/// The producer fields a merged batch carries: the merger's own idempotent producer,
/// so that the broker drops a batch sent twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Producer {
    pub id: i64,
    pub epoch: i16,
    pub base_sequence: i32,
}

/// The merged batch and where each input's records are in it.
#[derive(Debug)]
pub struct Merged {
    pub batch: Vec<u8>,
    /// Per input batch: the offset delta of its first record and its record count.
    pub parts: Vec<(i32, i32)>,
}

/// One batch of `batches`' records in their order, compressed with `codec`;
/// inflating each input up to `limit` bytes. Fails on an input that cannot be read.
pub fn merge_batches(
    batches: &[&[u8]],
    codec: CompressionCodec,
    limit: usize,
    producer: Option<Producer>,
) -> Result<Merged, RecordsError> {
    let mut inflated = Vec::with_capacity(batches.len());
    for batch in batches {
        inflated.push(BatchRecords::read(batch, limit)?);
    }
    let base_timestamp = inflated
        .iter()
        .map(|b| b.header.base_timestamp.0)
        .min()
        .unwrap_or(0);
    let mut max_timestamp = base_timestamp;
    let mut section = Vec::with_capacity(batches.iter().map(|b| b.len()).sum());
    let mut parts = Vec::with_capacity(batches.len());
    let mut next: i64 = 0;
    for batch in &inflated {
        let records = batch.records()?;
        let first = i32::try_from(next).map_err(|_| RecordsError::Header)?;
        for (index, record) in records.iter().enumerate() {
            let timestamp = batch.header.base_timestamp.0 + record.timestamp_delta;
            max_timestamp = max_timestamp.max(timestamp);
            let mut body = Vec::with_capacity(record.raw.len() + 8);
            body.push(0); // attributes: none are defined for records
            put_varint(&mut body, timestamp - base_timestamp);
            put_varint(&mut body, next);
            put_bytes(&mut body, record.key);
            put_bytes(&mut body, record.value);
            if record.headers_section().is_empty() {
                return Err(RecordsError::Malformed(index));
            }
            body.extend_from_slice(record.headers_section());
            put_varint(
                &mut section,
                i64::try_from(body.len()).map_err(|_| RecordsError::Header)?,
            );
            section.extend_from_slice(&body);
            next += 1;
        }
        let count = i32::try_from(records.len()).map_err(|_| RecordsError::Header)?;
        parts.push((first, count));
    }
    let count = i32::try_from(next).map_err(|_| RecordsError::Header)?;
    if count == 0 {
        return Err(RecordsError::Header);
    }
    let packed = compression::compress(codec, None, &section)?;
    let mut header = vec![0_u8; BATCH_HEADER_LEN];
    write_at(
        &mut header,
        batch_field::PARTITION_LEADER_EPOCH,
        &(-1_i32).to_be_bytes(),
    );
    write_at(&mut header, batch_field::MAGIC, &[2]);
    write_at(
        &mut header,
        batch_field::LAST_OFFSET_DELTA,
        &(count - 1).to_be_bytes(),
    );
    write_at(
        &mut header,
        batch_field::BASE_TIMESTAMP,
        &base_timestamp.to_be_bytes(),
    );
    write_at(
        &mut header,
        batch_field::MAX_TIMESTAMP,
        &max_timestamp.to_be_bytes(),
    );
    let producer = producer.unwrap_or(Producer {
        id: -1,
        epoch: -1,
        base_sequence: -1,
    });
    write_at(
        &mut header,
        batch_field::PRODUCER_ID,
        &producer.id.to_be_bytes(),
    );
    write_at(
        &mut header,
        batch_field::PRODUCER_EPOCH,
        &producer.epoch.to_be_bytes(),
    );
    write_at(
        &mut header,
        batch_field::BASE_SEQUENCE,
        &producer.base_sequence.to_be_bytes(),
    );
    let batch =
        batch::with_records(&header, codec.id(), count, &packed).ok_or(RecordsError::Header)?;
    Ok(Merged { batch, parts })
}

/// Whether `batch` may be merged: a data batch of no producer.
#[must_use]
pub fn is_mergeable(header: &RecordBatchHeader) -> bool {
    !header.is_control() && header.producer_id.0 < 0 && !header.is_transactional()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::{BatchRules, validate_batch};
    use crate::recompress::recompress;
    use spool_testkit::{BatchBuilder, TestRecord};

    #[test]
    fn records_keep_their_order_fields_and_times_in_one_batch() {
        let mut with_header = TestRecord::value(b"b1".to_vec());
        with_header.key = Some(b"k".to_vec());
        with_header.headers = vec![("h".to_owned(), Some(b"v".to_vec()))];
        with_header.timestamp_delta = 7;
        let first = BatchBuilder::new()
            .timestamp(2_000)
            .record(TestRecord::value(b"a1".to_vec()))
            .build();
        let second = BatchBuilder::new()
            .timestamp(1_000)
            .record(TestRecord::value(b"b0".to_vec()))
            .record(with_header)
            .build();
        let second = recompress(&second, CompressionCodec::Gzip, None, 1 << 20)
            .unwrap()
            .unwrap();
        let producer = Producer {
            id: 7,
            epoch: 1,
            base_sequence: 40,
        };
        let merged = merge_batches(
            &[&first, &second],
            CompressionCodec::Lz4,
            1 << 20,
            Some(producer),
        )
        .unwrap();
        assert_eq!(merged.parts, vec![(0, 1), (1, 2)]);
        let header = validate_batch(&merged.batch, BatchRules::Produce).unwrap();
        assert_eq!(header.compression(), CompressionCodec::Lz4);
        assert_eq!(header.record_count, 3);
        assert_eq!(header.base_timestamp.0, 1_000);
        assert_eq!(header.max_timestamp.0, 2_000);
        assert_eq!(
            (
                header.producer_id.0,
                header.producer_epoch.0,
                header.base_sequence.0
            ),
            (7, 1, 40)
        );
        let read = BatchRecords::read(&merged.batch, 1 << 20).unwrap();
        let records = read.records().unwrap();
        let values: Vec<_> = records.iter().map(|r| r.value.unwrap()).collect();
        assert_eq!(values, vec![&b"a1"[..], b"b0", b"b1"]);
        let times: Vec<_> = records.iter().map(|r| 1_000 + r.timestamp_delta).collect();
        assert_eq!(times, vec![2_000, 1_000, 1_007]);
        assert_eq!(records[2].key, Some(&b"k"[..]));
        assert_eq!(
            records[2].headers().unwrap(),
            vec![(&b"h"[..], Some(&b"v"[..]))]
        );
        let deltas: Vec<_> = records.iter().map(|r| r.offset_delta).collect();
        assert_eq!(deltas, vec![0, 1, 2]);
    }
}
