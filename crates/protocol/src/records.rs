//! Reading the records inside an uncompressed batch, for the few places that need a
//! record's own offset and timestamp (lookup by timestamp). Never on the produce path.
#![deny(clippy::indexing_slicing)]

use spool_model::{BATCH_HEADER_LEN, CompressionCodec, RecordBatchHeader};

/// A record's position inside its batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordStamp {
    pub offset_delta: i64,
    pub timestamp_delta: i64,
}

/// The offset and timestamp deltas of each record of an uncompressed batch, in order.
/// `None` for a compressed batch (its records are not readable without inflating it) or
/// when the record bytes are malformed.
#[must_use]
pub fn record_stamps(batch: &[u8]) -> Option<Vec<RecordStamp>> {
    let header = RecordBatchHeader::parse(batch)?;
    if header.compression() != CompressionCodec::None {
        return None;
    }
    let mut rest = batch.get(BATCH_HEADER_LEN..header.total_len())?;
    // Each record takes at least 7 bytes, so the count can't outrun the bytes present.
    let claimed = usize::try_from(header.record_count).ok()?;
    let mut stamps = Vec::with_capacity(claimed.min(rest.len() / 7));
    for _ in 0..claimed {
        let length = usize::try_from(read_varint(&mut rest)?).ok()?;
        let mut record = rest.get(..length)?;
        rest = rest.get(length..)?;
        record = record.get(1..)?; // attributes
        let timestamp_delta = read_varint(&mut record)?;
        let offset_delta = read_varint(&mut record)?;
        stamps.push(RecordStamp {
            offset_delta,
            timestamp_delta,
        });
    }
    Some(stamps)
}

/// Reads one zig-zag varint (at most 10 bytes), advancing `bytes`.
pub(crate) fn read_varint(bytes: &mut &[u8]) -> Option<i64> {
    let mut raw: u64 = 0;
    for (index, byte) in bytes.iter().enumerate().take(10) {
        raw |= u64::from(byte & 0x7f) << (7 * index);
        if byte & 0x80 == 0 {
            *bytes = bytes.get(index + 1..)?;
            let value = (raw >> 1).cast_signed() ^ -((raw & 1).cast_signed());
            return Some(value);
        }
    }
    None
}

/// Writes `value` as a zigzag varint (the record format's integers).
/// Writes a varint-length-prefixed byte string (-1 for null).
pub(crate) fn put_bytes(out: &mut Vec<u8>, bytes: Option<&[u8]>) {
    match bytes {
        None => put_varint(out, -1),
        Some(bytes) => {
            put_varint(out, i64::try_from(bytes.len()).unwrap_or(0));
            out.extend_from_slice(bytes);
        }
    }
}

pub(crate) fn put_varint(out: &mut Vec<u8>, value: i64) {
    let mut raw = ((value << 1) ^ (value >> 63)).cast_unsigned();
    loop {
        let byte = u8::try_from(raw & 0x7f).unwrap_or(0);
        raw >>= 7;
        if raw == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// A length-prefixed byte field: `None` (outer) when malformed, `Some(None)` for null.
#[allow(clippy::option_option)]
pub(crate) fn read_bytes<'a>(body: &mut &'a [u8]) -> Option<Option<&'a [u8]>> {
    let length = read_varint(body)?;
    if length < 0 {
        return Some(None);
    }
    let length = usize::try_from(length).ok()?;
    let bytes = body.get(..length)?;
    *body = body.get(length..)?;
    Some(Some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use spool_testkit::{BatchBuilder, TestRecord};

    #[test]
    fn reads_deltas_of_uncompressed_records() {
        let mut builder = BatchBuilder::new().timestamp(1000);
        for delta in [0, 5, 300, 70_000] {
            builder = builder.record(TestRecord {
                timestamp_delta: delta,
                ..TestRecord::value(b"v".to_vec())
            });
        }
        let stamps = record_stamps(&builder.build()).unwrap();
        let deltas: Vec<_> = stamps
            .iter()
            .map(|s| (s.offset_delta, s.timestamp_delta))
            .collect();
        assert_eq!(deltas, vec![(0, 0), (1, 5), (2, 300), (3, 70_000)]);
    }

    #[test]
    fn compressed_and_malformed_batches_give_none() {
        let compressed = BatchBuilder::new().values(3, 10).attributes(4).build();
        assert_eq!(record_stamps(&compressed), None);
        let mut broken = BatchBuilder::new().values(3, 10).build();
        let cut = broken.len() - 5;
        broken.truncate(cut);
        assert_eq!(record_stamps(&broken), None);
        assert_eq!(record_stamps(&[0xff; 80]), None);
    }
}
