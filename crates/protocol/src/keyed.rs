//! The records of a batch with their keys, for compacted topics: the produce path
//! checks that every record has a key, and the log cleaner keeps the latest record of
//! each key. Compressed batches are inflated (bounded); this is per-record work that
//! only compacted topics pay, as in Kafka.
#![deny(clippy::indexing_slicing)]

use spool_model::{BATCH_HEADER_LEN, RecordBatchHeader};

use crate::batch;
use crate::compression::{self, CodecError};
use crate::records::{read_bytes, read_varint};

/// One record of a batch, borrowed from its (inflated) records section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyedRecord<'a> {
    /// The record's offset is the batch's base offset plus this.
    pub offset_delta: i64,
    /// The record's timestamp is the batch's base timestamp plus this.
    pub timestamp_delta: i64,
    pub key: Option<&'a [u8]>,
    /// `None`: a null value, a tombstone.
    pub value: Option<&'a [u8]>,
    /// The whole record as stored, its length prefix included.
    pub raw: &'a [u8],
    /// The headers section: a count, then each header's key and value.
    headers: &'a [u8],
}

/// A record header: a key and a value (`None`: null).
pub type RecordHeader<'a> = (&'a [u8], Option<&'a [u8]>);

/// Why a batch's records could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordsError {
    #[error(transparent)]
    Codec(#[from] CodecError),
    #[error("record {0} of the batch is malformed")]
    Malformed(usize),
    #[error("the batch header is malformed")]
    Header,
}

/// A batch's records section, inflated.
#[derive(Debug)]
pub struct BatchRecords {
    pub header: RecordBatchHeader,
    bytes: Vec<u8>,
}

impl KeyedRecord<'_> {
    /// A null value: the record deletes its key.
    #[must_use]
    pub fn is_tombstone(&self) -> bool {
        self.value.is_none()
    }

    /// The headers section as stored: a count, then each header.
    pub(crate) fn headers_section(&self) -> &[u8] {
        self.headers
    }

    /// The record's headers, in order (a key may repeat); `None` if malformed.
    #[must_use]
    pub fn headers(&self) -> Option<Vec<RecordHeader<'_>>> {
        let mut rest = self.headers;
        let count = usize::try_from(read_varint(&mut rest)?).ok()?;
        // Each header takes at least 2 bytes: the count cannot outrun the bytes.
        let mut headers = Vec::with_capacity(count.min(rest.len() / 2));
        for _ in 0..count {
            let key = read_bytes(&mut rest)??;
            let value = read_bytes(&mut rest)?;
            headers.push((key, value));
        }
        Some(headers)
    }
}

impl BatchRecords {
    /// Reads (inflating, up to `limit` bytes) the records of `batch`.
    pub fn read(batch: &[u8], limit: usize) -> Result<BatchRecords, RecordsError> {
        let header = RecordBatchHeader::parse(batch).ok_or(RecordsError::Header)?;
        let section = batch
            .get(BATCH_HEADER_LEN..header.total_len())
            .ok_or(RecordsError::Header)?;
        let bytes = compression::decompress(header.compression(), section, limit)?;
        Ok(BatchRecords { header, bytes })
    }

    /// The records, in order; fails on the first malformed one.
    pub fn records(&self) -> Result<Vec<KeyedRecord<'_>>, RecordsError> {
        records_in(&self.bytes, self.header.record_count)
    }
}

/// The records of an uncompressed batch, read in place (no copy of its records
/// section, as [`BatchRecords::read`] makes); `None` for a compressed batch, which
/// [`BatchRecords::read`] inflates.
pub fn uncompressed_records(batch: &[u8]) -> Option<Result<Vec<KeyedRecord<'_>>, RecordsError>> {
    let header = RecordBatchHeader::parse(batch)?;
    if header.compression() != spool_model::CompressionCodec::None {
        return None;
    }
    Some(
        batch
            .get(BATCH_HEADER_LEN..header.total_len())
            .ok_or(RecordsError::Header)
            .and_then(|section| records_in(section, header.record_count)),
    )
}

/// The `claimed` records of an inflated records section, in order.
fn records_in(section: &[u8], claimed: i32) -> Result<Vec<KeyedRecord<'_>>, RecordsError> {
    let mut rest = section;
    let claimed = usize::try_from(claimed).unwrap_or(0);
    // Each record takes at least 7 bytes: the count cannot outrun the bytes.
    let mut out = Vec::with_capacity(claimed.min(rest.len() / 7));
    for index in 0..claimed {
        let record = parse_record(&mut rest).ok_or(RecordsError::Malformed(index))?;
        out.push(record);
    }
    Ok(out)
}

