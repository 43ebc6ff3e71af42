//! Recompressing a whole record batch to another codec, for topics whose
//! `compression.type` names one. The records section is inflated and deflated again;
//! the records themselves, the header's offsets, timestamps and producer fields are
//! kept, so idempotent producers' sequences still match. Once per batch.

use spool_model::{BATCH_HEADER_LEN, CompressionCodec, RecordBatchHeader, batch_attributes};

use crate::batch;
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
    let attributes = (header.attributes & !batch_attributes::COMPRESSION_MASK) | codec.id();
    batch::with_records(batch, attributes, header.record_count, &packed)
        .map(Some)
        .ok_or(CodecError::TooLarge(i32::MAX as usize))
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
