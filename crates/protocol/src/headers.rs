//! A header added by the broker to the records of a produced batch that lack it: a
//! lane producer's records get their `spool.lane` (`docs/lanes.md`). Per-record work,
//! paid only by the producers it is asked for; every other batch passes as sent.
#![deny(clippy::indexing_slicing)]

use spool_model::RecordBatchHeader;

use crate::batch;
use crate::compression;
use crate::keyed::{BatchRecords, RecordsError};
use crate::records::{put_bytes, put_varint, read_varint};

/// `original` with the header `name: value` added to every record that has no
/// `name` header, compressed again with its codec (at its default level) and its CRC
/// set; offsets, timestamps and producer fields stay. `None` when every record has
/// one already (the batch is kept as it is). Inflates up to `limit` bytes.
pub fn with_header_added(
    original: &[u8],
    name: &[u8],
    value: &[u8],
    limit: usize,
) -> Result<Option<Vec<u8>>, RecordsError> {
    let header = RecordBatchHeader::parse(original).ok_or(RecordsError::Header)?;
    let inflated = BatchRecords::read(original, limit)?;
    let records = inflated.records()?;
    let mut section = Vec::with_capacity(records.iter().map(|r| r.raw.len() + 16).sum());
    let mut added = false;
    for (index, record) in records.iter().enumerate() {
        let headers = record.headers().ok_or(RecordsError::Malformed(index))?;
        if headers.iter().any(|(key, _)| *key == name) {
            section.extend_from_slice(record.raw);
            continue;
        }
        added = true;
        let malformed = || RecordsError::Malformed(index);
        let mut body = record.raw;
        read_varint(&mut body).ok_or_else(malformed)?;
        let stored = record.headers_section();
        let before = body
            .get(..body.len().saturating_sub(stored.len()))
            .ok_or_else(malformed)?;
        let mut rest = stored;
        let count = read_varint(&mut rest).ok_or_else(malformed)?;
        let mut grown = Vec::with_capacity(body.len() + name.len() + value.len() + 8);
        grown.extend_from_slice(before);
        put_varint(&mut grown, count + 1);
        grown.extend_from_slice(rest);
        put_bytes(&mut grown, Some(name));
        put_bytes(&mut grown, Some(value));
        put_varint(
            &mut section,
            i64::try_from(grown.len()).map_err(|_| malformed())?,
        );
        section.extend_from_slice(&grown);
    }
    if !added {
        return Ok(None);
    }
    let packed = compression::compress(header.compression(), None, &section)?;
    batch::with_records(original, header.attributes, header.record_count, &packed)
        .map(Some)
        .ok_or(RecordsError::Header)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::{BatchRules, validate_batch};
    use crate::recompress::recompress;
    use spool_model::CompressionCodec;
    use spool_testkit::{BatchBuilder, TestRecord};

    #[test]
    fn records_without_the_header_get_it_and_the_batch_stays_valid() {
        let mut laned = TestRecord::value(b"already".to_vec());
        laned.headers = vec![("spool.lane".to_owned(), Some(b"boe".to_vec()))];
        let mut other = TestRecord::value(b"other".to_vec());
        other.headers = vec![("trace".to_owned(), Some(b"t1".to_vec()))];
        let plain = BatchBuilder::new()
            .timestamp(1_000)
            .base_offset(40)
            .record(TestRecord::value(b"bare".to_vec()))
            .record(laned)
            .record(other)
            .build();
        let gzip = recompress(&plain, CompressionCodec::Gzip, None, 1 << 20)
            .unwrap()
            .unwrap();
        for original in [&plain, &gzip] {
            let stamped = with_header_added(original, b"spool.lane", b"ppe", 1 << 20)
                .unwrap()
                .unwrap();
            let header = validate_batch(&stamped, BatchRules::Produce).unwrap();
            let before = RecordBatchHeader::parse(original).unwrap();
            assert_eq!(header.base_offset, before.base_offset);
            assert_eq!(header.compression(), before.compression());
            let read = BatchRecords::read(&stamped, 1 << 20).unwrap();
            let records = read.records().unwrap();
            let lanes: Vec<_> = records
                .iter()
                .map(|r| {
                    r.headers()
                        .unwrap()
                        .iter()
                        .find(|(k, _)| *k == b"spool.lane")
                        .and_then(|(_, v)| *v)
                        .map(<[u8]>::to_vec)
                })
                .collect();
            assert_eq!(
                lanes,
                vec![
                    Some(b"ppe".to_vec()),
                    Some(b"boe".to_vec()),
                    Some(b"ppe".to_vec())
                ]
            );
            assert_eq!(
                records[2].headers().unwrap()[0],
                (&b"trace"[..], Some(&b"t1"[..]))
            );
            assert_eq!(records[2].value, Some(&b"other"[..]));
            assert_eq!(records[2].offset_delta, 2);
            assert!(
                with_header_added(&stamped, b"spool.lane", b"ppe", 1 << 20)
                    .unwrap()
                    .is_none(),
                "nothing to add: the batch stays as it is"
            );
        }
    }
}