fn parse_record<'a>(rest: &mut &'a [u8]) -> Option<KeyedRecord<'a>> {
    let whole = *rest;
    let length = usize::try_from(read_varint(rest)?).ok()?;
    let prefix = whole.len() - rest.len();
    let mut body = rest.get(..length)?;
    let raw = whole.get(..prefix + length)?;
    *rest = rest.get(length..)?;
    body = body.get(1..)?; // attributes
    let timestamp_delta = read_varint(&mut body)?;
    let offset_delta = read_varint(&mut body)?;
    let key = read_bytes(&mut body)?;
    let value = read_bytes(&mut body)?;
    Some(KeyedRecord {
        offset_delta,
        timestamp_delta,
        key,
        value,
        raw,
        headers: body,
    })
}

/// The positions in the batch of records without a key (KIP-467's batch indexes).
pub fn keyless_records(batch: &[u8], limit: usize) -> Result<Vec<usize>, RecordsError> {
    let records = BatchRecords::read(batch, limit)?;
    Ok(records
        .records()?
        .iter()
        .enumerate()
        .filter(|(_, record)| record.key.is_none())
        .map(|(index, _)| index)
        .collect())
}

/// A batch of `original`'s header (offsets, timestamps, producer fields, codec and
/// `lastOffsetDelta` kept, so offsets and producer sequences do not change) holding
/// only `kept` records, compressed again with the batch's codec.
pub fn rebuild_batch(original: &[u8], kept: &[KeyedRecord<'_>]) -> Result<Vec<u8>, RecordsError> {
    rebuild_at_level(original, kept, None)
}

/// [`rebuild_batch`], compressing at `level` (`None`: the codec's default).
fn rebuild_at_level(
    original: &[u8],
    kept: &[KeyedRecord<'_>],
    level: Option<i32>,
) -> Result<Vec<u8>, RecordsError> {
    let header = RecordBatchHeader::parse(original).ok_or(RecordsError::Header)?;
    let mut section = Vec::with_capacity(kept.iter().map(|r| r.raw.len()).sum());
    for record in kept {
        section.extend_from_slice(record.raw);
    }
    let packed = compression::compress(header.compression(), level, &section)?;
    let count = i32::try_from(kept.len()).map_err(|_| RecordsError::Header)?;
    batch::with_records(original, header.attributes, count, &packed).ok_or(RecordsError::Header)
}

/// A batch of `original`'s header holding only `kept` (at least one, in order), its
/// `lastOffsetDelta` moved to the last of them so that the batch ends on a record; the
/// offsets, timestamps, producer fields and codec of the records stay. For views,
/// which rewrite batches on every read: compressed at the codec's fastest level
/// (gzip 1, lz4 0, zstd 1; Kafka's lz4 default, 9, is the slow high-compression mode).
pub fn filtered_batch(original: &[u8], kept: &[KeyedRecord<'_>]) -> Result<Vec<u8>, RecordsError> {
    let last = kept.last().ok_or(RecordsError::Header)?;
    let delta = i32::try_from(last.offset_delta).map_err(|_| RecordsError::Header)?;
    let header = RecordBatchHeader::parse(original).ok_or(RecordsError::Header)?;
    let fastest = match header.compression() {
        spool_model::CompressionCodec::Lz4 => Some(0),
        spool_model::CompressionCodec::Gzip | spool_model::CompressionCodec::Zstd => Some(1),
        _ => None,
    };
    let mut batch = rebuild_at_level(original, kept, fastest)?;
    batch::patch_last_offset_delta(&mut batch, delta);
    Ok(batch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::{BatchRules, validate_batch};
    use crate::recompress::recompress;
    use spool_model::{CompressionCodec, batch_field};
    use spool_testkit::{BatchBuilder, TestRecord};

    fn batch() -> Vec<u8> {
        let mut builder = BatchBuilder::new().timestamp(500).base_offset(100);
        for i in 0..6u8 {
            let mut record = TestRecord::value(vec![i; 10]);
            record.key = (i != 2).then(|| vec![b'k', i % 3]);
            if i == 4 {
                record.value = None;
            }
            builder = builder.record(record);
        }
        builder.build()
    }

    #[test]
    fn records_come_with_keys_and_tombstones_compressed_or_not() {
        let plain = batch();
        let zstd = recompress(&plain, CompressionCodec::Zstd, None, 1 << 20)
            .unwrap()
            .unwrap();
        for bytes in [&plain, &zstd] {
            let read = BatchRecords::read(bytes, 1 << 20).unwrap();
            let records = read.records().unwrap();
            assert_eq!(records.len(), 6);
            assert_eq!(records[1].key, Some(&b"k\x01"[..]));
            assert_eq!(records[2].key, None);
            assert!(records[4].is_tombstone() && !records[3].is_tombstone());
            assert_eq!(records[5].offset_delta, 5);
            assert_eq!(keyless_records(bytes, 1 << 20).unwrap(), vec![2]);
        }
    }

    #[test]
    fn records_come_with_timestamps_and_headers_in_order() {
        let mut record = TestRecord::value(b"v".to_vec());
        record.headers = vec![
            ("trace".to_owned(), Some(b"a".to_vec())),
            ("trace".to_owned(), None),
        ];
        let plain = BatchBuilder::new()
            .timestamp(1_000)
            .record(TestRecord::value(b"first".to_vec()))
            .record(record)
            .build();
        let read = BatchRecords::read(&plain, 1 << 20).unwrap();
        let records = read.records().unwrap();
        assert_eq!(records[0].headers().unwrap(), vec![]);
        assert_eq!(
            records[1].headers().unwrap(),
            vec![(&b"trace"[..], Some(&b"a"[..])), (&b"trace"[..], None)]
        );
        assert!(records.iter().all(|r| r.timestamp_delta >= 0));
    }

    #[test]
    fn a_rebuilt_batch_keeps_offsets_and_is_valid() {
        for codec in [
            CompressionCodec::None,
            CompressionCodec::Gzip,
            CompressionCodec::Lz4,
        ] {
            let original = recompress(&batch(), codec, None, 1 << 20)
                .unwrap()
                .unwrap_or_else(batch);
            let read = BatchRecords::read(&original, 1 << 20).unwrap();
            let records = read.records().unwrap();
            let kept = [records[1], records[5]];
            let rebuilt = rebuild_batch(&original, &kept).unwrap();
            let header = validate_batch(&rebuilt, BatchRules::Stored).unwrap();
            assert_eq!(header.base_offset.0, 100);
            assert_eq!(
                header.last_offset_delta, 5,
                "the batch still ends where it did"
            );
            assert_eq!(header.record_count, 2);
            assert_eq!(header.compression(), codec);
            let again = BatchRecords::read(&rebuilt, 1 << 20).unwrap();
            let deltas: Vec<i64> = again
                .records()
                .unwrap()
                .iter()
                .map(|r| r.offset_delta)
                .collect();
            assert_eq!(deltas, vec![1, 5]);
        }
    }

    #[test]
    fn a_filtered_batch_ends_on_its_last_kept_record_with_a_valid_crc() {
        for codec in [CompressionCodec::None, CompressionCodec::Zstd] {
            let original = recompress(&batch(), codec, None, 1 << 20)
                .unwrap()
                .unwrap_or_else(batch);
            let read = BatchRecords::read(&original, 1 << 20).unwrap();
            let records = read.records().unwrap();
            let filtered = filtered_batch(&original, &[records[0], records[3]]).unwrap();
            let header = validate_batch(&filtered, BatchRules::Stored).unwrap();
            assert_eq!((header.base_offset.0, header.last_offset_delta), (100, 3));
            assert_eq!(header.record_count, 2);
            assert!(filtered_batch(&original, &[]).is_err());
        }
    }

    #[test]
    fn malformed_records_are_an_error_not_a_panic() {
        // A record count beyond the records present.
        let mut broken = batch();
        broken[batch_field::RECORD_COUNT..batch_field::RECORD_COUNT + 4]
            .copy_from_slice(&1000i32.to_be_bytes());
        let read = BatchRecords::read(&broken, 1 << 20).unwrap();
        assert!(matches!(read.records(), Err(RecordsError::Malformed(6))));
        // A record whose length runs past the section.
        let mut cut = batch();
        cut[BATCH_HEADER_LEN] = 0x7e;
        let read = BatchRecords::read(&cut, 1 << 20).unwrap();
        assert!(matches!(read.records(), Err(RecordsError::Malformed(_))));
        assert!(BatchRecords::read(&[0u8; 10], 100).is_err());
    }
}
