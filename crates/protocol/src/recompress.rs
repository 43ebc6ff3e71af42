//! Recompressing a whole record batch to another codec, for topics whose
//! `compression.type` names one. The records section is inflated and deflated again;
//! the records themselves, the header's offsets, timestamps and producer fields are
//! kept, so idempotent producers' sequences still match. Once per batch.

use spool_model::{
    BATCH_HEADER_LEN, CompressionCodec, RecordBatchHeader, batch_attributes, batch_field,
};

use crate::compression::{self, CodecError};

/// The batch recompressed to `codec`, or `None` when it already uses it (or is a
/// control batch, which is never compressed). `limit` bounds the inflated records.
pub fn recompress(
    batch: &[u8],
    codec: CompressionCodec,
    level: Option<i32>,
    limit: usize,
) -> Result<Option<Vec<u8>>, CodecError> {
    let Some(header) = RecordBatchHeader::parse(batch) else {
        return Ok(None);
    };
    if header.compression() == codec || header.is_control() {
        return Ok(None);
    }
    let records = batch
        .get(BATCH_HEADER_LEN..header.total_len())
        .unwrap_or_default();
    let raw = compression::decompress(header.compression(), records, limit)?;
    let packed = compression::compress(codec, level, &raw)?;
    let mut out = Vec::with_capacity(BATCH_HEADER_LEN + packed.len());
    out.extend_from_slice(batch.get(..BATCH_HEADER_LEN).unwrap_or_default());
    out.extend_from_slice(&packed);
    let length = i32::try_from(out.len() - batch_field::LOG_OVERHEAD)
        .map_err(|_| CodecError::TooLarge(i32::MAX as usize))?;
    let attributes = (header.attributes & !batch_attributes::COMPRESSION_MASK) | codec_id(codec);
    write_at(&mut out, batch_field::BATCH_LENGTH, &length.to_be_bytes());
    write_at(&mut out, batch_field::ATTRIBUTES, &attributes.to_be_bytes());
    let crc = crc32c::crc32c(out.get(batch_field::ATTRIBUTES..).unwrap_or_default());
    write_at(&mut out, batch_field::CRC, &crc.to_be_bytes());
    Ok(Some(out))
}

/// The codec's id in a batch's attributes.
fn codec_id(codec: CompressionCodec) -> i16 {
    match codec {
        CompressionCodec::None => 0,
        CompressionCodec::Gzip => 1,
        CompressionCodec::Snappy => 2,
        CompressionCodec::Lz4 => 3,
        CompressionCodec::Zstd => 4,
        CompressionCodec::Unknown(id) => i16::from(id),
    }
}

fn write_at(batch: &mut [u8], at: usize, bytes: &[u8]) {
    if let Some(field) = batch.get_mut(at..at + bytes.len()) {
        field.copy_from_slice(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::{BatchRules, validate_batch};
    use spool_testkit::BatchBuilder;

    #[test]
    fn a_batch_changes_codec_and_keeps_its_records_and_fields() {
        let plain = BatchBuilder::new()
            .timestamp(1234)
            .producer(7, 2, 40)
            .values(50, 300)
            .build();
        let zstd = recompress(&plain, CompressionCodec::Zstd, Some(5), 1 << 20)
            .unwrap()
            .unwrap();
        let header = validate_batch(&zstd, BatchRules::Produce).unwrap();
        assert_eq!(header.compression(), CompressionCodec::Zstd);
        assert!(zstd.len() < plain.len());
        let original = RecordBatchHeader::parse(&plain).unwrap();
        assert_eq!(
            (
                header.producer_id,
                header.producer_epoch,
                header.base_sequence
            ),
            (
                original.producer_id,
                original.producer_epoch,
                original.base_sequence
            )
        );
        assert_eq!(header.record_count, 50);
        assert_eq!(header.max_timestamp, original.max_timestamp);
        // And back: byte for byte the producer's batch.
        let back = recompress(&zstd, CompressionCodec::None, None, 1 << 20)
            .unwrap()
            .unwrap();
        assert_eq!(back, plain);
        assert!(
            recompress(&plain, CompressionCodec::None, None, 1 << 20)
                .unwrap()
                .is_none()
        );
        assert!(matches!(
            recompress(&zstd, CompressionCodec::Gzip, None, 100),
            Err(CodecError::TooLarge(100))
        ));
    }
}
